"""Cheap image rewards for text-to-image RL: brightness, colourfulness, JPEG (in)compressibility.

They score generated images with no model, so a CPU smoke run or a learning benchmark has a
reward whose rise is visible within minutes. Predictions are images: PIL images, or float
arrays/tensors in [0, 1] shaped (3, H, W) or (H, W, 3) (what the diffusion engine decodes).
``samples`` are ignored (the prompt plays no part). An image that cannot be read scores ``None``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from rewards.base import RewardResult, check_lengths


def as_rgb_array(image: Any) -> np.ndarray:
    """(H, W, 3) float64 in [0, 1] from a PIL image or a (3, H, W) / (H, W, 3) array or tensor in [0, 1]."""
    if hasattr(image, "convert") and hasattr(image, "size"):  # PIL
        return np.asarray(image.convert("RGB"), dtype=np.float64) / 255.0
    if hasattr(image, "detach"):  # torch tensor
        image = image.detach().float().cpu().numpy()
    array = np.asarray(image, dtype=np.float64)
    if array.ndim == 3 and array.shape[0] == 3 and array.shape[-1] != 3:
        array = array.transpose(1, 2, 0)
    if array.ndim != 3 or array.shape[-1] != 3:
        raise ValueError(f"an image must be RGB, (3, H, W) or (H, W, 3); got shape {array.shape}")
    return np.clip(array, 0.0, 1.0)


class ImageReward:
    """Base: score each image on its own with :meth:`score_image`; unreadable images score ``None``."""

    name = "image-reward"

    def score_image(self, rgb: np.ndarray) -> RewardResult:
        raise NotImplementedError

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        results = []
        for image in predictions:
            try:
                rgb = as_rgb_array(image)
            except (TypeError, ValueError) as err:
                results.append(RewardResult(None, error=f"{self.name}: {err}"))
                continue
            results.append(self.score_image(rgb))
        return results

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Brightness(ImageReward):
    """Mean pixel value in [0, 1] (the feasibility study's CPU learning signal)."""

    name = "brightness"

    def score_image(self, rgb: np.ndarray) -> RewardResult:
        return RewardResult(float(rgb.mean()))


class Colourfulness(ImageReward):
    """Hasler and Süsstrunk's colourfulness M = sigma_rgyb + 0.3 mu_rgyb (SPIE 5007, 2003), pixels in [0, 255].

    ``rg = R - G``, ``yb = (R + G) / 2 - B``; sigma and mu are the root sums of squares of the two
    opponent channels' std and mean. A grey image scores 0; saturated colour scores around 100+.
    """

    name = "colourfulness"

    def score_image(self, rgb: np.ndarray) -> RewardResult:
        r, g, b = (rgb[..., i] * 255.0 for i in range(3))
        rg, yb = r - g, 0.5 * (r + g) - b
        sigma = float(np.hypot(rg.std(), yb.std()))
        mu = float(np.hypot(rg.mean(), yb.mean()))
        return RewardResult(sigma + 0.3 * mu, {"sigma_rgyb": sigma, "mu_rgyb": mu})


class JpegSize(ImageReward):
    """JPEG file size in kB at quality 95 (DDPO's compressibility task, Black et al. arXiv 2305.13301).

    ``sign=-1`` (``jpeg-compressibility``) rewards small files, ``sign=+1`` (``jpeg-incompressibility``) large ones.
    """

    def __init__(self, sign: int = -1, quality: int = 95) -> None:
        if sign not in (-1, 1):
            raise ValueError(f"sign must be -1 (compressibility) or +1 (incompressibility), got {sign}")
        self.sign, self.quality = sign, quality
        self.name = "jpeg-compressibility" if sign < 0 else "jpeg-incompressibility"

    def score_image(self, rgb: np.ndarray) -> RewardResult:
        from PIL import Image

        buffer = io.BytesIO()
        Image.fromarray((rgb * 255).round().astype(np.uint8)).save(buffer, format="JPEG", quality=self.quality)
        kilobytes = buffer.tell() / 1000
        return RewardResult(self.sign * kilobytes, {"kb": kilobytes})

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), self.sign, self.quality))

    def __repr__(self) -> str:
        return f"JpegSize(sign={self.sign}, quality={self.quality})"
