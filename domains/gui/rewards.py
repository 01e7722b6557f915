"""GUI rewards, computed exactly as the authors' released code computes them.

* ``gui-g1`` — GUI-G1 (Yuqi-Zhou/GUI-G1, ``src/open-r1-multimodal/src/open_r1/grpo_rec.py``,
  functions ``hit_reward``, ``iou_reward``, ``box_reward``, trained with ``--reward_funcs iou hit box``,
  weights 1): ``hit + 0.25 * IoU + 0.125 * harmonic edge closeness``, maximum 1.375.
* ``ui-s1`` — UI-S1 (X-PLUG/MobileAgent, ``UI-S1/verl/utils/reward_score/gui_traj.py::
  gui_action_match_compute_score`` with ``gui_utils/utils.py::check_response_match``):
  ``0.1 * format + 0.9 * action`` with action tiers 1 / 0.5 / 0.1.

The authors' quirks are kept on purpose, because a reward that differs from the paper's trains a
different policy; each one is named where it happens. CRAFT-GUI has no public code and its reward
is not documented beyond "rule-based + model-judged", so no ``craft-gui`` reward is registered
(see ``domains/gui/README.md``).
"""

from __future__ import annotations

import ast
import copy
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rewards.base import RewardResult, check_lengths, target_of, text_of
from rewards.base import register as register_reward
from rewards.parsing import ParseError

# ---------------------------------------------------------------------------------------------
# GUI-G1
# ---------------------------------------------------------------------------------------------

#: Weights of the three terms in grpo_rec.py (``reward += 0.25*iou``, ``0.125 * 4/(...)``).
GUI_G1_IOU_WEIGHT = 0.25
GUI_G1_BOX_WEIGHT = 0.125


def _strip_json_fence(text: str) -> str:
    """GUI-G1's ``parse_json``: drop everything up to a line that is exactly ```` ```json ````
    and everything after the next ```` ``` ````; text without such a line is returned unchanged."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line == "```json":
            return "\n".join(lines[i + 1 :]).split("```")[0]
    return text


def parse_gui_g1_bbox(text: str) -> Any:
    """The ``bbox_2d`` value GUI-G1's reward reads: ``ast.literal_eval(fence-stripped)[0]['bbox_2d']``.

    Stricter than the inference parser on purpose: a bare ``{"bbox_2d": ...}`` dict or a bare list
    of numbers scores 0 in the authors' training, so it does here. The value is returned as the
    model wrote it (not converted to float): a box of strings fails the arithmetic, as upstream.
    """
    try:
        value = ast.literal_eval(_strip_json_fence(text))
    except Exception as err:  # noqa: BLE001 - literal_eval raises ValueError, SyntaxError, TypeError, MemoryError...
        raise ParseError(f"not a Python/JSON literal ({type(err).__name__})") from None
    try:
        return value[0]["bbox_2d"]
    except Exception as err:  # noqa: BLE001 - upstream catches everything here too (a dict has no [0])
        raise ParseError(f"expected [{{'bbox_2d': [...]}}, ...], got {type(value).__name__} ({err!r})") from None


def gui_g1_hit(pred: Any, gt: Sequence[float]) -> float:
    """1.0 when the centre of ``pred`` lies inside ``gt`` (borders included), else 0."""
    x, y = (pred[0] + pred[2]) / 2, (pred[1] + pred[3]) / 2
    return 1.0 if gt[0] <= x <= gt[2] and gt[1] <= y <= gt[3] else 0.0


def gui_g1_iou(pred: Any, gt: Sequence[float]) -> float:
    """IoU with GUI-G1's pixel convention (unweighted).

    The intersection treats right/bottom edges as exclusive and counts pixels inclusively
    (``min(x2) - 1 - max(x1) + 1``), and needs ``max(x1) < min(x2) - 1`` to be non-empty; the union
    uses the plain areas. So identical boxes score slightly below 1 only when the areas are
    fractional, and a one-pixel-wide overlap counts as none.
    """
    ix1, iy1 = max(pred[0], gt[0]), max(pred[1], gt[1])
    ix2, iy2 = min(pred[2] - 1, gt[2] - 1), min(pred[3] - 1, gt[3] - 1)
    inter = (ix2 - ix1 + 1) * (iy2 - iy1 + 1) if ix1 < ix2 and iy1 < iy2 else 0
    union = (pred[2] - pred[0]) * (pred[3] - pred[1]) + (gt[2] - gt[0]) * (gt[3] - gt[1]) - inter
    return float(inter) / union


def gui_g1_box(pred: Any, gt: Sequence[float], image_size: Sequence[float]) -> float:
    """Harmonic mean of the four per-edge closenesses ``1 - |gt_i - pred_i| / side`` (unweighted).

    ``side`` is the original image width for x edges and height for y edges. An edge exactly one
    image-side away makes a closeness of 0 and upstream's ZeroDivisionError a 0 reward; edges
    further off give negative closenesses, which upstream does not clip and neither do we.
    """
    width, height = image_size
    cx1 = 1 - abs(gt[0] - pred[0]) / width
    cy1 = 1 - abs(gt[1] - pred[1]) / height
    cx2 = 1 - abs(gt[2] - pred[2]) / width
    cy2 = 1 - abs(gt[3] - pred[3]) / height
    return 4 / (1 / cx1 + 1 / cx2 + 1 / cy1 + 1 / cy2)


def gui_g1_components(text: str, gt_bbox: Sequence[float], image_size: Sequence[float]) -> RewardResult:
    """Score one completion: components ``hit``, ``iou`` (×0.25) and ``box`` (×0.125), summed.

    Each term fails on its own, as upstream's three reward functions each wrap their body in
    ``try/except Exception: pass``: a degenerate box (zero union) zeroes ``iou`` but keeps ``hit``.
    """
    try:
        pred = parse_gui_g1_bbox(text)
    except ParseError as err:
        return RewardResult(0.0, {"hit": 0.0, "iou": 0.0, "box": 0.0}, f"parse failure: {err}")
    terms = {
        "hit": lambda: gui_g1_hit(pred, gt_bbox),
        "iou": lambda: GUI_G1_IOU_WEIGHT * gui_g1_iou(pred, gt_bbox),
        "box": lambda: GUI_G1_BOX_WEIGHT * gui_g1_box(pred, gt_bbox, image_size),
    }
    components, errors = {}, []
    for name, term in terms.items():
        try:
            components[name] = float(term())
        except Exception as err:  # noqa: BLE001 - mirrors upstream's per-term `except Exception`
            components[name] = 0.0
            errors.append(f"{name}: {type(err).__name__}: {err}")
    return RewardResult(sum(components.values()), components, "; ".join(errors) or None)


class GuiG1Reward:
    """GUI-G1's training reward over raw completions.

    Target: ``{"bbox": [x1, y1, x2, y2], "image_size": [width, height]}``. GUI-G1 compares the box
    the model wrote with the ground truth directly: its images go in at ``max_pixels=12845056``, so
    the smart-resized frame equals the original image up to rounding to 28 px. With
    ``model_frame=True`` and a ``resized_size`` in the target, the ground truth (box and image size)
    is first scaled into the smart-resized frame — needed when training at a smaller ``max_pixels``
    than the paper; this is our addition and off by default.
    """

    name = "gui-g1"

    def __init__(self, model_frame: bool = False) -> None:
        self.model_frame = model_frame

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        return [self._one(text_of(p), target_of(s)) for p, s in zip(predictions, samples)]

    def _one(self, text: str, target: Mapping[str, Any]) -> RewardResult:
        gt, size = _gui_g1_truth(target)
        if self.model_frame and target.get("resized_size") is not None:
            rw, rh = target["resized_size"]
            sx, sy = rw / size[0], rh / size[1]
            gt = [gt[0] * sx, gt[1] * sy, gt[2] * sx, gt[3] * sy]
            size = [rw, rh]
        return gui_g1_components(text, gt, size)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.model_frame == self.model_frame

    def __hash__(self) -> int:
        return hash((self.name, self.model_frame))


def _gui_g1_truth(target: Mapping[str, Any]) -> tuple[list[float], list[float]]:
    bbox, size = target.get("bbox"), target.get("image_size")
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4:
        raise ValueError(f"gui-g1 needs target['bbox'] = [x1, y1, x2, y2] in original pixels, got {bbox!r}")
    if not isinstance(size, (list, tuple)) or len(size) != 2 or min(size) <= 0:
        raise ValueError(f"gui-g1 needs target['image_size'] = [width, height] (> 0), got {size!r}")
    return [float(v) for v in bbox], [float(v) for v in size]


# ---------------------------------------------------------------------------------------------
# UI-S1
# ---------------------------------------------------------------------------------------------

#: gui_utils/utils.py constants.
BBOX_ENLARGE_FACTOR = 1.2
POINT_DISTANCE_THRESHOLD = 0.04
#: UI-S1's resize limits (UI-S1/x/qwen/image.py update_image_size_: factor 28, 1..12800 tokens).
UI_S1_MIN_PIXELS = 28 * 28
UI_S1_MAX_PIXELS = 12800 * 28 * 28


def parse_ui_s1_response(text: str) -> tuple[str | None, Any]:
    """``(think, action)`` as UI-S1's ``JsonFormat.parse_response`` reads them.

    First ``<think>...</think>`` and ``<action>...</action>`` (non-greedy, stripped); the action is
    ``json.loads``-ed strictly (no Python literals, no fence). A missing or invalid action raises
    :class:`ParseError` — upstream raises too, which zeroes *both* the format and action scores.
    Coordinates written as location tokens (:mod:`domains.gui.location_tokens`) are read as their pixels.
    """
    from domains.gui.location_tokens import decode

    text = decode(text)
    think = re.search(r"<think>(.*?)</think>", text, re.DOTALL)
    action = re.search(r"<action>(.*?)</action>", text, re.DOTALL)
    if action is None:
        raise ParseError("no <action>...</action> in the output")
    try:
        value = json.loads(action.group(1).strip())
    except ValueError as err:
        raise ParseError(f"<action> is not valid JSON: {err}") from None
    return (think.group(1).strip() if think else None), value


def _normalise(action: Any, width: float, height: float, box_lists: bool) -> Any:
    """upstream ``norm_coordinate``: divide coordinates (and candidate boxes) by the frame size.

    Upstream normalises ``candidate_bbox`` only when it has exactly 4 items — a single flat box,
    as UI-S1's RL data builds it (``rl_dataset.py``: ``candidate_bbox = action_content['bbox']``).
    A *list* of boxes (the AndroidControl evaluation file) is left in pixels, and a list of
    exactly four boxes raises. ``box_lists=True`` normalises every box of a list instead, as UI-S1's
    evaluation script (``evaluation/qwenvl_utils.py``) does.
    """
    if "candidate_bbox" in action:
        boxes = action["candidate_bbox"]
        if box_lists and boxes and isinstance(boxes[0], (list, tuple)):
            action["candidate_bbox"] = [[b[0] / width, b[1] / height, b[2] / width, b[3] / height] for b in boxes]
        elif len(boxes) == 4:
            x1, y1, x2, y2 = boxes
            action["candidate_bbox"] = [[x1 / width, y1 / height, x2 / width, y2 / height]]
    for key in ("coordinate", "coordinate2"):
        if key in action:
            action[key] = [action[key][0] / width, action[key][1] / height]
    return action


def _text_match(pred: str, gt: str) -> bool:
    """Case-insensitive containment either way (upstream ``check_text`` with ``text_retrict=False``)."""
    pred, gt = pred.lower().strip(), gt.lower().strip()
    return pred in gt or gt in pred


def swipe_direction(start: Sequence[float], end: Sequence[float]) -> str:
    """Dominant-axis direction of a finger move; ties go vertical, ``dy == 0`` reads as ``up``."""
    dx, dy = end[0] - start[0], end[1] - start[1]
    if abs(dx) > abs(dy):
        return "right" if dx > 0 else "left"
    return "down" if dy > 0 else "up"


def _enlarge(box: Sequence[float], factor: float = BBOX_ENLARGE_FACTOR) -> tuple[float, float, float, float]:
    """Scale a box about its centre (same float operations as upstream's numpy ``enlarge_bbox``)."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    w, h = (box[2] - box[0]) * factor, (box[3] - box[1]) * factor
    return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2


def _click_hits(click: Sequence[float], boxes: Sequence[Sequence[float]], gt_point: Sequence[float] | None) -> bool:
    """Inside any ×1.2-enlarged candidate box, else within 0.04 (normalised L2) of the GT point."""
    for box in boxes:
        if len(box) < 4:
            raise ValueError(f"candidate box {box!r} needs 4 numbers")
        x1, y1, x2, y2 = _enlarge(box)
        if x1 <= click[0] <= x2 and y1 <= click[1] <= y2:
            return True
    if gt_point is not None:
        dx, dy = gt_point[0] - click[0], gt_point[1] - click[1]
        return math.sqrt(dx * dx + dy * dy) <= POINT_DISTANCE_THRESHOLD
    return False


def check_action_match(
    pred: Any, gt: dict[str, Any], size: Sequence[float], resized: Sequence[float], box_lists: bool = False
) -> tuple[bool, bool]:
    """``(type_match, extract_match)`` of a predicted action against ``check_options``.

    Predicted coordinates are normalised by the *resized* frame (what the model saw), ground truth
    by the *original* size. Rules (upstream ``check_response_match``): wait/terminate — name only;
    system_button — case-insensitive button; type/answer/key — the prediction must be ``type``
    (even for ``answer`` and ``key``), text containment; open — text containment; swipe — direction
    of the prediction against the ground truth's ``direction`` (or its own coordinates) with
    **up and down swapped** (AndroidControl names the scroll, not the finger); click/long_press —
    :func:`_click_hits`. Raises on malformed actions (missing keys, wrong types), as upstream does.
    """
    pred = _normalise(copy.deepcopy(pred), resized[0], resized[1], box_lists)
    gt = _normalise(copy.deepcopy(gt), size[0], size[1], box_lists)
    kind = gt["action"]
    if kind in ("wait", "terminate"):
        same = pred["action"] == kind
        return same, same
    if kind == "system_button":
        if pred["action"] != "system_button":
            return False, False
        return True, gt["button"].lower().strip() == pred["button"].lower().strip()
    if kind in ("type", "answer", "key"):
        return (True, _text_match(pred["text"], gt["text"])) if pred["action"] == "type" else (False, False)
    if kind == "open":
        return (True, _text_match(pred["text"], gt["text"])) if pred["action"] == "open" else (False, False)
    if kind == "swipe":
        if pred["action"] != "swipe":
            return False, False
        gt_dir = gt["direction"] if "direction" in gt else swipe_direction(gt["coordinate"], gt["coordinate2"])
        gt_dir = {"up": "down", "down": "up"}.get(gt_dir, gt_dir)
        return True, swipe_direction(pred["coordinate"], pred["coordinate2"]) == gt_dir
    if kind in ("click", "long_press"):
        if pred["action"] != kind:
            return False, False
        return True, _click_hits(pred["coordinate"], gt.get("candidate_bbox", []), gt["coordinate"])
    return False, False


def ui_s1_score(
    text: str,
    check_options: dict[str, Any],
    size: Sequence[float],
    resized: Sequence[float],
    num_steps: int = 1,
    box_lists: bool = False,
) -> RewardResult:
    """UI-S1's step reward ``0.1 * format + 0.9 * action`` for one response.

    ``format`` is 1 when a non-empty ``<think>`` was parsed; ``action`` is 1.0 (type and arguments
    match), 0.5 (type only) or 0.1 (a parsed action of another type); ``annotation`` HARMFUL flips it
    to ``1 - action``, NEUTRAL sets 0.5. As upstream, an unparsable response scores 0 on both parts,
    and a parsed response whose action cannot be checked (e.g. a click without ``coordinate``) keeps
    its format score with action 0. ``step_reward`` (``1 / num_steps`` on an exact match) is logged.
    """
    fmt, action, type_match, extract_match, error = 0.0, 0.0, False, False, None
    try:
        think, pred = parse_ui_s1_response(text)
        fmt = 1.0 if think is not None and think.strip() else 0.0
        type_match, extract_match = check_action_match(pred, check_options, size, resized, box_lists)
        action = (1.0 if extract_match else 0.5) if type_match else 0.1
        annotation = check_options.get("annotation")
        if annotation == "HARMFUL":
            action = 1 - action
        elif annotation == "NEUTRAL":
            action = 0.5
    except ParseError as err:
        error = f"parse failure: {err}"
    except Exception as err:  # noqa: BLE001 - upstream's bare `except` around the whole check
        error = f"action could not be checked: {type(err).__name__}: {err}"
    components = {
        "format": fmt,
        "action": action,
        "type_match": float(type_match),
        "extract_match": float(extract_match),
        "step_reward": 1 / num_steps if extract_match else 0.0,
    }
    return RewardResult(fmt * 0.1 + action * 0.9, components, error)


class UiS1Reward:
    """UI-S1's training reward over raw completions, one screenshot step each.

    Target: ``{"check_options": {...}, "image_size": [w, h], "resized_size": [rw, rh], "num_steps": n}``
    (the verl ``extra_info`` names ``width``/``height``/``resized_width``/``resized_height`` work too).
    Without a resized size it is computed with UI-S1's limits (factor 28, 784..10,035,200 pixels).
    ``box_lists=True`` normalises lists of candidate boxes (evaluation files) instead of upstream's
    training behaviour (see :func:`_normalise`).
    """

    name = "ui-s1"

    def __init__(self, box_lists: bool = False) -> None:
        self.box_lists = box_lists

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        out = []
        for pred, sample in zip(predictions, samples):
            target = target_of(sample)
            check = target.get("check_options")
            if not isinstance(check, Mapping) or "action" not in check:
                raise ValueError(f"ui-s1 needs target['check_options'] with an 'action' key, got {check!r}")
            # verl passes the authors' width/height/resized_* as extra_info, which lands in meta.
            sizes = {**dict(getattr(sample, "meta", None) or {}), **dict(target)}
            size, resized = _ui_s1_sizes(sizes)
            steps = int(target.get("num_steps", 1))
            out.append(ui_s1_score(text_of(pred), dict(check), size, resized, steps, self.box_lists))
        return out

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.box_lists == self.box_lists

    def __hash__(self) -> int:
        return hash((self.name, self.box_lists))


def _ui_s1_sizes(target: Mapping[str, Any]) -> tuple[tuple[float, float], tuple[float, float]]:
    size = target.get("image_size") or (target.get("width"), target.get("height"))
    if None in size or len(size) != 2:
        raise ValueError("ui-s1 needs target['image_size'] = [width, height] of the original screenshot")
    resized = target.get("resized_size") or (target.get("resized_width"), target.get("resized_height"))
    if None in resized:
        from zoo_common.coords import resized_size_for

        resized = resized_size_for(size, 28, UI_S1_MIN_PIXELS, UI_S1_MAX_PIXELS)
    return (float(size[0]), float(size[1])), (float(resized[0]), float(resized[1]))


# ---------------------------------------------------------------------------------------------
# shared helpers and registration
# ---------------------------------------------------------------------------------------------


GUI_G1 = GuiG1Reward()
UI_S1 = UiS1Reward()


def register() -> None:
    """Add ``gui-g1`` and ``ui-s1`` to the reward registry (idempotent)."""
    register_reward("gui-g1", GUI_G1)
    register_reward("ui-s1", UI_S1)


register()
