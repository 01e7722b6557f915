"""The one reward implementation in TRL's call shape.

TRL 1.x (``GRPOTrainer._calculate_rewards``, trl 1.16.0) calls each reward function as
``f(prompts=..., completions=..., completion_ids=..., **columns, trainer_state=, log_extra=,
log_metric=)`` where ``columns`` are the dataset's other columns, one value per completion. It
turns ``None`` into NaN; a row where *every* reward function is NaN is "unscorable" and masked
out of the group baseline with advantage 0, but with several reward functions a NaN from one is
``nansum``-ed as 0 into the row's total. So compose parts with :class:`rewards.WeightedSum` into
one TRL function when a part can fail (its ``None`` then masks the whole row).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

from rewards.base import Reward, RewardResult, RewardSample, get

logger = logging.getLogger(__name__)
_TRAINER_KWARGS = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})


def completion_text(completion: Any) -> str:
    """Text of a TRL completion: a string, or conversational ``[{"role", "content"}, ...]``.

    For conversations the last assistant message is the completion; list-style content keeps
    its text parts (``{"type": "text", "text": ...}``) in order.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and all(isinstance(m, Mapping) for m in completion):
        assistant = [m for m in completion if m.get("role", "assistant") == "assistant"] or list(completion)
        content = assistant[-1].get("content", "")
        if isinstance(content, str):
            return content
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    raise TypeError(f"a completion must be a str or a list of chat messages, got {type(completion).__name__}")


def as_target(value: Any, where: str) -> Mapping[str, Any]:
    """A ground-truth mapping from a dict or a JSON object string; a plain string or number is
    taken as ``{"answer": value}`` (verl's math-style ground truths)."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return {"answer": value}
        return parsed if isinstance(parsed, Mapping) else {"answer": parsed}
    if isinstance(value, (int, float, list)):
        return {"answer": value}
    raise TypeError(f"{where} must be a dict, a JSON object string or an answer value, got {type(value).__name__}")


class TRLReward:
    """A picklable TRL ``reward_funcs`` entry wrapping a registered or given :class:`Reward`.

    Args:
        reward: the reward object, or its registered name (looked up when first called, so the
            object pickles by name and works in TRL's async reward process).
        name: the name TRL logs (``__name__``); defaults to the reward's name.
        target_column: dataset column holding each sample's ground-truth dict (or JSON string).
        log_components: also log each component's batch mean through TRL's ``log_metric``.
    """

    def __init__(self, reward: Reward | str, name: str | None = None, target_column: str = "target",
                 log_components: bool = True) -> None:
        self._reward = reward
        self.__name__ = name or (reward if isinstance(reward, str) else getattr(reward, "name", type(reward).__name__))
        self.target_column = target_column
        self.log_components = log_components

    @property
    def reward(self) -> Reward:
        return get(self._reward) if isinstance(self._reward, str) else self._reward

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], completion_ids: Any = None,
                 **kwargs: Any) -> list[float | None]:
        if self.target_column not in kwargs:
            columns = sorted(k for k in kwargs if k not in _TRAINER_KWARGS)
            raise KeyError(f"TRL reward {self.__name__!r} reads the dataset column {self.target_column!r}, "
                           f"which this dataset lacks (columns: {columns}); pass target_column=...")
        columns = {k: v for k, v in kwargs.items() if k not in _TRAINER_KWARGS and k != self.target_column}
        step = getattr(kwargs.get("trainer_state"), "global_step", None)
        if step is not None:  # rewards whose rule changes during training read meta["step"] (Vision-R1)
            columns.setdefault("step", [step] * len(prompts))
        samples = [self._sample(t, i, columns, len(prompts)) for i, t in enumerate(kwargs[self.target_column])]
        results = self.reward([completion_text(c) for c in completions], samples)
        self._log(results, kwargs.get("log_metric"))
        return [r.score for r in results]

    def _sample(self, target: Any, i: int, columns: Mapping[str, Any], n: int) -> RewardSample:
        """Row ``i``: the target column, a ``meta`` column (dict or JSON) merged into ``meta`` along
        with the other per-row columns, and the ``sample_id`` (or ``id``) column as the sample id."""
        meta = {k: v[i] for k, v in columns.items() if isinstance(v, Sequence) and len(v) == n}
        inner = meta.pop("meta", None)
        if inner is not None:
            meta.update(as_target(inner, f"column 'meta' row {i}"))
        sample_id = meta.get("sample_id", meta.get("id"))
        return RewardSample(target=as_target(target, f"column {self.target_column!r} row {i}"), meta=meta,
                            id=None if sample_id is None else str(sample_id))

    def _log(self, results: list[RewardResult], log_metric: Any) -> None:
        failed = [r.error for r in results if r.score is None]
        if failed:
            logger.warning("%s: %d/%d samples unscored (masked by TRL), first: %s",
                           self.__name__, len(failed), len(results), failed[0])
        if not (self.log_components and callable(log_metric)):
            return
        keys = {k for r in results for k in r.components}
        for key in sorted(keys):
            values = [r.components[key] for r in results if key in r.components]
            finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
            if finite:
                log_metric(f"{self.__name__}/{key}", sum(finite) / len(finite))
        log_metric(f"{self.__name__}/unscored_frac", len(failed) / max(len(results), 1))

    def __repr__(self) -> str:
        return f"TRLReward({self._reward!r}, name={self.__name__!r}, target_column={self.target_column!r})"


def to_trl(reward: Reward | str, name: str | None = None, target_column: str = "target") -> TRLReward:
    """``GRPOTrainer(reward_funcs=[rewards.to_trl(reward)])``: see :class:`TRLReward`."""
    return TRLReward(reward, name=name, target_column=target_column)
