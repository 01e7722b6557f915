"""Coordinate frames of Qwen-VL models, and the conversions between them.

Three frames occur in practice (maintainer statements in QwenLM/Qwen3-VL issues #721 and #1741):

* ``resized``  - absolute pixels on the *smart-resized* image the vision tower saw (Qwen2.5-VL);
* ``norm1000`` - relative coordinates on a 0-1000 scale (Qwen2-VL and Qwen3-VL);
* ``original`` - absolute pixels on the image the user passed in;
* ``norm1``    - relative coordinates on a 0-1 scale (some detection heads and datasets).

The resized frame depends on the factor (28 for Qwen2.5-VL's 14-px patches merged 2x2, 32 for
Qwen3-VL) and on the ``min_pixels``/``max_pixels`` used, which is why pipelines carry them per
entry. :func:`smart_resize` reproduces ``qwen_vl_utils.vision_process.smart_resize`` exactly
(the test compares them over thousands of sizes); it is re-stated here so that rewards and
converters need neither torchvision nor qwen-vl-utils at import time. This is the one home of
coordinate conversion: pipelines (``zoo``) and rewards both use it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

Frame = Literal["resized", "norm1000", "norm1", "original"]

#: qwen-vl-utils' aspect-ratio limit; beyond it the processor refuses the image.
MAX_RATIO = 200


def smart_resize(
    height: int, width: int, factor: int = 28, min_pixels: int | None = None, max_pixels: int | None = None
) -> tuple[int, int]:
    """``(height, width)`` the Qwen processor resizes an image to.

    Both sides become multiples of ``factor``; the area is kept within ``[min_pixels, max_pixels]``
    (defaults: 4 and 16384 tokens of ``factor**2`` pixels, as qwen-vl-utils 0.0.14) and the
    aspect ratio as close as rounding allows.
    """
    max_pixels = 16384 * factor**2 if max_pixels is None else max_pixels
    min_pixels = 4 * factor**2 if min_pixels is None else min_pixels
    if max_pixels < min_pixels:
        raise ValueError(f"max_pixels ({max_pixels}) must be >= min_pixels ({min_pixels})")
    if min(height, width) <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(
            f"image aspect ratio {max(height, width) / min(height, width):.0f} exceeds {MAX_RATIO}; "
            "crop or pad the image first"
        )
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def _scales(frame: Frame, original_size: Sequence[float], resized_size: Sequence[float] | None) -> tuple[float, float]:
    """Multipliers (sx, sy) taking ``frame`` coordinates to original pixels."""
    width, height = original_size
    if frame == "original":
        return 1.0, 1.0
    if frame == "norm1000":
        return width / 1000.0, height / 1000.0
    if frame == "norm1":
        return float(width), float(height)
    if frame == "resized":
        if resized_size is None:
            raise ValueError("the 'resized' frame needs resized_size=(width, height) of the image the model saw")
        return width / resized_size[0], height / resized_size[1]
    raise ValueError(f"unknown coordinate frame {frame!r}; expected 'resized', 'norm1000', 'norm1' or 'original'")


def _apply(values: Sequence[float], sx: float, sy: float) -> list[float]:
    if len(values) % 2:
        raise ValueError(f"coordinates come in (x, y) pairs, got {len(values)} values: {list(values)}")
    return [float(v) * (sx if i % 2 == 0 else sy) for i, v in enumerate(values)]


def to_original(
    values: Sequence[float],
    frame: Frame,
    original_size: Sequence[float],
    resized_size: Sequence[float] | None = None,
) -> list[float]:
    """Map a point ``[x, y]`` or box ``[x1, y1, x2, y2]`` from ``frame`` to original pixels.

    ``original_size`` and ``resized_size`` are ``(width, height)``.
    """
    return _apply(values, *_scales(frame, original_size, resized_size))


def from_original(
    values: Sequence[float],
    frame: Frame,
    original_size: Sequence[float],
    resized_size: Sequence[float] | None = None,
) -> list[float]:
    """Inverse of :func:`to_original`: original pixels into ``frame`` (e.g. to build SFT targets)."""
    sx, sy = _scales(frame, original_size, resized_size)
    return _apply(values, 1.0 / sx, 1.0 / sy)


def resized_size_for(
    original_size: Sequence[int], factor: int = 28, min_pixels: int | None = None, max_pixels: int | None = None
) -> tuple[int, int]:
    """``(width, height)`` of the smart-resized image for an original ``(width, height)``."""
    height, width = smart_resize(int(original_size[1]), int(original_size[0]), factor, min_pixels, max_pixels)
    return width, height
