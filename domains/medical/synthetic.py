"""Procedural pathology-like and ultrasound-like images with known ground truth.

Real pathology (PathMMU) and ultrasound (U2-Bench) data are gated and licensed
non-commercially, so the recipes and tests run on images drawn here: they look enough
like the real thing to exercise prompts, rewards and metrics, and every label, box and
measurement is known exactly because the generator put it there. They carry no
diagnostic meaning whatsoever.

* Pathology: an eosin-pink stroma with hematoxylin-purple nuclei; the tissue "class"
  controls nuclear density, size and irregularity (``TISSUE_CLASSES``).
* Ultrasound: a fan-shaped sector of multiplicative Rayleigh speckle with depth
  attenuation, optionally one hypoechoic lesion whose pixel box and diameter are returned.
  A smooth oval lesion is "benign", a lobulated one "malignant".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

#: tissue class -> (nuclei per 10k px, nucleus radius range px, irregularity 0-1)
TISSUE_CLASSES: dict[str, tuple[float, tuple[float, float], float]] = {
    "normal tissue": (6.0, (2.0, 3.0), 0.05),
    "inflammation": (22.0, (1.5, 2.2), 0.05),
    "carcinoma": (16.0, (3.5, 6.0), 0.45),
    "necrosis": (3.0, (1.0, 2.5), 0.6),
}
US_CLASSES = ("benign", "malignant")


def pathology_image(rng: np.random.Generator, tissue: str, size: int = 64) -> Image.Image:
    """An H&E-like RGB patch of ``tissue`` (a key of :data:`TISSUE_CLASSES`)."""
    if tissue not in TISSUE_CLASSES:
        raise ValueError(f"unknown tissue {tissue!r}; choose one of {sorted(TISSUE_CLASSES)}")
    density, (r_min, r_max), irregular = TISSUE_CLASSES[tissue]
    pale = tissue == "necrosis"
    base = np.array([236, 190, 214] if pale else [226, 150, 190], dtype=np.float32)
    noise = rng.normal(0.0, 10.0, size=(size, size, 1)).astype(np.float32)
    canvas = Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(canvas)
    n_nuclei = int(rng.poisson(density * size * size / 10_000))
    for _ in range(n_nuclei):
        cx, cy = rng.uniform(0, size, 2)
        r = rng.uniform(r_min, r_max)
        stretch = 1.0 + irregular * rng.uniform(-1, 1)
        colour = tuple(int(c) for c in rng.normal([95, 50, 140], 12).clip(0, 255))
        draw.ellipse([cx - r * stretch, cy - r / stretch, cx + r * stretch, cy + r / stretch], fill=colour)
    return canvas.filter(ImageFilter.GaussianBlur(0.6))


@dataclass(frozen=True)
class UltrasoundCase:
    """One synthetic B-mode frame and what is in it.

    Attributes:
        image: the RGB frame (grey values replicated).
        bbox: lesion box ``[x1, y1, x2, y2]`` in pixels, or ``None`` when no lesion was drawn.
        label: ``"benign"`` (smooth oval) or ``"malignant"`` (lobulated); ``None`` without lesion.
        diameter_mm: the lesion's largest extent in millimetres (``mm_per_px`` x pixel width).
        mm_per_px: pixel spacing used for ``diameter_mm``.
    """

    image: Image.Image
    bbox: list[float] | None
    label: str | None
    diameter_mm: float | None
    mm_per_px: float


def _sector_mask(width: int, height: int) -> np.ndarray:
    """Boolean mask of a convex-probe fan: apex above the top edge, 70 degrees wide."""
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    apex_x, apex_y = width / 2, -0.15 * height
    angle = np.degrees(np.arctan2(xs - apex_x, ys - apex_y))
    radius = np.hypot(xs - apex_x, ys - apex_y)
    return (np.abs(angle) < 35) & (radius > 0.2 * height) & (radius < 1.12 * height)


def _lesion_mask(width: int, height: int, box: list[float], lobulated: bool, rng: np.random.Generator) -> np.ndarray:
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    rx, ry = (box[2] - box[0]) / 2, (box[3] - box[1]) / 2
    theta = np.arctan2(ys - cy, xs - cx)
    # A lobulated margin modulates the radius; the modulation never exceeds the nominal box.
    scale = 1.0 - (0.25 * (1 + np.sin(5 * theta + rng.uniform(0, 2 * math.pi))) / 2 if lobulated else 0.0)
    return ((xs - cx) / rx) ** 2 + ((ys - cy) / ry) ** 2 <= scale**2


def ultrasound_case(
    rng: np.random.Generator,
    size: tuple[int, int] = (96, 80),
    lesion: bool = True,
    label: str | None = None,
    mm_per_px: float = 0.5,
) -> UltrasoundCase:
    """A speckled sector image, with one hypoechoic lesion when ``lesion`` is true."""
    width, height = size
    speckle = rng.rayleigh(scale=0.6, size=(height, width)).astype(np.float32)
    depth = np.linspace(1.0, 0.45, height, dtype=np.float32)[:, None]
    tissue = 150.0 * speckle * depth
    bbox: list[float] | None = None
    if lesion:
        label = label or str(rng.choice(US_CLASSES))
        if label not in US_CLASSES:
            raise ValueError(f"unknown lesion label {label!r}; choose one of {US_CLASSES}")
        w = float(rng.uniform(0.15, 0.3) * width)
        h = float(rng.uniform(0.15, 0.3) * height)
        x1 = float(rng.uniform(0.2 * width, 0.8 * width - w))
        y1 = float(rng.uniform(0.25 * height, 0.9 * height - h))
        bbox = [round(x1), round(y1), round(x1 + w), round(y1 + h)]
        mask = _lesion_mask(width, height, bbox, label == "malignant", rng)
        tissue = np.where(mask, tissue * 0.15, tissue)
    frame = np.where(_sector_mask(width, height), tissue, 0.0)
    grey = Image.fromarray(np.clip(frame, 0, 255).astype(np.uint8), "L")
    diameter = None if bbox is None else round(max(bbox[2] - bbox[0], bbox[3] - bbox[1]) * mm_per_px, 2)
    return UltrasoundCase(grey.convert("RGB"), bbox, label if lesion else None, diameter, mm_per_px)
