"""Task rewards of the medical domain: Patho-R1 pathology QA and U2-Bench-style ultrasound tasks.

Registered names (``rewards.get(name)``):

===================== =========================================================================
``patho-mcq``         option picked (letter or the option's text) is right  + think/answer format
``patho-vqa``         normalised answer equals a reference                  + think/answer format
``us-classification`` normalised label equals the ground-truth label
``us-localization``   answer equals the lesion centre's 3x3 position label (U2-Bench thresholds)
``us-measurement``    ``1 - |scaled error|`` with U2-Bench's per-task min-max scaling
``us-report``         ROUGE-L (pycocoevalcap definition) against the reference report(s)
``us-answer``         multi-task: the rule of the task named in ``target["task"]``
===================== =========================================================================

Patho-R1 was tuned with GRPO and DAPO but its reward code is not public (the Patho-R1 repository
releases no training code), and Dolphin R1's "Ultrasound Answer Reward" has no published formula
(arXiv 2509.25748). These rewards are the zoo's own design in the papers' style. The
pathology rewards follow the R1 convention, accuracy + format with weight 1 each; the
ultrasound rewards score only the answer, with the benchmark's own rules so that reward and
U2-Bench evaluation agree, and a recipe adds the builtin ``format-think-answer`` with its own
weight. Answers are read from ``<answer>`` when present, else from the whole text
(``rewards.parsing.answer_span``);
an unreadable answer (no number where one is due, not one of the ten locations) scores 0 with
the reason in ``RewardResult.error``.

Targets (``sample.target``):

* ``patho-mcq``: ``{"answer": "B", "options": {"A": "...", ...}}``.
* ``patho-vqa``: ``{"answer": "yes"}`` or ``{"answer": ["yes", "y"]}`` (any reference counts).
* ``us-classification``: ``{"label": "benign"}``.
* ``us-localization``: ``{"position": "upper left"}``, or ``{"bbox": [x1, y1, x2, y2],
  "image_size": [w, h]}`` in pixels (``bbox: null`` = not visible), or ``{"center": [cx, cy]}`` in 0-1.
* ``us-measurement``: ``{"value": 55.0, "dataset": "18"}`` (U2-Bench id) or ``{"value": ..., "range": [lo, hi]}``.
* ``us-report``: ``{"report": "text"}`` or ``{"reports": ["text", ...]}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domains.medical.metrics import (
    MEASUREMENT_TOLERANCE,
    NOT_VISIBLE,
    POSITION_LABELS,
    box_position_label,
    measurement_range,
    min_max_scale,
    position_label,
)
from rewards.base import RewardResult, SampleReward, WeightedSum, register, require, text_of
from rewards.caption import coco_bleu, rouge_l
from rewards.choice import MultipleChoice
from rewards.format import TagFormat
from rewards.parsing import ParseError, answer_span, parse_number
from rewards.text import ExactMatch


def normalise_label(text: str) -> str:
    """U2-Bench's label normalisation (lower case; ``[``, ``]``, ``'`` removed), plus trimmed
    white space and a final period, which a bare exact match would punish for nothing."""
    return " ".join(text.replace("[", "").replace("]", "").replace("'", "").lower().split()).rstrip(".")


def target_position(target: Mapping[str, Any]) -> str:
    """The U2-Bench position label a localisation target stands for."""
    if "position" in target:
        return normalise_label(str(target["position"]))
    if "center" in target:
        cx, cy = target["center"]
        return position_label(float(cx), float(cy))
    if "bbox" in target:
        return box_position_label(target["bbox"], require(target, "image_size", "us-localization"))
    raise KeyError(f"reward 'us-localization' needs 'position', 'center' or 'bbox'; sample.target has {sorted(target)}")


class UltrasoundClassification(SampleReward):
    """1.0 when the normalised answer equals the normalised ground-truth label."""

    component_names = ("correct",)

    def __init__(self, name: str = "us-classification") -> None:
        self.name = name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        said = normalise_label(answer_span(text_of(prediction)))
        if not said:
            raise ParseError("empty answer")
        truth = normalise_label(str(require(target, "label", self.name)))
        hit = float(said == truth)
        return RewardResult(hit, {"correct": hit}, None if hit else f"said {said[:40]!r}, label {truth!r}")


class UltrasoundLocalization(SampleReward):
    """1.0 when the answer is the 3x3 position label of the lesion centre (or ``not visible``)."""

    component_names = ("correct", "not_visible")

    def __init__(self, name: str = "us-localization") -> None:
        self.name = name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        answer = answer_span(text_of(prediction))
        said = normalise_label(answer)
        if said not in POSITION_LABELS:
            raise ParseError(f"{answer[:40]!r} is not one of the U2-Bench locations: {', '.join(POSITION_LABELS)}")
        truth = target_position(target)
        hit = float(said == truth)
        why = None if hit else f"said {said!r}, lesion is {truth!r}"
        return RewardResult(hit, {"correct": hit, "not_visible": float(truth == NOT_VISIBLE)}, why)


class UltrasoundMeasurement(SampleReward):
    """``max(0, 1 - |scaled(truth) - scaled(answer)|)``, scaled as U2-Bench's ``min_max_scale``."""

    component_names = ("scaled_abs_error", "within_tolerance")

    def __init__(self, tolerance: float = MEASUREMENT_TOLERANCE, name: str = "us-measurement") -> None:
        self.tolerance, self.name = tolerance, name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        truth = require(target, "value", self.name)
        if truth is None:  # U2-Bench rows whose measurement cell is empty or unreadable
            raise ValueError(f"reward {self.name!r}: this sample has no ground-truth value; leave it out of training")
        truth = float(truth)
        value_range = tuple(target["range"]) if "range" in target else measurement_range(str(target.get("dataset")))
        value = parse_number(answer_span(text_of(prediction)))
        error = abs(min_max_scale(truth, value_range) - min_max_scale(value, value_range))
        return RewardResult(max(0.0, 1.0 - error), {"scaled_abs_error": error,
                                                    "within_tolerance": float(error <= self.tolerance)})


class UltrasoundReport(SampleReward):
    """ROUGE-L F (beta 1.2, pycocoevalcap) against the reference report(s); sentence BLEU-4 logged."""

    component_names = ("rouge_l", "bleu4")

    def __init__(self, name: str = "us-report") -> None:
        self.name = name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        refs = target["reports"] if "reports" in target else [require(target, "report", self.name)]
        refs = [str(r) for r in refs]
        answer = answer_span(text_of(prediction))
        if not answer:
            raise ParseError("empty report")
        score = rouge_l(answer, refs)
        _, per_case = coco_bleu({0: refs}, {0: [answer]})
        return RewardResult(score, {"rouge_l": score, "bleu4": per_case[3][0]})


class UltrasoundAnswer(SampleReward):
    """Multi-task ultrasound reward: the task reward named by ``target["task"]``.

    Named after Dolphin R1's "Ultrasound Answer Reward" (UAR), whose formula is unpublished; this
    is the zoo's version: each U2-Bench task type scored by its own rule above.
    """

    TASKS = ("classification", "localization", "measurement", "report")
    # The same keys for every sample whatever its task (verl's reward_extra_info needs that).
    component_names = ("task_score", *(f"is_{t}" for t in TASKS))

    def __init__(self, name: str = "us-answer") -> None:
        self.name = name
        self._tasks = dict(zip(self.TASKS, (UltrasoundClassification(), UltrasoundLocalization(),
                                            UltrasoundMeasurement(), UltrasoundReport()), strict=True))

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        task = require(target, "task", self.name)
        if task not in self._tasks:
            raise ValueError(f"reward {self.name!r}: target['task']={task!r}; expected one of {list(self.TASKS)}")
        result = self._tasks[task].score_one(prediction, target)
        components = {"task_score": result.score, **{f"is_{t}": float(t == task) for t in self.TASKS}}
        return RewardResult(result.score, components, result.error)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.name == self.name

    def __hash__(self) -> int:
        return hash((type(self), self.name))


def _with_format(accuracy: SampleReward, name: str) -> WeightedSum:
    return WeightedSum([(accuracy, 1.0), (TagFormat(("think", "answer"), name="format"), 1.0)], name=name)


PATHO_MCQ = _with_format(MultipleChoice(name="accuracy"), "patho-mcq")
PATHO_VQA = _with_format(ExactMatch(name="accuracy"), "patho-vqa")
US_CLASSIFICATION = UltrasoundClassification()
US_LOCALIZATION = UltrasoundLocalization()
US_MEASUREMENT = UltrasoundMeasurement()
US_REPORT = UltrasoundReport()
US_ANSWER = UltrasoundAnswer()

for _reward in (PATHO_MCQ, PATHO_VQA, US_CLASSIFICATION, US_LOCALIZATION, US_MEASUREMENT, US_REPORT, US_ANSWER):
    register(_reward.name, _reward)
