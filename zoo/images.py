"""Reading user images safely: one entry point, named errors, a decompression-bomb guard."""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

ImageInput = str | os.PathLike | Image.Image | np.ndarray | bytes

#: Largest image area accepted (pixels). PIL's own guard is 89 MP and only warns below 2x that;
#: a screenshot is at most a few tens of MP, so anything bigger is refused outright.
MAX_IMAGE_PIXELS = 64_000_000


class ImageError(ValueError):
    """An input image could not be used; the message says which and why."""


def load_image(image: ImageInput, *, max_pixels: int = MAX_IMAGE_PIXELS) -> Image.Image:
    """An RGB PIL image from a path, PIL image, ``HxW[xC]`` array or encoded bytes.

    Raises :class:`ImageError` for a missing or unreadable file, a file that is not an image,
    a truncated image, or one larger than ``max_pixels`` (a decompression bomb is refused from
    its header, before it is decoded).
    """
    if isinstance(image, Image.Image):
        img = image
    elif isinstance(image, np.ndarray):
        img = _from_array(image)
    elif isinstance(image, (bytes, bytearray)):
        img = _open(io.BytesIO(image), "<bytes>", max_pixels)
    elif isinstance(image, (str, os.PathLike)):
        path = Path(image)
        if str(image).startswith(("http://", "https://")):
            raise ImageError(f"{image}: URLs are not fetched; download the image and pass its path")
        if not path.is_file():
            raise ImageError(f"{path}: no such image file")
        img = _open(path, str(path), max_pixels)
    else:
        raise ImageError(f"unsupported image input of type {type(image).__name__}; pass a path, PIL image or array")
    if img.width * img.height > max_pixels:
        raise ImageError(f"image of {img.width}x{img.height} pixels exceeds the limit of {max_pixels} pixels")
    return _to_rgb(img)


def image_size(image: bytes | str | os.PathLike, *, max_pixels: int = MAX_IMAGE_PIXELS) -> tuple[int, int]:
    """``(width, height)`` of encoded bytes or a file, read from the header only (no pixel is decoded).

    Lets a loader check a dataset's images up front, with :func:`load_image`'s errors, and decode
    each one only when it is used.
    """
    name = "<bytes>" if isinstance(image, (bytes, bytearray)) else str(image)
    with _named_errors(name), Image.open(io.BytesIO(image) if isinstance(image, (bytes, bytearray)) else image) as img:
        size = img.size
    if size[0] * size[1] > max_pixels:
        raise ImageError(f"{name}: {size[0]}x{size[1]} pixels exceeds the limit of {max_pixels} pixels")
    return size


def _open(source: Any, name: str, max_pixels: int) -> Image.Image:
    with _named_errors(name):
        img = Image.open(source)
        if img.width * img.height > max_pixels:
            raise ImageError(
                f"{name}: {img.width}x{img.height} pixels exceeds the limit of {max_pixels} pixels "
                "(possible decompression bomb); downscale it first"
            )
        img.load()
    return img


@contextlib.contextmanager
def _named_errors(name: str) -> Iterator[None]:
    """PIL's failures (its decompression-bomb warning included) as :class:`ImageError` naming the input."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            yield
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as err:
        raise ImageError(f"{name}: refused as a possible decompression bomb ({err})") from err
    except UnidentifiedImageError as err:
        raise ImageError(f"{name}: not an image file PIL can read") from err
    except OSError as err:
        raise ImageError(f"{name}: unreadable or truncated image ({err})") from err


def _from_array(array: np.ndarray) -> Image.Image:
    if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] not in (1, 3, 4)):
        raise ImageError(f"image array must be HxW or HxWxC with C in (1, 3, 4), got shape {array.shape}")
    if array.dtype != np.uint8:
        if np.issubdtype(array.dtype, np.floating) and array.size and array.min() >= 0 and array.max() <= 1:
            array = array * 255.0
        array = np.clip(array, 0, 255).astype(np.uint8)
    return Image.fromarray(array.squeeze(-1) if array.ndim == 3 and array.shape[2] == 1 else array)


def _to_rgb(img: Image.Image) -> Image.Image:
    """RGB, with transparency composited on white (what qwen-vl-utils does for RGBA)."""
    if img.mode == "RGB":
        return img
    if img.mode in ("RGBA", "LA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.split()[3])
        return background
    return img.convert("RGB")
