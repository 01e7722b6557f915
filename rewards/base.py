"""The reward protocol every task reward implements, its result type, and the reward registry.

``score is None`` means the reward *could not be computed* (a render worker died,
a judge timed out). Trainers mask such samples out of advantages and loss; they
never score them 0, because a silent 0 teaches the policy that valid work is bad.

Reward integrity, who is to blame: in RL the policy chooses its own failures, so a failure
the sample caused itself is the model's and scores as a failure, never ``None``. Model code
that exits, crashes, sleeps, runs past a time or memory limit, or input that makes a renderer
spin (an SVG circle of radius ``1e300``) scores 0 with the reason in ``error``. Only failures
outside the sample are infrastructure and masked: a worker lost while idle or killed from
outside, a pool that cannot restart a worker, a judge service that does not answer. Rewards
that render report both rates as components (``render_failed``, ``render_infra``: see
:class:`rewards.rendering.RenderResult`), and the TRL adapter logs the masked share as
``unscored_frac``.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rewards.parsing import ParseError
from zoo_common.registry import Registry

logger = logging.getLogger(__name__)


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

    @property
    def ok(self) -> bool:
        """True when a score was computed (possibly 0)."""
        return self.score is not None


@runtime_checkable
class Reward(Protocol):
    """``reward(predictions, samples) -> list[RewardResult]``, one result per prediction.

    ``predictions`` are model outputs (raw text, or objects with a ``text`` attribute);
    ``samples`` carry the ground truth in ``sample.target`` (a mapping).
    """

    name: str

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]: ...


@dataclass(frozen=True)
class RewardSample:
    """The minimal sample the adapters build from TRL columns or a verl row.

    ``zoo.data.Sample`` has the same ``target``/``meta`` fields; rewards only read those two.
    """

    target: Mapping[str, Any]
    meta: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


def text_of(prediction: Any) -> str:
    """The raw text of a prediction: a ``str`` itself, or its ``.text`` attribute."""
    if isinstance(prediction, str):
        return prediction
    text = getattr(prediction, "text", None)
    if isinstance(text, str):
        return text
    raise TypeError(f"a prediction must be a str or have a str .text attribute, got {type(prediction).__name__}")


def target_of(sample: Any) -> Mapping[str, Any]:
    """``sample.target`` (a ``Sample``/``RewardSample``), or the sample itself when it is a mapping."""
    target = sample if isinstance(sample, Mapping) else getattr(sample, "target", None)
    if not isinstance(target, Mapping):
        raise TypeError(f"a sample must be a mapping or have a mapping .target, got {type(sample).__name__}")
    return target


def require(target: Mapping[str, Any], key: str, reward: str) -> Any:
    """``target[key]``, or a ``KeyError`` that says which reward needed it and what was there."""
    if key not in target:
        raise KeyError(f"reward {reward!r} needs sample.target[{key!r}]; the target has keys {sorted(target)}")
    return target[key]


class SampleReward:
    """Base for rewards that score each (prediction, target) pair on its own.

    Subclasses set ``name`` and implement :meth:`score_one`; a :class:`ParseError` raised there
    (the model's text is malformed) becomes score 0 with the reason, with every component of
    :attr:`component_names` present and 0, so loggers (and verl's ``reward_extra_info``) see the
    same keys for every sample.
    """

    name: str = "sample-reward"
    component_names: tuple[str, ...] = ()

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        raise NotImplementedError

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        return [self._safe(p, target_of(s)) for p, s in zip(predictions, samples, strict=True)]

    def _safe(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        try:
            return self.score_one(prediction, target)
        except ParseError as err:
            return RewardResult(0.0, dict.fromkeys(self.component_names, 0.0), str(err))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"

    def __eq__(self, other: object) -> bool:  # registry: re-registering an equal reward is a no-op
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), self.name))


def check_lengths(predictions: Sequence[Any], samples: Sequence[Any], name: str) -> None:
    if len(predictions) != len(samples):
        raise ValueError(f"reward {name!r} got {len(predictions)} predictions for {len(samples)} samples")


class WeightedSum:
    """``sum_i w_i * r_i(pred, sample)`` over named parts, keeping every part's components.

    Components are prefixed ``"<part>/"`` and each part's own score is kept under ``"<part>"``.
    The sum is ``None`` when any part with a non-zero weight is ``None``: a partially computed
    reward is not a reward (TRL would otherwise nan-sum the missing part to 0).
    """

    def __init__(self, parts: Sequence[tuple[Reward | str, float]], name: str = "weighted-sum") -> None:
        if not parts:
            raise ValueError("WeightedSum needs at least one (reward, weight) pair")
        self.name = name
        self.parts: list[tuple[str, Reward, float]] = []
        for reward, weight in parts:
            fn = get(reward) if isinstance(reward, str) else reward
            if not callable(fn) or not math.isfinite(float(weight)):
                raise ValueError(f"bad WeightedSum part ({reward!r}, {weight!r}): need a reward and a finite weight")
            label = getattr(fn, "name", None) or getattr(fn, "__name__", type(fn).__name__)
            if any(label == p[0] for p in self.parts):
                raise ValueError(f"WeightedSum has two parts named {label!r}; give them distinct .name values")
            self.parts.append((label, fn, float(weight)))

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        per_part = [(label, w, fn(predictions, samples)) for label, fn, w in self.parts]
        return [self._combine([(label, w, results[i]) for label, w, results in per_part])
                for i in range(len(predictions))]

    @staticmethod
    def _combine(parts: list[tuple[str, float, RewardResult]]) -> RewardResult:
        components: dict[str, float] = {}
        errors, total = [], 0.0
        for label, weight, result in parts:
            components[label] = math.nan if result.score is None else float(result.score)
            components.update({f"{label}/{k}": v for k, v in result.components.items()})
            if result.error:
                errors.append(f"{label}: {result.error}")
            if result.score is None and weight != 0.0:
                total = math.nan
            elif result.score is not None:
                total += weight * float(result.score)
        score = None if math.isnan(total) else total
        return RewardResult(score, components, "; ".join(errors) or None)

    def __repr__(self) -> str:
        return f"WeightedSum({[(label, w) for label, _, w in self.parts]}, name={self.name!r})"


# -- registry -------------------------------------------------------------------------------
#: Every reward by name. Its discovery hooks (added by :mod:`rewards` for the primitives and the
#: ``zoo.rewards`` entry points, by ``zoo.domains`` for each domain's rewards module) run on the
#: first lookup that misses, so ``rewards.get("gui-g1")`` works whatever was imported first.
REWARDS: Registry[Reward] = Registry("reward")


def register(name: str, reward: Reward, aliases: tuple[str, ...] = ()) -> Reward:
    """Register ``reward`` under ``name``; its ``name`` attribute is set when it has none."""
    if not callable(reward):
        raise TypeError(f"reward {name!r} must be callable as reward(predictions, samples), got {reward!r}")
    if getattr(reward, "name", None) is None:
        with contextlib.suppress(AttributeError):  # e.g. a bound method: its name is the key anyway
            reward.name = name  # type: ignore[attr-defined]
    return REWARDS.register(name, reward, aliases)


def get(name: str) -> Reward:
    """The reward registered as ``name`` (primitives and domains' rewards are found on the first miss)."""
    return REWARDS.get(name)


def list_rewards() -> list[str]:
    """Registered reward names: the primitives and those of every discovered domain."""
    return REWARDS.list()
