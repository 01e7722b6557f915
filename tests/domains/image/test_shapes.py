"""``synthetic-shapes``: the pre-training pictures as a registered dataset (Adv-GRPO's CPU reference images)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from domains.image.shapes import load_shapes
from zoo.data import load_dataset
from zoo.engines.diffusion.synthetic import synthetic_images


def test_samples_are_the_generators_pictures_and_captions() -> None:
    samples = load_shapes(n=3, seed=4, size=24)
    images, captions = synthetic_images(3, torch.Generator().manual_seed(4), 24)
    assert [s.prompt for s in samples] == captions and [s.id for s in samples] == ["00000", "00001", "00002"]
    for sample, image in zip(samples, images, strict=True):
        (pil,) = sample.images
        assert pil.size == (24, 24) and pil.mode == "RGB"
        np.testing.assert_allclose(np.asarray(pil) / 255, image.permute(1, 2, 0).numpy(), atol=1 / 255)


def test_registered_and_seeded() -> None:
    a, b = list(load_dataset("synthetic-shapes", n=2, seed=1)), load_shapes(n=2, seed=1)
    assert [np.asarray(s.images[0]).tolist() for s in a] == [np.asarray(s.images[0]).tolist() for s in b]
    with pytest.raises(ValueError, match="size >= 21"):
        load_shapes(size=16)
