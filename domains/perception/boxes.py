"""Box maths of the perception rewards, each in the convention its paper's code uses.

Three IoU conventions occur in the released code and they give different numbers on the same
boxes, so each reward names the one it uses:

* :func:`pixel_iou` - VLM-R1 (``qwen_module.iou_reward``): right/bottom edges exclusive, pixels
  counted inclusively (``min(x2) - 1 - max(x1) + 1``), union from the plain areas;
* :func:`area_iou` - Visual-RFT (``grpo.py::calculate_iou``): continuous areas, touching boxes 0;
* :func:`generalized_iou` - Vision-R1 (``griffon/coor_utils.py::generalized_box_iou``, DETR's).

Boxes are ``[x1, y1, x2, y2]``. :func:`model_input_size` gives the frame a reward maps the model's
boxes from (the smart-resized image), read from the target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rewards.base import require
from zoo_common.coords import resized_size_for

Box = Sequence[float]

#: Qwen2.5-VL processor defaults, which VLM-R1's runs keep (``min_pixels 3136``, ``max_pixels 12845056``).
QWEN_MIN_PIXELS, QWEN_MAX_PIXELS = 3136, 12845056


def target_size(target: Mapping[str, Any], key: str, reward: str) -> tuple[float, float]:
    """``target[key]`` as ``(width, height)``, both positive, or a ``ValueError`` naming the reward."""
    value = require(target, key, reward)
    if not isinstance(value, (list, tuple)) or len(value) != 2 or min(value) <= 0:
        raise ValueError(f"reward {reward!r} needs target[{key!r}] = [width, height] > 0, got {value!r}")
    return float(value[0]), float(value[1])


def model_input_size(target: Mapping[str, Any], reward: str, min_pixels: int = QWEN_MIN_PIXELS,
                     max_pixels: int = QWEN_MAX_PIXELS) -> tuple[float, float]:  # fmt: skip
    """(width, height) of the image the model saw: ``target["resized_size"]``, else ``smart_resize``."""
    if target.get("resized_size") is not None:
        return target_size(target, "resized_size", reward)
    width, height = target_size(target, "image_size", reward)
    return tuple(float(v) for v in resized_size_for((width, height), 28, min_pixels, max_pixels))  # type: ignore[return-value]


def pixel_iou(a: Box, b: Box) -> float:
    """IoU in VLM-R1's pixel convention (see module docstring); ``ZeroDivisionError`` on a zero union."""
    ix1, iy1 = max(a[0], b[0]), max(a[1], b[1])
    ix2, iy2 = min(a[2] - 1, b[2] - 1), min(a[3] - 1, b[3] - 1)
    inter = (ix2 - ix1 + 1) * (iy2 - iy1 + 1) if ix1 < ix2 and iy1 < iy2 else 0
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter) / union


def area_iou(a: Box, b: Box) -> float:
    """IoU of continuous areas; 0 when the boxes do not overlap with positive area."""
    ix1, iy1, ix2, iy2 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    if ix2 <= ix1 or iy2 <= iy1:
        return 0.0
    inter = (ix2 - ix1) * (iy2 - iy1)
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def generalized_iou_matrix(boxes1: np.ndarray, boxes2: np.ndarray) -> np.ndarray:
    """(N, M) generalized IoU (Rezatofighi et al., CVPR 2019) of (N, 4) and (M, 4) boxes.

    As DETR's ``generalized_box_iou``: the enclosing box's area is in the denominator, so two
    identical zero-area boxes give NaN (DETR and Vision-R1 let that through; so do we).
    """
    boxes1, boxes2 = np.asarray(boxes1, dtype=np.float64), np.asarray(boxes2, dtype=np.float64)
    if (boxes1[:, 2:] < boxes1[:, :2]).any() or (boxes2[:, 2:] < boxes2[:, :2]).any():
        raise ValueError("generalized IoU needs boxes with x2 >= x1 and y2 >= y1")
    area1 = np.prod(boxes1[:, 2:] - boxes1[:, :2], axis=1)
    area2 = np.prod(boxes2[:, 2:] - boxes2[:, :2], axis=1)
    lt = np.maximum(boxes1[:, None, :2], boxes2[None, :, :2])
    rb = np.minimum(boxes1[:, None, 2:], boxes2[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=2)
    union = area1[:, None] + area2[None, :] - inter
    enclose = np.prod(np.clip(np.maximum(boxes1[:, None, 2:], boxes2[None, :, 2:])
                              - np.minimum(boxes1[:, None, :2], boxes2[None, :, :2]), 0, None), axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return inter / union - (enclose - union) / enclose


def hungarian_giou(pred_boxes: np.ndarray, pred_classes: Sequence[int], gt_boxes: np.ndarray,
                   gt_classes: Sequence[int]) -> np.ndarray:
    """GIoU of the pairs that Vision-R1's ``BoxPriorMatcher`` matches, in prediction order.

    The cost of pairing prediction ``i`` with ground truth ``j`` is the L1 distance of the box
    corners (unnormalised pixels), minus 1 when the classes agree (one-hot class "probabilities"),
    minus their GIoU; :func:`scipy.optimize.linear_sum_assignment` finds the cheapest matching,
    ``min(N, M)`` pairs. Returns those pairs' GIoU (not IoU: the paper's "IoU" is the GIoU).
    """
    from scipy.optimize import linear_sum_assignment

    giou = generalized_iou_matrix(pred_boxes, gt_boxes)
    l1 = np.abs(np.asarray(pred_boxes, dtype=np.float64)[:, None, :] - np.asarray(gt_boxes, dtype=np.float64)[None]).sum(-1)
    same_class = np.asarray(pred_classes)[:, None] == np.asarray(gt_classes)[None, :]
    rows, cols = linear_sum_assignment(l1 - same_class.astype(np.float64) - giou)
    return giou[rows, cols]
