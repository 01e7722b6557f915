"""Data of the synthetic colour task: "what colour is the square?", with exact answers.

The RL backbone needs a task on which a tiny, randomly initialised Qwen-VL can *learn* within
CPU minutes, so that tests and ``bench/learning.py`` show the reward rise for real. Colour is a
property of the whole image, so even a frozen random vision tower passes it to the language
model (position is not: the feasibility notes found grounding from scratch needs tens of CPU
minutes). Each image is a square of one of :data:`COLOURS` at a random place and size on a
noisy dark background; the answer is the colour word.

The dataset is registered as ``synthetic-colour`` (:func:`load`: ``n``, ``seed``, ``size``,
``colours``) by this domain's descriptor; its rewards are in :mod:`domains.synthetic.rewards`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from PIL import Image

from zoo.data import Sample

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "green": (40, 190, 60),
    "blue": (40, 70, 230),
    "yellow": (230, 210, 40),
}
QUESTION = "What colour is the square? Answer with one word."


def make_image(colour: str, rng: np.random.Generator, size: int = 56) -> Image.Image:
    """A ``size``x``size`` RGB image: dark noise plus one square of ``colour`` (random place, 40-70% side)."""
    pixels = rng.integers(0, 60, size=(size, size, 3), dtype=np.uint8)
    side = int(rng.integers(int(size * 0.4), int(size * 0.7) + 1))
    x, y = rng.integers(0, size - side + 1, size=2)
    jitter = rng.integers(-20, 21, size=3)
    pixels[y : y + side, x : x + side] = np.clip(np.array(COLOURS[colour]) + jitter, 0, 255)
    return Image.fromarray(pixels, mode="RGB")


def colour_word(sample: Sample) -> str:
    """A sample's colour word as the whole answer (``colour-word`` answer format: the SFT target of the warm start)."""
    return sample.target["answer"]


def load(n: int = 256, seed: int = 0, size: int = 56, colours: Sequence[str] | None = None) -> Iterator[Sample]:
    """``n`` samples; the same ``seed`` gives the same images (use another seed for held-out data)."""
    names = list(colours or COLOURS)
    unknown = [c for c in names if c not in COLOURS]
    if unknown:
        raise ValueError(f"unknown colour(s) {unknown}; choose from {list(COLOURS)}")
    rng = np.random.default_rng(seed)
    for i in range(n):
        colour = names[int(rng.integers(len(names)))]
        yield Sample(
            id=f"colour-{seed}-{i}",
            images=(make_image(colour, rng, size),),
            prompt=QUESTION,
            target={"answer": colour},
            meta={"rate": 1.0},
        )
