"""Numeric answers (chart QA, measurements): within a relative or absolute tolerance.

``sample.target``: ``{"answer": 12.5}`` (number or text with units) and optionally
``{"rel_tol": 0.05}`` / ``{"abs_tol": 0.1}`` overriding the reward's defaults per sample.
ChartQA's "relaxed accuracy" is ``rel_tol=0.05`` (Masry et al., 2022).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rewards.base import RewardResult, SampleReward, require, text_of
from rewards.parsing import ParseError, answer_span, parse_number


def numbers_close(pred: float, ref: float, rel_tol: float, abs_tol: float) -> bool:
    """``|pred - ref| <= max(rel_tol * |ref|, abs_tol)``: relative to the reference, not symmetric."""
    return math.isfinite(pred) and abs(pred - ref) <= max(rel_tol * abs(ref), abs_tol)


class NumericMatch(SampleReward):
    """1.0 when the last number of the answer is within tolerance of the reference."""

    component_names = ("correct", "rel_error")

    def __init__(self, rel_tol: float = 0.0, abs_tol: float = 1e-6, tag: str = "answer",
                 name: str = "numeric-match") -> None:
        if rel_tol < 0 or abs_tol < 0:
            raise ValueError(f"tolerances must be >= 0, got rel_tol={rel_tol}, abs_tol={abs_tol}")
        self.rel_tol, self.abs_tol, self.tag, self.name = rel_tol, abs_tol, tag, name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        ref_raw = require(target, "answer", self.name)
        try:
            ref = float(ref_raw) if isinstance(ref_raw, (int, float)) else parse_number(str(ref_raw))
        except ParseError as err:
            raise ValueError(f"reference answer {ref_raw!r} is not a number; check the dataset") from err
        pred = parse_number(answer_span(text_of(prediction), self.tag))
        rel_tol = float(target.get("rel_tol", self.rel_tol))
        abs_tol = float(target.get("abs_tol", self.abs_tol))
        hit = float(numbers_close(pred, ref, rel_tol, abs_tol))
        rel_error = abs(pred - ref) / abs(ref) if ref else abs(pred)
        return RewardResult(hit, {"correct": hit, "rel_error": rel_error}, None if hit else f"{pred:g} vs {ref:g}")
