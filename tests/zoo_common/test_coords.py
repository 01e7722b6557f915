"""zoo_common.coords against qwen-vl-utils 0.0.14 (qwen_vl_utils/vision_process.py::smart_resize)."""

import random

import pytest
from qwen_vl_utils.vision_process import smart_resize as reference_smart_resize

from zoo_common.coords import from_original, resized_size_for, smart_resize, to_original


@pytest.mark.parametrize("factor", [28, 32])
@pytest.mark.parametrize("limits", [(None, None), (3136, 12845056), (56 * 56, 112 * 112), (256 * 28 * 28, 1280 * 28 * 28)])
def test_smart_resize_matches_qwen_vl_utils(factor, limits):
    rng = random.Random(factor)
    sizes = [(rng.randint(1, 4000), rng.randint(1, 4000)) for _ in range(1500)]
    sizes += [(1, 1), (27, 29), (28, 28), (1080, 2400), (2160, 3840), (10, 1999)]
    for h, w in sizes:
        if max(h, w) / min(h, w) > 200:
            with pytest.raises(ValueError, match="aspect ratio"):
                smart_resize(h, w, factor, *limits)
            continue
        assert smart_resize(h, w, factor, *limits) == reference_smart_resize(h, w, factor, *limits), (h, w)


def test_box_round_trips_through_each_frame():
    box = [100.0, 50.0, 300.0, 250.0]
    original = (1920, 1080)
    resized = resized_size_for(original, 28, 3136, 1280 * 28 * 28)
    assert resized != original  # downscaled: the frames really differ
    for frame in ("resized", "norm1000", "original"):
        there = from_original(box, frame, original, resized)
        assert to_original(there, frame, original, resized) == pytest.approx(box)


def test_norm1000_and_resized_values():
    assert to_original([500, 500], "norm1000", (640, 480)) == [320.0, 240.0]
    # 1920x1080 with max 1280 tokens of 28x28 -> 1316x728 (qwen-vl-utils), so x scales by 1920/1316
    w, h = resized_size_for((1920, 1080), 28, 3136, 1280 * 28 * 28)
    assert (w, h) == (1316, 728)
    assert to_original([w, h], "resized", (1920, 1080), (w, h)) == [1920.0, 1080.0]


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="resized_size"):
        to_original([1, 2], "resized", (10, 10))
    with pytest.raises(ValueError, match="unknown coordinate frame"):
        to_original([1, 2], "pixels", (10, 10))
    with pytest.raises(ValueError, match="pairs"):
        to_original([1, 2, 3], "original", (10, 10))


def test_norm1_frame_and_reward_side_names_agree():
    from rewards.grounding import to_pixels

    assert to_original([0.5, 0.25], "norm1", (640, 480)) == [320.0, 120.0]
    assert to_pixels([500, 250], "relative-1000", (640, 480)) == to_original([500, 250], "norm1000", (640, 480))
