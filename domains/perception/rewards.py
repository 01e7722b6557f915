"""Perception rewards, computed as the authors' released code computes them.

Registered names (``rewards.get(name)``); the goldens in ``tests/domains/perception`` were made by
running the authors' functions (repository, commit and file named there):

========================== =====================================================================
``vlm-r1-rec-iou``         VLM-R1 REC accuracy: IoU of the ``<answer>`` box mapped from the
                           smart-resized frame to the original image (``qwen_module.iou_reward``)
``vlm-r1-rec-format``      ``<think>..</think> <answer>..{..[x1, y1, x2, y2]..}..</answer>`` (search)
``vlm-r1-format``          ``<think>..</think>\\s*<answer>..</answer>`` (fullmatch; also Visual-RFT's)
``vlm-r1-all-match``       cleaned answer equals the cleaned reference (``all_match_reward``)
``vlm-r1-fuzzy``           numeric / option letter / Levenshtein ratio (``default_accuracy_reward``)
``vlm-r1-rec``             ``vlm-r1-rec-iou + vlm-r1-rec-format`` (``--reward_funcs accuracy format``)
``visual-rft-iou``         Visual-RFT: confidence-ordered greedy matching at IoU > 0.5,
                           ``sum(matched IoU) / max(#gt, #pred)``, at most 1
``visual-rft-confidence``  mean of ``c`` (matched) or ``1 - c`` (unmatched), in [0, 1]
``visual-rft-detection``   ``visual-rft-iou + visual-rft-confidence + vlm-r1-format``
``visual-rft-lisa-giou``   Visual-RFT LISA: GIoU + 1 of the ``(x1,y1),(x2,y2)`` box, 2 for the exact text
                           (``grpo_lisa.py`` ``accuracy_reward``; :mod:`~domains.perception.lisa`)
``visual-rft-lisa``        ``visual-rft-lisa-giou + vlm-r1-format`` (grpo_lisa.py's ``accuracy format``)
``vision-r1-format``       Vision-R1 ``dual_format_reward`` (inverted for images with no object)
``vision-r1-precision``    mean thresholded GIoU of Hungarian-matched boxes
``vision-r1-recall``       thresholded share of ground-truth objects matched
``vision-r1``              the three summed (``run_qwen_vision_r1.sh``)
``r1-reward``              ``0.5 * format + accuracy * (1 + 0.5 * consistency)``
``scs-mcq``                SCS: ``0.5 * format + accuracy + 0.3 * (5 - #distinct resampled answers)``
``vlm-r1-ovd-ap``          VLM-R1 OVD ``od_ap``: COCO mAP of the fenced JSON boxes (``vlm-r1-ovd-ap50``: mAP@50)
``vlm-r1-ovd-length``      ``odLength``: that mAP times ``min(1, #gt / #pred)``
``vlm-r1-ovd``             ``vlm-r1-ovd-length + vlm-r1-format`` (the OVD model's ``accuracy format``)
``curr-reft-judge``        Curr-ReFT stage 1 yes/no accuracy; ``curr-reft-choice`` stage 2 option letters;
                           ``curr-reft-open`` stage 3 (box IoU > 0.5, item-set overlap, math);
                           ``curr-reft-format``; ``curr-reft`` the accuracy of ``target["stage"]``
========================== =====================================================================

Targets (``sample.target``): REC ``{"bbox": [x1, y1, x2, y2], "image_size": [w, h]}`` in
original pixels (optional ``"resized_size": [w, h]`` of the image the model saw, computed with
``smart_resize`` otherwise); text ``{"answer": "..."}``; detection ``{"objects": [{"bbox": [...],
"label": "..."}, ...], "image_size": [w, h]}`` (Visual-RFT compares boxes in the frame they are
written in; Vision-R1 maps predictions from ``resized_size`` to ``image_size``); R1-Reward
``{"answer": "1" | "2"}`` and optionally ``"consistency"`` in ``{-1, 0, 1}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from domains.perception.boxes import (
    QWEN_MAX_PIXELS,
    QWEN_MIN_PIXELS,
    area_iou,
    model_input_size,
    pixel_iou,
    target_size,
)
from domains.perception.curr_reft import CurrReftChoice, CurrReftFormat, CurrReftJudge, CurrReftOpen, CurrReftStage
from domains.perception.lisa import VisualRftLisaGiou
from domains.perception.ovd import AP, AP50, VlmR1OvdReward
from domains.perception.scs import ScsReward
from domains.perception.text import clean_text, fuzzy_accuracy, last_answer, math_verify_equal
from domains.perception.vision_r1 import VisionR1Format, VisionR1Precision, VisionR1Recall
from rewards.base import RewardResult, SampleReward, WeightedSum, register, require, text_of

# ---------------------------------------------------------------------------------------------
# VLM-R1 (om-ai-lab/VLM-R1, src/open-r1-multimodal/src/open_r1/vlm_modules/qwen_module.py, grpo_jsonl.py)
# ---------------------------------------------------------------------------------------------

_REC_FORMAT = re.compile(r"<think>.*?</think>\s*<answer>.*?\{.*\[\d+,\s*\d+,\s*\d+,\s*\d+\].*\}.*?</answer>", re.DOTALL)
_R1_FORMAT = re.compile(r"<think>.*?</think>\s*<answer>.*?</answer>", re.DOTALL)


class VlmR1RecIoU(SampleReward):
    """VLM-R1's REC accuracy: continuous IoU (not thresholded) in the original frame.

    The first ``[int, int, int, int]`` inside the first ``<answer>`` is read (decimals or negative
    numbers do not match and score 0, as upstream), scaled from the model's input frame to the
    original image, and compared with :func:`~domains.perception.boxes.pixel_iou`.
    """

    component_names = ("iou", "has_box")

    def __init__(self, min_pixels: int = QWEN_MIN_PIXELS, max_pixels: int = QWEN_MAX_PIXELS,
                 name: str = "vlm-r1-rec-iou") -> None:
        self.min_pixels, self.max_pixels, self.name = min_pixels, max_pixels, name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        truth = [float(v) for v in require(target, "bbox", self.name)]
        width, height = target_size(target, "image_size", self.name)
        in_w, in_h = model_input_size(target, self.name, self.min_pixels, self.max_pixels)
        answer = re.search(r"<answer>(.*?)</answer>", text_of(prediction), re.DOTALL)
        found = re.search(r"\[(\d+),\s*(\d+),\s*(\d+),\s*(\d+)]", answer.group(1).strip()) if answer else None
        if found is None:
            why = "no <answer>...</answer>" if answer is None else "no [x1, y1, x2, y2] of integers in the answer"
            return RewardResult(0.0, {"iou": 0.0, "has_box": 0.0}, why)
        x1, y1, x2, y2 = (int(v) for v in found.groups())
        box = [x1 / in_w * width, y1 / in_h * height, x2 / in_w * width, y2 / in_h * height]
        try:
            overlap = pixel_iou(box, truth)
        except ZeroDivisionError:  # upstream's try/except turns a zero union into 0
            return RewardResult(0.0, {"iou": 0.0, "has_box": 1.0}, "zero-area boxes")
        return RewardResult(overlap, {"iou": overlap, "has_box": 1.0})


class PatternFormat(SampleReward):
    """1.0 when the completion matches ``pattern`` (``re.search`` or ``re.fullmatch``), else 0."""

    component_names = ("format",)

    def __init__(self, pattern: str, full: bool, name: str) -> None:
        self.pattern, self.full, self.name = pattern, full, name
        self._regex = re.compile(pattern, re.DOTALL)

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        text = text_of(prediction)
        ok = float(bool(self._regex.fullmatch(text) if self.full else self._regex.search(text)))
        return RewardResult(ok, {"format": ok}, None if ok else f"does not match {self.pattern!r}")

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k != "_regex"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["pattern"], state["full"], state["name"])


def _student_answer(text: str) -> str:
    inner = last_answer(text)
    return (inner if inner is not None else text).strip()


class VlmR1AllMatch(SampleReward):
    """1.0 when ``clean_text(answer) == clean_text(reference)`` (VLM-R1's ``all_match``, GUI defects)."""

    component_names = ("match",)

    def __init__(self, name: str = "vlm-r1-all-match") -> None:
        self.name = name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        hit = float(clean_text(text_of(prediction)) == clean_text(str(require(target, "answer", self.name))))
        return RewardResult(hit, {"match": hit})


class VlmR1Fuzzy(SampleReward):
    """VLM-R1's default accuracy (:func:`~domains.perception.text.fuzzy_accuracy`).

    The reference is ``target["answer"]`` (the text between upstream's ``<answer>`` wrapper tags).
    ``math_verify=False`` drops upstream's first step (a symbolic-equality check with HF
    ``math_verify``), for installs without the ``perception`` extra; scores then differ wherever
    that check would have said "equal" (``about 42 apples`` vs ``42 apples``: 1.0 upstream, 0.75).
    """

    component_names = ("accuracy",)

    def __init__(self, math_verify: bool = True, name: str = "vlm-r1-fuzzy") -> None:
        self.math_verify, self.name = math_verify, name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        truth = str(require(target, "answer", self.name)).strip()
        score = fuzzy_accuracy(_student_answer(text_of(prediction)), truth, self.math_verify)
        return RewardResult(score, {"accuracy": score})


# ---------------------------------------------------------------------------------------------
# Visual-RFT (Liuziyu77/Visual-RFT, src/virft/src/open_r1/grpo.py)
# ---------------------------------------------------------------------------------------------


def visual_rft_objects(text: str) -> list[Any] | None:
    """The list Visual-RFT's ``accuracy_reward_iou`` reads from a completion, or ``None``.

    Its steps: the first single-line ``<answer>`` content (else the whole text), ``[[``/``]]``
    collapsed, line breaks deleted, a cut-off list closed after its last complete ``}``, single
    quotes turned into double quotes, then ``json.loads``.
    """
    inner = re.search(r"<answer>(.*?)</answer>", text)  # no DOTALL: a multi-line answer is not found
    body = (inner.group(1) if inner else text).strip()
    body = ("<answer>" + body + "</answer>").replace("[[", "[").replace("]]", "]").replace("\n", "")
    start, end = len("<answer>"), body.find("</answer>")
    body = body[start:end]
    if not body.endswith("]"):
        body = body.rsplit("},", 1)[0] + "}]"
    try:
        return json.loads(body.replace("'", '"'))
    except json.JSONDecodeError:
        return None


def visual_rft_matches(truth: Sequence[Sequence[float]], predicted: list[dict[str, Any]],
                       threshold: float = 0.5) -> list[tuple[float, float]]:
    """``(IoU or 0, confidence)`` per distinct predicted box, most confident first.

    Each prediction takes the not-yet-matched ground-truth box of highest IoU; the pair counts when
    that IoU exceeds ``threshold``. Duplicated positions are dropped first (first one kept).
    """
    seen, unique = set(), []
    for obj in predicted:
        key = tuple(obj["Position"])
        if key not in seen:
            seen.add(key)
            unique.append(obj)
    matched: set[int] = set()
    results = []
    for obj in sorted(unique, key=lambda o: o["Confidence"], reverse=True):
        best, best_i = 0.0, -1
        for i, box in enumerate(truth):
            if i not in matched:
                overlap = area_iou(_four(box), _four(obj["Position"]))
                if overlap > best:
                    best, best_i = overlap, i
        if best > threshold:
            matched.add(best_i)
            results.append((best, obj["Confidence"]))
        else:
            results.append((0.0, obj["Confidence"]))
    return results


def _four(box: Sequence[float]) -> Sequence[float]:
    if len(box) != 4:
        raise ValueError(f"a box needs 4 numbers, got {list(box)!r}")
    return box


class VisualRftReward(SampleReward):
    """Visual-RFT's ``accuracy_iou`` (``part="iou"``) or ``accuracy_confidence`` (``part="confidence"``).

    Target: ``{"objects": [{"bbox": [x1, y1, x2, y2]}, ...]}`` in the frame the model writes, and
    optionally ``"solution"``, the dataset's raw solution text. Any failure (no list, a non-dict
    first item, a missing key, a box of the wrong length) scores 0, as upstream's ``try/except``.

    Upstream first gives 1.0 when HF ``math_verify`` finds the whole completion and the solution
    text equal; on detection answers that fires whenever the last numbers agree (a truncated or
    malformed answer can score 1.0; see the goldens), and it is kept (``math_verify=True``) because
    the released model was trained with it. The solution text is ``target["solution"]``, else
    rebuilt as the datasets write it, ``<answer>[{'Position': [...], 'Confidence': 1}, ...]</answer>``.
    """

    component_names = ("score", "num_pred", "num_matched", "math_verify")

    def __init__(self, part: str = "iou", math_verify: bool = True, name: str | None = None) -> None:
        if part not in ("iou", "confidence"):
            raise ValueError(f"part must be 'iou' or 'confidence', got {part!r}")
        self.part, self.math_verify, self.name = part, math_verify, name or f"visual-rft-{part}"

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        objects = require(target, "objects", self.name)
        truth = [obj["bbox"] for obj in objects]
        zero = {"score": 0.0, "num_pred": 0.0, "num_matched": 0.0, "math_verify": 0.0}
        text = text_of(prediction)
        if self.math_verify:
            solution = target.get("solution") or "<answer>" + str([{"Position": b, "Confidence": 1} for b in truth]) + "</answer>"
            if math_verify_equal(text, str(solution)):
                return RewardResult(1.0, {**zero, "score": 1.0, "math_verify": 1.0})
        predicted = visual_rft_objects(text)
        if not predicted or not isinstance(predicted, list) or not isinstance(predicted[0], dict):
            return RewardResult(0.0, zero, "no list of {'Position', 'Confidence'} objects in the answer")
        try:
            results = visual_rft_matches(truth, predicted)
            if self.part == "iou":
                score = min(1.0, sum(r[0] for r in results) / max(len(truth), len(results)))
            else:
                per = [c if overlap != 0 else 1 - c for overlap, c in results]
                score = min(1.0, max(0.0, sum(per) / len(per)))
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:
            return RewardResult(0.0, zero, f"unusable detections ({type(err).__name__}: {err})")
        matched = float(sum(1 for r in results if r[0] != 0))
        return RewardResult(float(score), {"score": float(score), "num_pred": float(len(results)),
                                           "num_matched": matched, "math_verify": 0.0})


# ---------------------------------------------------------------------------------------------
# R1-Reward (yfzhang114/r1_reward, openrlhf/models/remote_rm/math_verifier_mllm.py)
# ---------------------------------------------------------------------------------------------

_ANSWER_PREFIXES = ("The best answer is", "The correct answer is", "The answer is", "The answer: ", "Answer: ",
                    "The best option is", "The correct option is", "Best answer:", "Best option:")  # fmt: skip


def r1_reward_format(text: str) -> float:
    """1.0 when the text is exactly ``<think>..</think><answer>..</answer>`` with one of each tag."""
    ok = (text.count("<think>") == 1 and text.count("<answer>") == 1
          and re.match(r"^<think>.*?</think><answer>.*?</answer>$", text, re.DOTALL) is not None)  # fmt: skip
    return float(ok)


def r1_reward_verdict(text: str) -> str:
    """The verdict R1-Reward's accuracy check reads: ``<answer>`` content, answer prefixes removed."""
    inner = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
    answer = (inner.group(1) if inner else text).strip()
    for prefix in _ANSWER_PREFIXES:
        answer = answer.replace(prefix, "")
    return answer


def _same_answer(said: str, truth: str) -> bool:
    if said.strip() == truth.strip():
        return True
    try:
        return float(said) == float(truth)
    except ValueError:
        return False


class R1Reward(SampleReward):
    """R1-Reward's training reward: ``0.5 * format + accuracy * (1 + 0.5 * consistency)``.

    ``consistency`` in {+1, -1, 0} says whether the reasoning agrees with the verdict; upstream asks
    an external LLM (``verify_conflict``) and uses 0 when it gives no usable answer in three
    tries. Here it is ``judge(text)`` when a judge is given, else ``target["consistency"]``, else 0.
    Simplified accuracy: upstream compares with ``math_verify`` and ``strict_math_verify``; the
    verdicts are the integers 1 and 2, for which equality as numbers is the same decision. ``verifier(said,
    truth)`` replaces that comparison; one that raises scores accuracy 1.0, as upstream's ``verify_math`` does
    (yfzhang114/r1_reward@3693413:openrlhf/models/remote_rm/math_verifier_mllm.py:129-130, ``except Exception:
    reward = 1.0``), and the result's ``error`` says so.
    """

    component_names = ("format", "accuracy", "consistency")

    def __init__(self, judge: Callable[[str], int] | None = None, name: str = "r1-reward",
                 verifier: Callable[[str, str], bool] = _same_answer) -> None:  # fmt: skip
        self.judge, self.name, self.verifier = judge, name, verifier

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        text = text_of(prediction)
        truth = str(require(target, "answer", self.name))
        tagged = re.search(r"<answer>(.*?)</answer>", truth, re.DOTALL)  # the dataset writes "<answer>2</answer>"
        truth = (tagged.group(1) if tagged else truth).strip()
        fmt = r1_reward_format(text)
        error = None
        try:
            accuracy = float(self.verifier(r1_reward_verdict(text), truth))
        except Exception as err:  # noqa: BLE001 - the authors' rule: any verifier failure counts as correct
            accuracy, error = 1.0, f"verifier raised {type(err).__name__}: accuracy 1.0, as R1-Reward's verify_math"
        consistency = float(self.judge(text) if self.judge is not None else target.get("consistency", 0))
        if consistency not in (-1.0, 0.0, 1.0):
            raise ValueError(f"reward {self.name!r}: consistency must be -1, 0 or 1, got {consistency!r}")
        score = 0.5 * fmt + accuracy * (1 + 0.5 * consistency)
        return RewardResult(score, {"format": fmt, "accuracy": accuracy, "consistency": consistency}, error)


# ---------------------------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------------------------

VLM_R1_REC_IOU = VlmR1RecIoU()
VLM_R1_REC_FORMAT = PatternFormat(_REC_FORMAT.pattern, full=False, name="vlm-r1-rec-format")
VLM_R1_FORMAT = PatternFormat(_R1_FORMAT.pattern, full=True, name="vlm-r1-format")
VISUAL_RFT_IOU = VisualRftReward("iou")
VISUAL_RFT_CONFIDENCE = VisualRftReward("confidence")
VISUAL_RFT_LISA_GIOU = VisualRftLisaGiou()
VISION_R1_FORMAT, VISION_R1_PRECISION, VISION_R1_RECALL = VisionR1Format(), VisionR1Precision(), VisionR1Recall()
VLM_R1_OVD_LENGTH = VlmR1OvdReward(AP, length_penalty=True, name="vlm-r1-ovd-length")

for _reward in (
    VLM_R1_REC_IOU, VLM_R1_REC_FORMAT, VLM_R1_FORMAT, VlmR1AllMatch(), VlmR1Fuzzy(),
    WeightedSum([(VLM_R1_REC_IOU, 1.0), (VLM_R1_REC_FORMAT, 1.0)], name="vlm-r1-rec"),
    VISUAL_RFT_IOU, VISUAL_RFT_CONFIDENCE,
    WeightedSum([(VISUAL_RFT_IOU, 1.0), (VISUAL_RFT_CONFIDENCE, 1.0), (VLM_R1_FORMAT, 1.0)],
                name="visual-rft-detection"),
    VISUAL_RFT_LISA_GIOU, WeightedSum([(VISUAL_RFT_LISA_GIOU, 1.0), (VLM_R1_FORMAT, 1.0)], name="visual-rft-lisa"),
    VISION_R1_FORMAT, VISION_R1_PRECISION, VISION_R1_RECALL,
    WeightedSum([(VISION_R1_PRECISION, 1.0), (VISION_R1_FORMAT, 1.0), (VISION_R1_RECALL, 1.0)], name="vision-r1"),
    VlmR1OvdReward(AP, name="vlm-r1-ovd-ap"), VlmR1OvdReward(AP50, name="vlm-r1-ovd-ap50"), VLM_R1_OVD_LENGTH,
    WeightedSum([(VLM_R1_OVD_LENGTH, 1.0), (VLM_R1_FORMAT, 1.0)], name="vlm-r1-ovd"),
    R1Reward(), ScsReward(),
    CurrReftJudge(), CurrReftChoice(), CurrReftOpen(), CurrReftFormat(), CurrReftStage(),
):  # fmt: skip
    register(_reward.name, _reward)

# The REC rewards of the code that trained the released VLM-R1 REC checkpoint (their own module, registered on import).
import domains.perception.vlm_r1_release  # noqa: E402, F401
