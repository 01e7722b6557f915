"""Curr-ReFT's stage rewards: true/false (stage 1), multiple choice (stage 2), open-ended (stage 3), format.

Source: ding523/Curr_REFT @ f123433e, ``train_code/grpo/open-r1-multimodal/src/open_r1/``
``Stage1_judge_math_resize.py``, ``Stage2_choice_math_resize.py`` and ``Stage3_open_math_resize.py``
(``iou_reward``, which despite its name is each stage's accuracy, and ``format_reward``, the same
in the three files). The curriculum runs stage 1, then 2, then 3 as separate trainings switched at
a checkpoint step; in the zoo the stages are one ordered dataset (``curriculum`` loader) trained
with ``training.shuffle: false``.

Targets: ``{"answer": "<answer>yes</answer>", "task": "..."}`` (the dataset's ``solution`` and
``task``; ``task == "math"`` turns on the math_verify check of stage 1, ``"detection"`` the box
format pattern and stage 3's box IoU, ``"classify"`` stage 3's item-set overlap), and
``"stage": "judge" | "choice" | "open"`` for the dispatching ``curr-reft`` reward.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from domains.perception.boxes import pixel_iou
from domains.perception.text import math_verify_equal
from rewards.base import RewardResult, SampleReward, require, text_of

_YES = re.compile(r"(?<![a-z])(yes|true|correct)(?![a-z])")
_NO = re.compile(r"(?<![a-z])(no|false|incorrect)(?![a-z])")
_FORMAT = re.compile(r"<think>.*?</think>\s*<answer>.*?</answer>", re.DOTALL)
_DETECTION_FORMAT = re.compile(r"<think>.*?</think>\s*<answer>.*?\{.*\[\d+,\s*\d+,\s*\d+,\s*\d+\].*\}.*?</answer>",
                               re.DOTALL)  # fmt: skip
_NUM = r"(\s*-?\d*\.?\d+\s*)"
_BOX = rf"\[{_NUM},\s*{_NUM},\s*{_NUM},\s*{_NUM}\]"
_LAST_BOX = re.compile(rf"(?:\{{)?.*{_BOX}.*(?:\}})?", re.DOTALL)  # greedy prefix: the answer's last box
_FIRST_BOX = re.compile(_BOX)
_ITEM_SEPARATORS = re.compile(r"[,，、\s]+")


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


def open_answer(text: str) -> str:
    """Stage 3's reading of an answer: ``<answer>..</answer>``, else after an unclosed ``<answer>``, else
    the whole text. Kept quirk: for an unclosed tag upstream's ``(.*?)($|<|[^<]$)`` stops at the first
    ``<`` or drops the last character (``"<answer>cat, dog"`` reads ``"cat, do"``)."""
    found = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL) or re.search(r"<answer>(.*?)($|<|[^<]$)", text,
                                                                                  re.DOTALL)  # fmt: skip
    return found.group(1).strip() if found else text.strip()


def _box(match: re.Match[str] | None) -> list[int] | None:
    return [int(float(match.group(i))) for i in range(1, 5)] if match else None


def predicted_box(text: str) -> list[int]:
    """The last ``[x1, y1, x2, y2]`` of the answer (spaces removed, numbers truncated to int); when
    that finds none (or ``[0, 0, 0, 0]``), the first box of the answer; else ``[0, 0, 0, 0]``."""
    answer = open_answer(text)
    box = _box(_LAST_BOX.search(answer.replace(" ", "")))
    if box is None or box == [0, 0, 0, 0]:
        box = _box(_FIRST_BOX.search(answer))
    return box or [0, 0, 0, 0]


def _items(text: str) -> list[str]:
    return [item.strip() for item in _ITEM_SEPARATORS.split(text) if item.strip()]


def classify_overlap(text: str, solution: str) -> float:
    """|predicted ∩ reference| / |predicted ∪ reference| of the answers' item sets, case-sensitive.

    Items are split on commas (also ``，``, ``、``) and whitespace; an answer holding ``[`` is read as a
    Python literal (``['cat', 'dog']``), as upstream does, and one that does not parse scores 0. A
    reference without ``<answer>`` has no items.
    """
    answer = open_answer(text)
    reference = re.search(r"<answer>(.*?)</answer>", solution, re.DOTALL)
    truth = set(_items(reference.group(1).strip())) if reference else set()
    try:
        said = set(ast.literal_eval(answer)) if "[" in answer else set(_items(answer))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return 0.0
    union = truth | said
    return len(truth & said) / len(union) if union else 0.0


def math_open_match(text: str, solution: str) -> float:
    """Stage 3's fallback for math after math_verify: 1.0 when the option letters agree or one answer
    contains the other. Both need an ``<answer>`` (upstream's check fails otherwise). Kept quirks that
    change the numbers: as in stage 2, two answers with no letter A-E "agree", so any two tagged
    numeric answers score 1.0 (``17`` against ``71``); and an empty answer is contained in any."""
    said, truth = option_letters(text), option_letters(solution)
    if said is None or truth is None:
        return 0.0
    given, reference = answer_content(text) or "", answer_content(solution) or ""
    return float(said == truth or reference in given or given in reference)


class CurrReftOpen(SampleReward):
    """Stage 3 (open-ended) accuracy, by ``target["task"]``:

    * ``detection``: 1.0 when the IoU (VLM-R1's pixel convention) of :func:`predicted_box` and the
      reference's first box exceeds 0.5;
    * ``classify``: :func:`classify_overlap`, the one continuous score;
    * ``math``: math_verify, else :func:`math_open_match`;
    * ``coco_vqa``: upstream thresholds the cosine similarity of GTE-en-large sentence embeddings
      (0.2 above 0.9, 1.0 above 0.95); that model is not bundled, so the score is ``None`` with the reason;
    * any other task scores 0, as upstream.
    """

    component_names = ("iou", "items_overlap", "math_verify", "text_match")

    def __init__(self, name: str = "curr-reft-open") -> None:
        self.name = name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        text, solution = text_of(prediction), str(require(target, "answer", self.name))
        task = target.get("task")
        parts = dict.fromkeys(self.component_names, 0.0)
        if task == "detection":
            reference = re.search(r"<answer>(.*?)</answer>", solution, re.DOTALL)
            if reference is None:
                return RewardResult(0.0, parts, "reference has no <answer>: no box to compare (scores 0)")
            truth = _box(_FIRST_BOX.search(reference.group(1))) or [0, 0, 0, 0]
            try:
                parts["iou"] = pixel_iou(predicted_box(text), truth)
            except ZeroDivisionError:
                return RewardResult(0.0, parts, "both boxes have zero area")
            return RewardResult(float(parts["iou"] > 0.5), parts)
        if task == "classify":
            parts["items_overlap"] = classify_overlap(text, solution)
            return RewardResult(parts["items_overlap"], parts)
        if task == "math":
            parts["math_verify"] = float(math_verify_equal(text, solution))
            parts["text_match"] = math_open_match(text, solution)
            return RewardResult(max(parts["math_verify"], parts["text_match"]), parts)
        if task == "coco_vqa":
            return RewardResult(None, parts, "coco_vqa is scored with GTE-en-large sentence embeddings upstream; "
                                             "not reproduced here")  # fmt: skip
        return RewardResult(0.0, parts, f"task {task!r} has no stage-3 reward upstream (scores 0)")


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

    component_names = ("stage_score", "is_judge", "is_choice", "is_open")

    def __init__(self, name: str = "curr-reft") -> None:
        self.name = name
        self._stages = {"judge": CurrReftJudge(), "choice": CurrReftChoice(), "open": CurrReftOpen()}

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        stage = require(target, "stage", self.name)
        if stage not in self._stages:
            raise ValueError(f"reward {self.name!r}: stage {stage!r} has no reward here; expected one of "
                             f"{sorted(self._stages)}")  # fmt: skip
        result = self._stages[stage].score_one(prediction, target)
        flags = {f"is_{name}": float(stage == name) for name in self._stages}
        score = 0.0 if result.score is None else result.score
        return RewardResult(result.score, {"stage_score": score, **flags}, result.error)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.name == self.name

    def __hash__(self) -> int:
        return hash((type(self), self.name))
