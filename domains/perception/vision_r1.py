"""Vision-R1's rewards: dual format, Hungarian precision and recall, with progressive thresholds.

Source: jefferyZhan/Griffon@9866875, ``Vision-R1/vision_r1/visionr1_qwen.py`` (``extract``,
``dual_format_reward``, ``BoxPriorMatcher``, ``precision_reward``, ``recall_reward``), trained with
``--reward_funcs precision_reward dual_format_reward recall_reward`` (weights 1). The trainer
passes ``step = state.global_step``; *progressive rule refinement* raises the thresholds at step
1500. Here the step is read from ``sample.meta["step"]`` (the TRL adapter fills it in); a sample
without one is scored as upstream scores ``step=None`` (no thresholding).

Target: ``{"objects": [{"bbox": [x1, y1, x2, y2], "label": "cat"}, ...], "image_size": [w, h]}``
in original pixels, ``"resized_size"`` and optionally ``"label_ids"`` (label -> class id, the dataset's
``target_id_map``; by default the sorted ground-truth labels numbered from 1, 0 being
"background", which any unknown predicted label gets).

Predicted boxes are mapped from ``resized_size``, the frame the model saw, to ``image_size``, as
upstream maps them from ``image_grid_thw * 14`` (``visionr1_qwen.py`` L280-281,
``trainer/qwen_trainer.py`` L373-374). The ``vlm-trl`` engine writes ``resized_size`` from the
policy's processor, whose limits are the recipe's ``model.min_pixels``/``model.max_pixels``
(Vision-R1 trains at ``--max_pixels 401408``, ``run_qwen_vision_r1.sh`` L24). A target without one
(a direct call) is smart-resized at ``min_pixels``/``max_pixels`` of the reward, Qwen2.5-VL's
processor defaults unless given, as every perception box reward does
(:func:`~domains.perception.boxes.model_input_size`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from domains.perception.boxes import QWEN_MAX_PIXELS, QWEN_MIN_PIXELS, hungarian_giou, model_input_size
from rewards.base import RewardResult, check_lengths, require, target_of, text_of

#: Step at which the thresholds rise (``step < 1500`` in upstream's reward functions).
SWITCH_STEP = 1500
_BOX_LABEL = re.compile(r'\{"bbox_2d": \[(\d{1,3}|1000), (\d{1,3}|1000), (\d{1,3}|1000), (\d{1,3}|1000)\], "label": "([^"]+)"\}')


def _json_list(text: str) -> Any:
    """Upstream ``parse_json``: drop a leading ```` ```json ```` line and anything from the next fence."""
    lines = text.strip().splitlines()
    if not lines:
        return None
    if lines[0].startswith("```json"):
        text = "\n".join(lines[1:])
    try:
        return json.loads(text.split("```")[0] if "```" in text else text)
    except ValueError:
        return None


def extract_objects(text: str) -> list[tuple[list[int], Any]]:
    """``(box, label)`` pairs Vision-R1 reads: JSON items with a 4-number ``bbox_2d`` (cast to int),
    else a strict regex over ``{"bbox_2d": [..], "label": ".."}``; boxes with ``x1 >= x2`` or
    ``y1 >= y2`` are dropped."""
    out = []
    value = _json_list(text)
    for item in value if isinstance(value, list) else []:
        if not isinstance(item, dict):
            continue
        box = item.get("bbox_2d")
        if isinstance(box, list) and len(box) == 4:
            try:
                box = [int(v) for v in box]
            except (TypeError, ValueError):
                continue
            if box[0] < box[2] and box[1] < box[3]:
                out.append((box, item.get("label")))
    if not out:
        for *coords, label in _BOX_LABEL.findall(text):
            box = [int(v) for v in coords]
            if box[0] < box[2] and box[1] < box[3]:
                out.append((box, label))
    return out


def _threshold(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """``x < low -> 0``, then ``x > high -> 1``, others kept (upstream ``modify_tensor``)."""
    values = values.astype(np.float64).copy()
    values[values < low] = 0.0
    values[values > high] = 1.0
    return values


def _clip_scalar(value: float, low: float, high: float) -> float:
    """Upstream ``modify_list`` on one value."""
    return 0.0 if value < low else 1.0 if value > high else value


class _VisionR1Base:
    """Shared reading of targets and predictions; subclasses score one completion."""

    name = "vision-r1"
    component_names: tuple[str, ...] = ()

    def __init__(self, min_pixels: int = QWEN_MIN_PIXELS, max_pixels: int = QWEN_MAX_PIXELS) -> None:
        self.min_pixels, self.max_pixels = min_pixels, max_pixels

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        return [self.score(text_of(p), target_of(s), getattr(s, "meta", None) or {})
                for p, s in zip(predictions, samples, strict=True)]

    def score(self, text: str, target: Mapping[str, Any], meta: Mapping[str, Any]) -> RewardResult:
        raise NotImplementedError

    def matched_giou(self, text: str, target: Mapping[str, Any]) -> np.ndarray | None:
        """GIoU of the Hungarian-matched pairs, or ``None`` when nothing was detected."""
        detected = extract_objects(text.strip())
        if not detected:
            return None
        objects = require(target, "objects", self.name)
        ids = target.get("label_ids") or {lab: i + 1 for i, lab in enumerate(sorted({str(o["label"]) for o in objects}))}
        ids = {str(k).lower(): int(v) for k, v in ids.items()}
        width, height = (float(v) for v in require(target, "image_size", self.name))
        in_w, in_h = model_input_size(target, self.name, self.min_pixels, self.max_pixels)
        pred = np.array([[b[0] / in_w * width, b[1] / in_h * height, b[2] / in_w * width, b[3] / in_h * height]
                         for b, _ in detected])  # fmt: skip
        pred_cls = [ids.get(str(label).strip().lower(), 0) if isinstance(label, str) else 0 for _, label in detected]
        gt = np.array([[float(v) for v in o["bbox"]] for o in objects]).reshape(-1, 4)
        gt_cls = [ids[str(o["label"]).lower()] for o in objects]
        return hungarian_giou(pred, pred_cls, gt, gt_cls)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), self.name))


class VisionR1Format(_VisionR1Base):
    """``dual_format_reward``: 1.0 when the fence-stripped text is JSON and every dict item with both
    ``bbox_2d`` and ``label`` has a 4-element list box (any other JSON value passes, as upstream);
    for an image with no objects the score is inverted (a JSON answer there scores 0)."""

    name = "vision-r1-format"
    component_names = ("valid_json_boxes",)

    def score(self, text: str, target: Mapping[str, Any], meta: Mapping[str, Any]) -> RewardResult:
        body = re.sub(r"```json\n|\n```", "", text).strip()
        try:
            data, ok = json.loads(body), 1.0
        except ValueError:
            data, ok = None, 0.0
        for item in data if isinstance(data, list) else []:
            if isinstance(item, dict) and "bbox_2d" in item and "label" in item:
                box = item["bbox_2d"]
                if not (isinstance(box, list) and len(box) == 4):
                    ok = 0.0
        has_objects = len(require(target, "objects", self.name)) > 0
        return RewardResult(ok if has_objects else 1.0 - ok, {"valid_json_boxes": ok})


class VisionR1Precision(_VisionR1Base):
    """``precision_reward``: mean GIoU of the matched pairs after thresholding.

    Thresholds ``(low, high)``: ``(0.5, 0.75)`` before step 1500, ``(0.75, 0.9)`` after, ``(0, 1)``
    without a step. No detection scores 0, or 1 for an image with no objects; detections on an
    image with no objects score 0 here (upstream's ``torch.cat`` of no boxes raises).
    """

    name = "vision-r1-precision"
    component_names = ("mean_giou", "num_matched")

    def score(self, text: str, target: Mapping[str, Any], meta: Mapping[str, Any]) -> RewardResult:
        empty = not require(target, "objects", self.name)
        giou = self.matched_giou(text, target)
        if giou is None or empty:
            why = "detections on an image with no objects" if empty and giou is not None else (
                None if empty else "no detection read from the output")
            return RewardResult(float(empty and giou is None), {"mean_giou": 0.0, "num_matched": 0.0}, why)
        step = meta.get("step")
        low, high = (0.0, 1.0) if step is None else (0.5, 0.75) if step < SWITCH_STEP else (0.75, 0.9)
        score = float(_threshold(giou, low, high).mean())
        return RewardResult(score, {"mean_giou": float(giou.mean()), "num_matched": float(giou.size)})


class VisionR1Recall(_VisionR1Base):
    """``recall_reward``: matched pairs whose GIoU passes 0.5 (0.75 from step 1500), over the number
    of objects, then clipped as ``x < 0.5 -> 0, x > 0.75 -> 1`` when a step is given.

    Upstream divides by zero (and stops training) for detections on an image with no objects; here
    that case scores 0 with the reason.
    """

    name = "vision-r1-recall"
    component_names = ("recall", "true_positives")

    def score(self, text: str, target: Mapping[str, Any], meta: Mapping[str, Any]) -> RewardResult:
        n_objects = len(require(target, "objects", self.name))
        giou = self.matched_giou(text, target)
        if giou is None:
            return RewardResult(float(n_objects == 0), {"recall": 0.0, "true_positives": 0.0},
                                "no detection read from the output" if n_objects else None)
        if n_objects == 0:
            return RewardResult(0.0, {"recall": 0.0, "true_positives": 0.0}, "detections on an image with no objects")
        step = meta.get("step")
        cut = 0.5 if step is None or step < SWITCH_STEP else 0.75
        true_positives = float(_threshold(giou, cut, cut).sum())
        recall = true_positives / n_objects
        score = _clip_scalar(recall, 0.0, 1.0) if step is None else _clip_scalar(recall, 0.5, 0.75)
        return RewardResult(score, {"recall": recall, "true_positives": true_positives})
