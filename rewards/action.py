"""JSON action match for GUI agents: action type first, then each argument.

``sample.target``: ``{"action": {"action": "click", "coordinate": [x, y]}}`` and optionally
``{"bbox": [x1, y1, x2, y2]}`` (a click anywhere in the element counts). The predicted action
is the JSON object in the answer (``<answer>`` content or the whole text, fenced or not).

Argument rules, after GUI-R1 (Luo et al., 2025) and the AndroidControl evaluation: numbers
and coordinate lists match within ``coord_tol`` pixels (Euclidean), or inside the target box;
text matches when its token F1 with the reference is at least ``text_f1``; anything else must
be equal after lowercasing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rewards.base import RewardResult, SampleReward, require, text_of
from rewards.grounding import point_in_box
from rewards.parsing import ParseError, answer_span, parse_json_value
from rewards.text import token_f1

TYPE_KEYS = ("action", "action_type", "type", "name")
COORD_KEYS = ("coordinate", "point", "position", "click_point", "point_2d")


def action_type(action: Mapping[str, Any]) -> tuple[str, str]:
    """(key, lowercase value) of the action-type field; ParseError if the JSON has none."""
    for key in TYPE_KEYS:
        if isinstance(action.get(key), str):
            return key, action[key].strip().lower()
    raise ParseError(f"action JSON has no type field (one of {TYPE_KEYS}); keys: {sorted(action)}")


class ActionMatch(SampleReward):
    """``type_weight * type_ok + (1 - type_weight) * (type_ok and every argument ok)``.

    Components: ``type_match`` and ``args_match`` (fraction of reference arguments matched,
    0 when the type is wrong).
    """

    component_names = ("type_match", "args_match")

    def __init__(self, type_weight: float = 0.5, coord_tol: float = 14.0, text_f1: float = 0.5,
                 tag: str = "answer", name: str = "action-match") -> None:
        if not 0.0 <= type_weight <= 1.0:
            raise ValueError(f"type_weight must be in [0, 1], got {type_weight}")
        self.type_weight, self.coord_tol, self.text_f1, self.tag, self.name = type_weight, coord_tol, text_f1, tag, name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        ref = require(target, "action", self.name)
        if not isinstance(ref, Mapping):
            raise ValueError(f"target['action'] must be a dict, got {ref!r}")  # noqa: TRY004 - bad sample data
        pred = getattr(prediction, "action", None) or parse_json_value(answer_span(text_of(prediction), self.tag))
        if isinstance(pred, list) and pred and isinstance(pred[0], Mapping):
            pred = pred[0]
        if not isinstance(pred, Mapping):
            raise ParseError(f"the answer is not a JSON object: {str(pred)[:80]!r}")
        _ref_key, ref_type = action_type(ref)
        _, pred_type = action_type(pred)
        if pred_type != ref_type:
            return RewardResult(0.0, {"type_match": 0.0, "args_match": 0.0}, f"action {pred_type!r} vs {ref_type!r}")
        args = [k for k in ref if k not in TYPE_KEYS]
        matched = [k for k in args if self._arg_ok(k, pred.get(k), ref[k], target.get("bbox"))]
        fraction = len(matched) / len(args) if args else 1.0
        score = self.type_weight + (1 - self.type_weight) * float(fraction == 1.0)
        missed = sorted(set(args) - set(matched))
        return RewardResult(score, {"type_match": 1.0, "args_match": fraction},
                            f"arguments differ: {missed}" if missed else None)

    def _arg_ok(self, key: str, pred: Any, ref: Any, box: Any) -> bool:
        if pred is None:
            return False
        if key in COORD_KEYS and box is not None and _is_point(pred):
            return point_in_box([float(v) for v in pred], [float(v) for v in box])
        if _is_numbers(ref) and _is_numbers(pred):
            ref_l, pred_l = _as_list(ref), _as_list(pred)
            return len(ref_l) == len(pred_l) and math.dist(ref_l, pred_l) <= self.coord_tol
        if isinstance(ref, str) and isinstance(pred, str):
            return token_f1(pred, ref) >= self.text_f1
        return str(pred).strip().lower() == str(ref).strip().lower()


def _is_numbers(value: Any) -> bool:
    items = value if isinstance(value, (list, tuple)) else [value]
    return bool(items) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items)


def _is_point(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 2 and _is_numbers(value)


def _as_list(value: Any) -> list[float]:
    return [float(v) for v in (value if isinstance(value, (list, tuple)) else [value])]
