"""A domain-agnostic synthetic visual task with exact answers: "what colour is the square?".

The RL backbone needs a task on which a tiny, randomly initialised Qwen-VL can *learn* within
CPU minutes, so that tests and ``bench/learning.py`` show the reward rise for real. Colour is a
property of the whole image, so even a frozen random vision tower passes it to the language
model (position is not: the feasibility notes found grounding from scratch needs tens of CPU
minutes). Each image is a square of one of :data:`COLOURS` at a random place and size on a
noisy dark background; the answer is the colour word.

Registered names (importing this module registers them):
  * dataset ``synthetic-colour`` -> :func:`load` (``n``, ``seed``, ``size``, ``colours``)
  * rewards ``synthetic-colour`` (exact colour word) and ``synthetic-format`` (one known word).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from rewards.base import RewardResult, check_lengths, target_of, text_of
from zoo.data import DATASETS, Sample, register_dataset

logger = logging.getLogger(__name__)

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


def _first_word(text: str) -> str:
    words = text.strip().lower().replace(".", " ").split()
    return words[0] if words else ""


@dataclass(frozen=True)
class ColourReward:
    """1.0 when the completion's first word is the target colour, else 0.0 (exact answer)."""

    name: str = "synthetic-colour"

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        results = []
        for prediction, sample in zip(predictions, samples, strict=True):
            word = _first_word(text_of(prediction))
            correct = float(word == target_of(sample)["answer"])
            results.append(RewardResult(correct, {"correct": correct, "valid_word": float(word in COLOURS)}))
        return results


@dataclass(frozen=True)
class ColourFormatReward:
    """1.0 when the completion is exactly one known colour word (any colour), else 0.0."""

    name: str = "synthetic-format"

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        results = []
        for prediction in predictions:
            text = text_of(prediction).strip().lower().rstrip(".")
            ok = float(text in COLOURS)
            results.append(RewardResult(ok, {"one_word": ok}, None if ok else f"not a single colour word: {text!r}"))
        return results


def register() -> None:
    """Register the dataset and both rewards (idempotent)."""
    if "synthetic-colour" not in DATASETS:
        register_dataset("synthetic-colour", f"{__name__}:load")
    from rewards.base import register as register_reward

    for reward in (ColourReward(), ColourFormatReward()):
        register_reward(reward.name, reward)  # re-registering an equal object is a no-op


register()
