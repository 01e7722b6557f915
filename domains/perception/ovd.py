"""Open-vocabulary detection: VLM-R1's mAP rewards and OVDEval's NMS-AP, both COCO mAP through pycocotools.

Sources:

* om-ai-lab/VLM-R1 @ 90052f47 ``src/open-r1-multimodal/src/open_r1/grpo_jsonl.py``: ``calculate_map``,
  ``map_reward``, ``od_reward`` (``accu_reward_method`` ``od_ap`` / ``od_ap50``) and ``odLength_reward``
  (``odLength``, the OVD model's reward, with ``format``). Their vendored ``utils/pycocotools`` differs
  from pycocotools 2.0.11 only in taking a dict and printing less, so the numbers are pycocotools'.
* om-ai-lab/OVDEval @ 2ba0aa95 ``eval.py``: ``nms_threaded`` (per image, each ground-truth box keeps
  the highest-scoring prediction of IoU > 0.5 with it, of any label, and removes the others unless
  another ground truth keeps them) then ``cal_map`` (COCO bbox evaluation); ``Evaluation.md``: the
  annotation format (COCO json whose ``images`` carry ``text`` and ``neg_text`` labels).

The reward's quirks, kept: boxes are read only from a fenced ```` ```json ... ``` ```` block inside the
*last* ``<answer>`` (a bare JSON list reads as no boxes); every predicted box scores 1.0; a box whose
label is not a ground-truth label (or that is malformed) is dropped before the mAP but still counts
in ``odLength``'s ``gt / pred`` length factor; no predictions and no ground truth is 1.0, and so is the
answer ``None`` on an image without objects.

OVDEval's scores keep pycocotools' own reading, as its ``eval.py`` does: a ground-truth annotation
whose ``id`` is 0 can never be matched (COCOeval stores the matched id, and 0 means "no match").

Frames: targets are in original pixels (the loaders' convention); predictions are mapped there from
the model's input frame (``resized_size`` or ``smart_resize``, as the REC reward). IoU is unchanged by
scaling each axis, so the mAP equals upstream's, which compares both in the model's frame.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from domains.perception.boxes import QWEN_MAX_PIXELS, QWEN_MIN_PIXELS, model_input_size, target_size
from rewards.base import RewardResult, SampleReward, require, text_of

#: ``score_type`` of VLM-R1's ``calculate_map``: index into COCOeval's ``stats``.
AP, AP50 = 0, 1


def coco_bbox_stats(dataset: Mapping[str, Any], detections: list[dict[str, Any]],
                    image_ids: Sequence[Any] | None = None) -> np.ndarray:  # fmt: skip
    """COCOeval's 12 ``stats`` (AP, AP50, AP75, ...) of ``detections`` against a COCO ``dataset`` dict.

    ``image_ids`` restricts the evaluation to those images (``params.imgIds``); pycocotools' progress
    prints are swallowed. ``detections`` must not be empty (pycocotools cannot load an empty result).
    """
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        truth = COCO()
        truth.dataset = json.loads(json.dumps(dataset))  # a private copy: pycocotools writes into it
        truth.createIndex()
        result = truth.loadRes(json.loads(json.dumps(detections)))
        evaluation = COCOeval(truth, result, "bbox")
        if image_ids is not None:
            evaluation.params.imgIds = sorted(image_ids)
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return evaluation.stats


def _xywh(box: Sequence[float]) -> list[float]:
    return [box[0], box[1], box[2] - box[0], box[3] - box[1]]


def vlm_r1_map(predicted: list[Any], truth: list[dict[str, Any]], score_type: int = AP) -> float:
    """VLM-R1's ``calculate_map``: one 2048x2048 image, categories = the ground-truth labels in order.

    ``truth`` and ``predicted`` hold ``{"bbox_2d": [x1, y1, x2, y2], "label": str}``; a prediction that
    cannot be read (unknown label, missing key, bad box) is skipped, as upstream's bare ``except``.
    """
    cats: dict[str, int] = {}
    dataset: dict[str, Any] = {"images": [{"id": 0, "width": 2048, "height": 2048, "file_name": "image_0.jpg"}],
                               "categories": [], "annotations": []}  # fmt: skip
    for i, obj in enumerate(truth):
        if obj["label"] not in cats:
            cats[obj["label"]] = len(cats)
            dataset["categories"].append({"id": cats[obj["label"]], "name": obj["label"]})
        box = obj["bbox_2d"]
        dataset["annotations"].append({"id": i + 1, "image_id": 0, "category_id": cats[obj["label"]],
                                       "bbox": _xywh(box), "area": (box[2] - box[0]) * (box[3] - box[1]),
                                       "iscrowd": 0})  # fmt: skip
    detections = []
    for obj in predicted:
        try:
            box = obj["bbox_2d"]
            detections.append({"image_id": 0, "category_id": cats[obj["label"]], "bbox": _xywh(box), "score": 1.0,
                               "area": (box[2] - box[0]) * (box[3] - box[1])})  # fmt: skip
        except Exception:  # noqa: BLE001, S112 (upstream's bare except: an unreadable prediction is skipped)
            continue
    if not detections:
        return 0.0
    return float(coco_bbox_stats(dataset, detections)[score_type])


def fenced_json_list(answer: str) -> list[Any]:
    """The items of the last ```` ```json ... ``` ```` block of ``answer``, or ``[]`` (``map_reward``'s reading)."""
    blocks = re.findall(r"```json(.*?)```", answer, re.DOTALL)
    if not blocks:
        return []
    try:
        return list(json.loads(blocks[-1].strip()))
    except (ValueError, TypeError):
        return []


class VlmR1OvdReward(SampleReward):
    """VLM-R1's OVD accuracy: ``od_ap`` (``score_type=AP``), ``od_ap50`` (``AP50``) or ``odLength``.

    ``odLength`` multiplies the mAP by ``1`` when the answer has at most as many boxes as the ground
    truth, else ``#gt / #pred``. Target: ``{"objects": [{"bbox", "label"}], "image_size": [w, h]}``
    (optional ``resized_size``); see the module docstring for the frames and the kept quirks.
    """

    component_names = ("map", "length_factor", "num_pred")

    def __init__(self, score_type: int = AP, length_penalty: bool = False, name: str = "vlm-r1-ovd-ap",
                 min_pixels: int = QWEN_MIN_PIXELS, max_pixels: int = QWEN_MAX_PIXELS) -> None:  # fmt: skip
        if score_type not in (AP, AP50):
            raise ValueError(f"score_type must be {AP} (mAP) or {AP50} (mAP@50), got {score_type}")
        self.score_type, self.length_penalty, self.name = score_type, length_penalty, name
        self.min_pixels, self.max_pixels = min_pixels, max_pixels

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        truth = [{"bbox_2d": [float(v) for v in o["bbox"]], "label": o["label"]} for o in require(target, "objects", self.name)]
        answers = re.findall(r"<answer>(.*?)</answer>", text_of(prediction), re.DOTALL)
        if not answers:
            return RewardResult(0.0, {"map": 0.0, "length_factor": 0.0, "num_pred": 0.0}, "no <answer>...</answer>")
        answer = answers[-1].strip()
        if not truth and answer == "None":
            return RewardResult(1.0, {"map": 1.0, "length_factor": 1.0, "num_pred": 0.0})
        predicted = [self._to_original(item, target) for item in fenced_json_list(answer)]
        if predicted and truth:
            score = vlm_r1_map(predicted, truth, self.score_type)
        else:
            score = float(not predicted and not truth)
        factor = 1.0 if not self.length_penalty or len(truth) >= len(predicted) else len(truth) / len(predicted)
        return RewardResult(score * factor, {"map": score, "length_factor": factor, "num_pred": float(len(predicted))})

    def _to_original(self, item: Any, target: Mapping[str, Any]) -> Any:
        """``item`` with its ``bbox_2d`` scaled from the model's frame to original pixels, when it has one."""
        box = item.get("bbox_2d") if isinstance(item, dict) else None
        if not isinstance(box, list) or len(box) != 4 or not all(isinstance(v, int | float) for v in box):
            return item  # left as written: vlm_r1_map skips what it cannot read
        width, height = target_size(target, "image_size", self.name)
        in_w, in_h = model_input_size(target, self.name, self.min_pixels, self.max_pixels)
        sx, sy = width / in_w, height / in_h
        return {**item, "bbox_2d": [box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy]}


# ---------------------------------------------------------------------------------------------
# OVDEval (om-ai-lab/OVDEval eval.py)
# ---------------------------------------------------------------------------------------------


def _iou_xywh(box: Sequence[float], boxes: np.ndarray) -> np.ndarray:
    """OVDEval's ``calculate_iou``: one ``[x, y, w, h]`` box against (N, 4), 0 where the union is 0."""
    x1, y1, w1, h1 = box
    x2, y2, w2, h2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    inter = np.maximum(0, np.minimum(x1 + w1, x2 + w2) - np.maximum(x1, x2)) * \
        np.maximum(0, np.minimum(y1 + h1, y2 + h2) - np.maximum(y1, y2))  # fmt: skip
    union = w1 * h1 + w2 * h2 - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union == 0, 0, inter / union)


def nms_with_ground_truth(truth: list[dict[str, Any]], detections: list[dict[str, Any]],
                          iou_threshold: float = 0.5) -> list[dict[str, Any]]:  # fmt: skip
    """OVDEval's ``nms_threaded`` for one image (COCO ``bbox`` = ``[x, y, w, h]``, labels ignored)."""
    if not detections:
        return []
    boxes = np.array([d["bbox"] for d in detections], dtype=np.float64)
    scores = np.array([d["score"] for d in detections], dtype=np.float64)
    keep, remove = [], []
    for gt in truth:
        hits = np.where(_iou_xywh(gt["bbox"], boxes) > iou_threshold)[0].tolist()
        if hits:
            ranked = [hits[i] for i in np.argsort(scores[hits])[::-1].tolist()]
            keep.append(ranked[0])
            remove += ranked[1:]
    dropped = {i for i in remove if i not in keep}
    return [d for i, d in enumerate(detections) if i not in dropped]


def ovdeval_scores(dataset: Mapping[str, Any], detections: list[dict[str, Any]],
                   image_ids: Sequence[Any] | None = None, iou_threshold: float = 0.5) -> dict[str, float]:  # fmt: skip
    """OVDEval's NMS-AP: NMS against the ground truth per image, then COCO AP over ``image_ids``.

    Returns ``nms_ap`` (AP@[.5:.95], the number OVDEval reports), ``ap50``, ``ap75`` and the
    detection counts before and after NMS. No detection at all is AP 0.
    """
    truth: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for ann in dataset["annotations"]:
        truth[ann["image_id"]].append(ann)
    per_image: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for det in detections:
        per_image[det["image_id"]].append(det)
    kept = [d for image, dets in per_image.items() for d in nms_with_ground_truth(truth[image], dets, iou_threshold)]
    counts = {"detections_before_nms": float(len(detections)), "detections_after_nms": float(len(kept))}
    if not kept:
        return {"nms_ap": 0.0, "ap50": 0.0, "ap75": 0.0, **counts}
    stats = coco_bbox_stats(dataset, kept, image_ids)
    return {"nms_ap": float(stats[0]), "ap50": float(stats[1]), "ap75": float(stats[2]), **counts}
