"""Rewards of the synthetic colour task: the exact colour word, and the one-word format."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from domains.synthetic.data import COLOURS
from rewards.base import RewardResult, check_lengths, register, target_of, text_of


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


for _reward in (ColourReward(), ColourFormatReward()):
    register(_reward.name, _reward)
