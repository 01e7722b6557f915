"""Curr-ReFT's stage rewards: true/false judgement (stage 1) and multiple choice (stage 2), plus format.

Source: ding523/Curr_REFT ``train_code/grpo/open-r1-multimodal/src/open_r1/Stage1_judge_math_resize.py``
and ``Stage2_choice_math_resize.py`` (``iou_reward``, which despite its name is the accuracy of
those stages, and ``format_reward``). The curriculum runs stage 1, then 2, then 3 (open-ended) as
separate trainings switched at a checkpoint step; in the zoo the stages are one ordered dataset
(``curriculum`` loader) trained with ``training.shuffle: false``. Stage 3's open-ended reward
(detection list IoU with partial credits) is not reproduced here.

Targets: ``{"answer": "<answer>yes</answer>", "task": "..."}`` (the dataset's ``solution`` and
``task``; ``task == "math"`` turns on the math_verify check of stage 1, ``"detection"`` the box
format pattern), and ``"stage": "judge" | "choice"`` for the dispatching ``curr-reft`` reward.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from domains.perception.text import math_verify_equal
from rewards.base import RewardResult, SampleReward, require, text_of

_YES = re.compile(r"(?<![a-z])(yes|true|correct)(?![a-z])")
_NO = re.compile(r"(?<![a-z])(no|false|incorrect)(?![a-z])")
_FORMAT = re.compile(r"<think>.*?</think>\s*<answer>.*?</answer>", re.DOTALL)
_DETECTION_FORMAT = re.compile(r"<think>.*?</think>\s*<answer>.*?\{.*\[\d+,\s*\d+,\s*\d+,\s*\d+\].*\}.*?</answer>",
                               re.DOTALL)  # fmt: skip


def answer_content(text: str) -> str | None:
    """``<answer>..</answer>`` content, else everything after an unclosed ``<answer>``, else ``None``."""
    found = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL) or re.search(r"<answer>(.*?)(?:<answer>|$)",
                                                                                  text, re.DOTALL)  # fmt: skip
    return found.group(1).strip() if found else None


def yes_no(content: str | None) -> str | None:
    """``"yes"`` when yes/true/correct appears as a word (checked first, so "not correct" is yes),
    else ``"no"`` for no/false/incorrect, else ``None``."""
    if content is None:
        return None
    content = content.lower().strip()
    return "yes" if _YES.search(content) else "no" if _NO.search(content) else None


def option_letters(text: str) -> str | None:
    """The distinct standalone letters A-E of the answer content, in order, comma-joined (``"A,C"``)."""
    content = answer_content(text)
    if content is None:
        return None
    letters = re.findall(r"(?<![A-Za-z])([A-E])(?![A-Za-z])", content.upper().strip())
    return ",".join(dict.fromkeys(letters))


class CurrReftJudge(SampleReward):
    """Stage 1: 1.0 when the answer's yes/no equals the reference's (math items may pass by math_verify)."""

    component_names = ("correct", "math_verify")

    def __init__(self, name: str = "curr-reft-judge") -> None:
        self.name = name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        text, solution = text_of(prediction), str(require(target, "answer", self.name))
        said = yes_no(answer_content(text))
        correct = float(said is not None and said == yes_no(answer_content(solution)))
        by_math = float(target.get("task") == "math" and math_verify_equal(text, solution))
        return RewardResult(max(correct, by_math), {"correct": correct, "math_verify": by_math})


class CurrReftChoice(SampleReward):
    """Stage 2: 1.0 when the set of option letters in the answer equals the reference's.

    As upstream, math_verify decides first and the letter comparison, when the completion has an
    ``<answer>``, overrides it.
    """

    component_names = ("letters_match", "math_verify")

    def __init__(self, name: str = "curr-reft-choice") -> None:
        self.name = name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        text, solution = text_of(prediction), str(require(target, "answer", self.name))
        by_math = float(math_verify_equal(text, solution))
        said = option_letters(text)
        match = float(said is not None and said == option_letters(solution))
        return RewardResult(by_math if said is None else match, {"letters_match": match, "math_verify": by_math})


class CurrReftFormat(SampleReward):
    """``re.fullmatch`` of think/answer; for ``task == "detection"`` the answer must hold ``{..[4 ints]..}``."""

    component_names = ("format",)

    def __init__(self, name: str = "curr-reft-format") -> None:
        self.name = name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        pattern = _DETECTION_FORMAT if target.get("task") == "detection" else _FORMAT
        ok = float(pattern.fullmatch(text_of(prediction)) is not None)
        return RewardResult(ok, {"format": ok})


class CurrReftStage(SampleReward):
    """The accuracy of the stage a curriculum sample belongs to (``target["stage"]``)."""

    component_names = ("stage_score", "is_judge", "is_choice")

    def __init__(self, name: str = "curr-reft") -> None:
        self.name = name
        self._stages = {"judge": CurrReftJudge(), "choice": CurrReftChoice()}

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        stage = require(target, "stage", self.name)
        if stage not in self._stages:
            raise ValueError(f"reward {self.name!r}: stage {stage!r} has no reward here; expected one of "
                             f"{sorted(self._stages)} (stage 3 is not reproduced)")  # fmt: skip
        result = self._stages[stage].score_one(prediction, target)
        return RewardResult(result.score, {"stage_score": result.score, "is_judge": float(stage == "judge"),
                                           "is_choice": float(stage == "choice")}, result.error)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.name == self.name

    def __hash__(self) -> int:
        return hash((type(self), self.name))
