"""RLRF-style SVG reward: each term on hand-computed images, and failure below a blank canvas."""

import numpy as np
import pytest

from rewards.base import RewardSample
from rewards.rendering import close_optional_pools
from rewards.rlrf import FAILURE, RlrfSvgReward, length_reward, znorm_l2


@pytest.fixture(autouse=True, scope="module")
def _shared_pools(render_pool):
    """Default kinds go to the session's pool; the optional kinds' pools stop with this module."""
    yield
    close_optional_pools()


SVG = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" fill="white"/>'
       '<rect x="0" y="0" width="16" height="32" fill="black"/></svg>')


def test_znorm_l2_by_hand():
    half = np.zeros((4, 4)); half[:, :2] = 255  # z-scores are +1 / -1
    assert znorm_l2(half, half) == 0.0
    assert znorm_l2(half, 255 - half) == pytest.approx(2.0)  # ||(+-2)|| / sqrt(16) = 2
    flat = np.full((4, 4), 7.0)  # constant image: all-zero z-scores
    assert znorm_l2(flat, half) == pytest.approx(1.0)


@pytest.mark.parametrize(("pred", "ref", "expected"), [(10, 10, 0.75), (5, 10, 1.0), (0, 10, 1.0), (15, 10, 0.0),
                                                       (20, 10, -1.0)])
def test_length_reward_by_hand(pred, ref, expected):
    # 1 - (max(0, L - L_gt/2) / L_gt)^2: (10,10) -> 1 - 0.5^2; (15,10) -> 1 - 1; (20,10) -> 1 - 2.25, clipped to -1
    assert length_reward(pred, ref) == pytest.approx(expected)


def test_perfect_blank_and_failed_answers():
    from rewards.image_similarity import to_array
    from rewards.rendering import render

    image = render("svg-skia", SVG, size=(32, 32)).image
    sample = RewardSample(target={"image": image, "code": SVG})
    reward = RlrfSvgReward("svg-skia", encoder=None, size=(32, 32))
    assert reward.weights["perceptual"] == 0.0
    blank = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"></svg>'
    perfect, empty, failed, none = reward([SVG, blank, "<svg><unclosed", "no svg"], [sample] * 4)
    # identical render: image 1, edge 1, length 0.75 -> 0.4 + 0.2 + 0.1 * 0.75
    assert perfect.score == pytest.approx(0.675)
    # blank: z-scores all 0 -> L2 1 -> image 0.5; no edges -> edge 0.5; short -> length 1
    assert empty.components["image"] == pytest.approx(0.5) and empty.components["edge"] == pytest.approx(0.5)
    assert empty.score == pytest.approx(0.4 * 0.5 + 0.2 * 0.5 + 0.1)
    assert failed.score == none.score == FAILURE < empty.score
    assert np.array_equal(to_array(image)[:, :16], np.zeros((32, 16, 3), np.uint8))


def test_a_render_timeout_is_the_answers_failure():
    from PIL import Image

    sample = RewardSample(target={"image": Image.new("RGB", (32, 32), "white"), "code": SVG})
    busy = SVG.replace("</svg>", '<circle cx="16" cy="16" r="1e30" fill="red"/>' * 2000 + "</svg>")
    (failed,) = RlrfSvgReward("svg-skia", encoder=None, size=(32, 32), timeout=0.001)([busy], [sample])
    assert failed.score == FAILURE and failed.error.startswith("render failed: render exceeded")
