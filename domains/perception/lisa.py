"""Visual-RFT's LISA reasoning grounding: its GIoU training reward and its box and mask IoU metrics.

Source: Liuziyu77/Visual-RFT@9486633. The reward is ``accuracy_reward`` of ``src/virft/src/open_r1/grpo_lisa.py``
(L93-142, ``compute_giou`` L56-89); the metrics are ``lisa_evaluation/Qwen2_VL_lisa_infere.py`` (box IoU, L70-85 and
L120-135, averaged by ``merge_eval.py`` as "mIoU") and ``lisa_evaluation/mask_iou.py`` (mask IoU of the SAM mask
of the predicted box against the LISA polygon: per-image mean "gIoU" and cumulative "cIoU", L8-21, L32-78).

Kept quirks that change numbers, each the authors':

* the reward reads every ``(x1,y1),(x2,y2)`` pair of the answer and builds its two corners as the first pair's
  top-left and, when there are several pairs, the *second pair's top-left* (L122: all top-lefts, then all
  bottom-rights); no pair scores 0 (the ``IndexError`` their ``try`` catches);
* the GIoU is shifted by one (``giou + 1``, in [0, 2]), and an answer equal to the reference text scores 2;
* before that, HF ``math_verify`` on the raw texts gives 1.0 when it says "equal", and then the GIoU is not
  computed (L100-109): an exact box can score 1.0 this way instead of 2 (``math_verify=False`` drops the check);
* the reference's ``<answer>`` is read without DOTALL, the completion's with it (L112, L116).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from domains.perception.text import math_verify_equal
from rewards.base import RewardResult, SampleReward, require, text_of

#: grpo_lisa.py:120 and Qwen2_VL_lisa_infere.py:120: ``(x1,y1),(x2,y2)`` of integers, spaces allowed.
LISA_BOX = re.compile(r"\(\s*(\d+)\s*,\s*(\d+)\s*\)\s*,\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)")
#: Both files divide the model's numbers by 1000 (Qwen2-VL's 0-1000 frame).
_SCALE = 1000


def lisa_corners(text: str) -> list[tuple[float, float]]:
    """The corner list of grpo_lisa.py:122: every pair's top-left, then every pair's bottom-right, over 1000."""
    pairs = LISA_BOX.findall(text)
    return [(int(a) / _SCALE, int(b) / _SCALE) for a, b, _, _ in pairs] + [
        (int(c) / _SCALE, int(d) / _SCALE) for _, _, c, d in pairs
    ]


def lisa_giou(truth: Sequence[tuple[float, float]], student: Sequence[tuple[float, float]]) -> float:
    """``compute_giou`` (grpo_lisa.py:56-89): GIoU of the boxes ``corners[0]``-``corners[1]``, plus one.

    A zero union gives IoU 0 and a zero enclosing area leaves the IoU alone, as upstream; ``IndexError`` when a side
    has fewer than two corners (the reward turns it into 0).
    """
    (x1_gt, y1_gt), (x2_gt, y2_gt) = truth[0], truth[1]
    (x1_st, y1_st), (x2_st, y2_st) = student[0], student[1]
    inter = max(0, min(x2_gt, x2_st) - max(x1_gt, x1_st)) * max(0, min(y2_gt, y2_st) - max(y1_gt, y1_st))
    union = (x2_gt - x1_gt) * (y2_gt - y1_gt) + (x2_st - x1_st) * (y2_st - y1_st) - inter
    iou = inter / union if union > 0 else 0
    enclosing = (max(x2_gt, x2_st) - min(x1_gt, x1_st)) * (max(y2_gt, y2_st) - min(y1_gt, y1_st))
    giou = iou - (enclosing - union) / enclosing if enclosing > 0 else iou
    return float(giou + 1)


class VisualRftLisaGiou(SampleReward):
    """Visual-RFT's LISA accuracy reward (``accuracy_reward`` of grpo_lisa.py): GIoU + 1, 2 for the exact text.

    Target: ``{"solution": "<answer> (x1,y1),(x2,y2) </answer>"}``, the reference as grpo_lisa.py:214 builds it
    from the assistant turn (the ``lisa-visual-rft`` loader writes it). See the module docstring for the quirks.
    """

    component_names = ("score", "giou", "exact", "math_verify")

    def __init__(self, math_verify: bool = True, name: str = "visual-rft-lisa-giou") -> None:
        self.math_verify, self.name = math_verify, name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        content, solution = text_of(prediction), str(require(target, "solution", self.name))
        zero = {"score": 0.0, "giou": 0.0, "exact": 0.0, "math_verify": 0.0}
        if self.math_verify and math_verify_equal(content, solution):
            return RewardResult(1.0, {**zero, "score": 1.0, "math_verify": 1.0})
        sol_match = re.search(r"<answer>(.*?)</answer>", solution)
        truth = sol_match.group(1).strip() if sol_match else solution.strip()
        found = re.search(r"<answer>(.*?)</answer>", content, re.DOTALL)
        student = found.group(1).strip() if found else content.strip()
        if student == truth:
            return RewardResult(2.0, {**zero, "score": 2.0, "exact": 1.0})
        try:
            giou = lisa_giou(lisa_corners(truth), lisa_corners(student))
        except (IndexError, ZeroDivisionError) as err:
            return RewardResult(0.0, zero, f"no (x1,y1),(x2,y2) box to compare ({type(err).__name__})")
        return RewardResult(giou, {**zero, "score": giou, "giou": giou})


# --- evaluation ---------------------------------------------------------------------------------------------


def lisa_eval_box(text: str) -> list[float] | None:
    """The predicted box Qwen2_VL_lisa_infere.py:120-123 reads: the first ``(x1,y1),(x2,y2)`` anywhere in the
    response, over 1000 (image fractions); ``None`` where its ``try`` falls to IoU 0."""
    found = LISA_BOX.search(text)
    return [int(v) / _SCALE for v in found.groups()] if found else None


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """``compute_iou`` of Qwen2_VL_lisa_infere.py:70-85: continuous areas, ``1e-6`` added to the union."""
    inter = max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter / (union + 1e-6))


def polygon_mask(points: Sequence[Sequence[float]], width: int, height: int) -> np.ndarray:
    """The LISA polygon as a (height, width) 0/1 mask, outline included (mask_iou.py:8-11, PIL's polygon fill)."""
    from PIL import Image, ImageDraw

    canvas = Image.new("L", (width, height), 0)
    ImageDraw.Draw(canvas).polygon([tuple(p) for p in points], outline=1, fill=1)
    return np.array(canvas, dtype=np.uint8)


def mask_overlap(predicted: np.ndarray, truth: np.ndarray) -> tuple[int, int, float]:
    """``(intersection, union, iou)`` of two masks of one shape (mask_iou.py:17-21, ``1e-6`` added to the union)."""
    if predicted.shape != truth.shape:
        raise ValueError(f"mask shapes differ: predicted {predicted.shape}, ground truth {truth.shape}")
    inter = int(np.logical_and(predicted, truth).sum())
    union = int(np.logical_or(predicted, truth).sum())
    return inter, union, inter / (union + 1e-6)


def mask_scores(overlaps: Iterable[tuple[int, int, float]]) -> dict[str, float]:
    """mask_iou.py:77-78: ``giou``, the mean of the per-image IoUs, and ``ciou``, summed intersections over summed
    unions (``1e-6`` added); 0 for no image."""
    rows = list(overlaps)
    total_inter, total_union = sum(r[0] for r in rows), sum(r[1] for r in rows)
    return {"giou": float(np.mean([r[2] for r in rows])) if rows else 0.0,
            "ciou": float(total_inter / (total_union + 1e-6))}  # fmt: skip
