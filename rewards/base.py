"""The reward protocol every task reward implements, and its result type.

``score is None`` means the reward *could not be computed* (a render worker died,
a judge timed out). Trainers mask such samples out of advantages and loss; they
never score them 0, because a silent 0 teaches the policy that valid work is bad.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class RewardResult:
    """One sample's reward.

    Attributes:
        score: the scalar reward, or ``None`` when it could not be computed.
        components: named parts of the score (``{"hit": 1.0, "iou": 0.2}``), logged separately.
        error: why the score is ``None`` or why a component is 0 (parse failure reason).
    """

    score: float | None
    components: dict[str, float] = field(default_factory=dict)
    error: str | None = None


@runtime_checkable
class Reward(Protocol):
    """``reward(predictions, samples) -> list[RewardResult]``, one result per prediction."""

    name: str

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]: ...
