"""Multiple-choice accuracy (medical VQA, chart QA): the picked letter equals the reference.

``sample.target``: ``{"answer": "B"}`` (a letter, or the option text) and optionally
``{"options": {"A": "...", "B": "..."}}``, which lets an answer that repeats an option's text
without its letter count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewards.base import RewardResult, SampleReward, require, text_of
from rewards.parsing import ParseError, answer_span, parse_choice_letter


class MultipleChoice(SampleReward):
    """1.0 when the extracted option letter matches the reference, else 0.0 with the reason."""

    component_names = ("correct",)

    def __init__(self, tag: str = "answer", name: str = "multiple-choice") -> None:
        self.tag, self.name = tag, name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        options = target.get("options")
        reference = _reference_letter(str(require(target, "answer", self.name)), options)
        letter = getattr(prediction, "letter", None) or parse_choice_letter(
            answer_span(text_of(prediction), self.tag), options)
        hit = float(letter.upper() == reference)
        return RewardResult(hit, {"correct": hit}, None if hit else f"picked {letter}, reference {reference}")


def _reference_letter(answer: str, options: Mapping[str, str] | None) -> str:
    try:
        return parse_choice_letter(answer, options)
    except ParseError as err:  # the dataset is wrong, not the model: say so loudly
        raise ValueError(f"reference answer {answer!r} names no option ({err}); check the dataset") from err
