"""Cheap image rewards: known values on constructed images, every input layout, unreadable input masked."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image

import rewards
from rewards.image_stats import as_rgb_array


def test_brightness_reads_every_layout_the_same() -> None:
    hwc = np.full((4, 5, 3), 0.25)
    hwc[0, 0] = [1.0, 1.0, 1.0]
    pil = Image.fromarray((hwc * 255).round().astype(np.uint8))
    reward = rewards.get("brightness")
    scores = [r.score for r in reward([hwc, torch.tensor(hwc).permute(2, 0, 1), pil], [None] * 3)]
    expected = (19 * 0.25 + 1.0) / 20
    assert scores[0] == pytest.approx(expected) and scores[1] == pytest.approx(expected)
    assert scores[2] == pytest.approx(expected, abs=1 / 255)


def test_colourfulness_is_zero_for_grey_and_matches_hasler_susstrunk_by_hand() -> None:
    grey = np.full((8, 8, 3), 0.5)
    half = np.zeros((2, 1, 3))
    half[0, 0], half[1, 0] = [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]  # one red pixel, one blue pixel
    reward = rewards.get("colourfulness")
    grey_score, two = (r.score for r in reward([grey, half], [None, None]))
    assert grey_score == pytest.approx(0.0)
    # rg = (255, 0), yb = (127.5, -255): std (127.5, 191.25), mean (127.5, -63.75)
    sigma, mu = np.hypot(127.5, 191.25), np.hypot(127.5, 63.75)
    assert two == pytest.approx(sigma + 0.3 * mu)


def test_jpeg_compressibility_prefers_flat_images_and_reports_kilobytes() -> None:
    rng = np.random.default_rng(0)
    flat, noisy = np.full((32, 32, 3), 0.5), rng.random((32, 32, 3))
    small, large = rewards.get("jpeg-compressibility")([flat, noisy], [None, None])
    assert small.score > large.score and small.score == -small.components["kb"]
    buffer = io.BytesIO()
    Image.fromarray((noisy * 255).round().astype(np.uint8)).save(buffer, format="JPEG", quality=95)
    assert large.components["kb"] == pytest.approx(buffer.tell() / 1000)
    assert rewards.get("jpeg-incompressibility")([noisy], [None])[0].score == pytest.approx(large.components["kb"])


def test_unreadable_image_scores_none_with_the_reason() -> None:
    result = rewards.get("brightness")([np.zeros((4, 4))], [None])[0]
    assert result.score is None and "RGB" in result.error
    with pytest.raises(ValueError, match="RGB"):
        as_rgb_array(np.zeros((2, 2, 4)))
