"""The synthetic screen generator: deterministic, exact boxes, one named target per instruction."""

from __future__ import annotations

import numpy as np
import pytest

from domains.gui.synthetic import PLATFORMS, generate_screen, single_button_screen, synthetic_samples, unique_targets


@pytest.mark.parametrize("platform", PLATFORMS)
def test_screens_are_deterministic_and_boxes_lie_inside(platform):
    a, b = generate_screen(7, platform), generate_screen(7, platform)
    assert a.elements == b.elements and a.image.tobytes() == b.image.tobytes()
    width, height = a.image.size
    assert len(a.elements) >= 8
    for el in a.elements:
        x1, y1, x2, y2 = el.bbox
        assert 0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height, el
        assert el.ui_type in ("text", "icon") and el.instruction
    roles = {el.role for el in a.elements}
    assert {"icon", "button"} & roles


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_element_box_holds_drawn_pixels(platform):
    screen = generate_screen(3, platform)
    pixels = np.asarray(screen.image).astype(int)
    background = np.asarray(screen.image.getpixel((screen.image.width // 2, screen.image.height - 5)))
    for el in screen.elements:
        x1, y1, x2, y2 = el.bbox
        patch = pixels[y1:y2, x1:x2]
        assert (np.abs(patch - patch[0, 0]).sum(-1) > 0).any() or (np.abs(patch - background).sum(-1) > 0).any(), el


def test_seeds_and_platforms_vary_the_screens():
    sizes = {generate_screen(s).image.size for s in range(12)}
    themes = {generate_screen(s).theme for s in range(12)}
    assert len(sizes) >= 3 and len(themes) >= 3


def test_single_button_screen_box_is_the_button():
    screen = single_button_screen(5)
    [button] = screen.elements
    img = np.asarray(screen.image).astype(int)
    x1, y1, _, y2 = button.bbox
    inside = img[(y1 + y2) // 2, x1 + 1]
    assert screen.image.size == (112, 112)
    assert (inside != img[0, 0]).any() or (inside != img[-1, -1]).any()
    assert button.instruction == f"click the {button.label} button"


def test_samples_name_a_unique_target():
    for sample in synthetic_samples(6, seed=1):
        screen_labels = sample.prompt
        assert screen_labels and sample.target["image_size"][0] > 0
        x1, y1, x2, y2 = sample.target["bbox"]
        assert x2 > x1 and y2 > y1
        assert sample.meta["platform"] in PLATFORMS and sample.meta["element_type"] in ("text", "icon")
    screen = generate_screen(11)
    labels = [el.label.lower() for el in unique_targets(screen)]
    assert len(labels) == len(set(labels))


def test_samples_are_reproducible_per_index():
    first = list(synthetic_samples(3, seed=4, task="single"))
    again = list(synthetic_samples(5, seed=4, task="single"))[:3]
    assert [s.target for s in first] == [s.target for s in again]
    assert [s.images[0].tobytes() for s in first] == [s.images[0].tobytes() for s in again]


def test_bad_arguments():
    with pytest.raises(ValueError, match="platform"):
        generate_screen(0, "tv")
    with pytest.raises(ValueError, match="task"):
        list(synthetic_samples(1, task="maze"))
