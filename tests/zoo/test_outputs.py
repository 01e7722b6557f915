"""What a pipeline's answer says about itself: ``zoo.outputs.Prediction``."""

from __future__ import annotations

import pytest

from zoo.outputs import Prediction


@pytest.mark.parametrize(
    ("fields", "warning"),
    [
        ({"bbox": [28.6, 52421.4, 335.7, 550.0]}, "box inverted or empty (600x600 image)"),  # the review's box
        ({"bbox": [10, 700, 50, 750]}, "box wholly outside the image (600x600 image)"),
        ({"bbox": [-5, 10, 50, 60]}, "box reaches outside the image (600x600 image)"),
        ({"point": [300, 601]}, "point outside the image (600x600 image)"),
        ({"objects": [{"bbox": [1, 1, 5, 5]}, {"bbox": [9, 9, 3, 3]}]},
         "object 1 box inverted or empty (600x600 image)"),
        ({"bbox": [10, 10, 50, 60], "point": [599, 0]}, None),
    ],
)
def test_a_box_or_point_that_points_nowhere_is_flagged_and_kept(fields, warning):
    """The parse stays the authors' (the model did answer that box); ``geometry_warning`` says why it points nowhere,
    in ``to_dict`` (``zoo run --json``, the demo's parsed fields)."""
    pred = Prediction(text="...", **fields)
    pred.check_geometry(600, 600)
    assert pred.geometry_warning == warning
    assert {k: pred.to_dict()[k] for k in fields} == fields
    assert pred.to_dict().get("geometry_warning") == warning
