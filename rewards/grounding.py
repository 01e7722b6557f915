"""Grounding: box IoU and point-in-box, with boxes read from Qwen-VL's output formats.

Boxes are ``[x1, y1, x2, y2]`` in one pixel frame. Qwen2.5-VL writes absolute pixels of the
``smart_resize``-d image; Qwen3-VL (and Qwen-VL v1) write 0-1000 relative coordinates:
:func:`box_from_text` converts with ``frame="relative-1000"`` and the image size. A
``Prediction`` that already carries ``bbox``/``point`` in original pixels is used as is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rewards.base import RewardResult, SampleReward, require, text_of
from rewards.parsing import ParseError, answer_span, parse_qwen_box, parse_qwen_point
from zoo_common.coords import to_original

FRAMES = ("absolute", "relative-1000", "relative-1")


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two ``[x1, y1, x2, y2]`` boxes (corners in either order)."""
    ax1, ax2 = sorted((a[0], a[2]))
    ay1, ay2 = sorted((a[1], a[3]))
    bx1, bx2 = sorted((b[0], b[2]))
    by1, by2 = sorted((b[1], b[3]))
    inter = max(0.0, min(ax2, bx2) - max(ax1, bx1)) * max(0.0, min(ay2, by2) - max(ay1, by1))
    union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter
    return inter / union if union > 0 else 0.0


def point_in_box(point: Sequence[float], box: Sequence[float]) -> bool:
    """True when ``point`` lies inside ``box`` or on its edge."""
    x1, x2 = sorted((box[0], box[2]))
    y1, y2 = sorted((box[1], box[3]))
    return x1 <= point[0] <= x2 and y1 <= point[1] <= y2


def click_point(prediction: Any) -> list[float] | None:
    """Where a parsed prediction clicks: its ``point``, else the centre of its ``bbox``, else ``None``.

    A model that answers with a box clicks its centre, as the ScreenSpot evaluations and GUI-G1's
    ``hit`` reward read it (InfiGUI-R1 issue #9).
    """
    point = getattr(prediction, "point", None)
    if point is not None:
        return [float(v) for v in point]
    box = getattr(prediction, "bbox", None)
    if box is not None:
        return [(box[0] + box[2]) / 2, (box[1] + box[3]) / 2]
    return None


#: Reward-side frame names -> :mod:`zoo_common.coords` frames.
_COORD_FRAMES = {"absolute": "original", "relative-1000": "norm1000", "relative-1": "norm1"}


def to_pixels(values: Sequence[float], frame: str, image_size: Sequence[int] | None) -> list[float]:
    """Convert x/y pairs from ``frame`` to absolute pixels of ``image_size`` = (width, height)."""
    if frame not in FRAMES:
        raise ValueError(f"frame must be one of {FRAMES}, got {frame!r}")
    if frame == "absolute":
        return [float(v) for v in values]
    if image_size is None:
        raise ValueError(f"frame {frame!r} needs the image size (target['image_size'] = [width, height])")
    return to_original(values, _COORD_FRAMES[frame], image_size)


def box_from_text(text: str, frame: str = "absolute", image_size: Sequence[int] | None = None) -> list[float]:
    """A box from Qwen output (JSON ``bbox_2d``, bare list, ``(x1,y1),(x2,y2)``, ``<|box_start|>``)."""
    return to_pixels(parse_qwen_box(text), frame, image_size)


def _predicted(prediction: Any, attr: str, parse: Callable[[str], list[float]], tag: str, frame: str,
               size: Sequence[int] | None) -> list[float]:
    value = getattr(prediction, attr, None)
    if value is not None:
        return [float(v) for v in value]
    return to_pixels(parse(answer_span(text_of(prediction), tag)), frame, size)


class BoxIoU(SampleReward):
    """IoU with ``target["bbox"]``; with ``threshold`` set, 1.0 when IoU >= threshold else 0.0.

    ``frame`` says how the model writes boxes (see :data:`FRAMES`); ``target["image_size"]``
    = ``[width, height]`` is needed for relative frames.
    """

    component_names = ("iou",)

    def __init__(self, threshold: float | None = None, frame: str = "absolute", tag: str = "answer",
                 name: str = "box-iou") -> None:
        if frame not in FRAMES:
            raise ValueError(f"frame must be one of {FRAMES}, got {frame!r}")
        self.threshold, self.frame, self.tag, self.name = threshold, frame, tag, name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        ref = [float(v) for v in require(target, "bbox", self.name)]
        box = _predicted(prediction, "bbox", parse_qwen_box, self.tag, self.frame, target.get("image_size"))
        overlap = iou(box, ref)
        score = overlap if self.threshold is None else float(overlap >= self.threshold)
        return RewardResult(score, {"iou": overlap})


class PointInBox(SampleReward):
    """1.0 when the predicted click lands in ``target["bbox"]`` (GUI grounding, GUI-G1/SE-GUI).

    The click is the predicted point, or the centre of a predicted box when the model boxed.
    """

    component_names = ("hit",)

    def __init__(self, frame: str = "absolute", tag: str = "answer", name: str = "point-in-box") -> None:
        if frame not in FRAMES:
            raise ValueError(f"frame must be one of {FRAMES}, got {frame!r}")
        self.frame, self.tag, self.name = frame, tag, name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        ref = [float(v) for v in require(target, "bbox", self.name)]
        point = self._click(prediction, target.get("image_size"))
        hit = float(point_in_box(point, ref))
        return RewardResult(hit, {"hit": hit}, None if hit else f"click {point} outside {ref}")

    def _click(self, prediction: Any, size: Sequence[int] | None) -> list[float]:
        parsed = click_point(prediction)
        if parsed is not None:
            return parsed
        text = answer_span(text_of(prediction), self.tag)
        try:
            return to_pixels(parse_qwen_point(text), self.frame, size)
        except ParseError:
            b = to_pixels(parse_qwen_box(text), self.frame, size)
            return [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2]
