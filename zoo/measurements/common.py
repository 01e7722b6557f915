"""Rows more than one release's measurements share: paired differences, reward trends, episode statistics.

A measurement row is a frozen dataclass read strictly by :func:`zoo.records.typed` (unknown key, missing field,
wrong type: a :class:`~zoo.records.RecordError` naming it) and written back as the same JSON. A field that some
rows of a release have and others lack (a loss logged at some curve points only) is :func:`optional`: ``None``
when absent, and left out again when written, so a record read and written gives the file it was read from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: ``dataclasses.field`` metadata of a field that is left out of the JSON when ``None`` (:func:`optional`).
OMIT_IF_NONE = "omit_if_none"

RecipeSnapshot = Mapping[str, Any]
"""A recipe as the release resolved and ran it. zoo: kept as the mapping it was written as, because its schema is
that release's ``zoo.recipe`` (fields come and go between versions), not the record's; reading it back through today's
recipe classes would refuse a key an older release wrote."""

LogRow = Mapping[str, int | float | str]
"""One row of a run's own log (TRL's ``log_history``, ``metrics.csv``), verbatim: metric name -> value. Its keys
are the trainer's and the rewards' metric names, an open set by nature."""

PerSeed = Mapping[str, float]
"""``seedK`` -> a number of the run of that seed."""


def optional() -> Any:
    """A field absent from some rows of a release: ``None`` then, and not written back."""
    return field(default=None, metadata={OMIT_IF_NONE: True})


@dataclass(frozen=True)
class Difference:
    """``arm - baseline`` on the same held-out samples: the mean difference and its paired standard error."""

    diff: float
    se: float


PairedBySeed = Mapping[str, Mapping[str, Difference]]
"""``arm_minus_base`` (``grpo_minus_sft``) -> ``seedK`` -> the paired difference of that seed's run."""


@dataclass(frozen=True)
class SeedLevelDifference:
    """A difference with the training run as the unit: the mean over ``seeds`` runs and its standard error over them."""

    diff: float
    se: float
    seeds: int


@dataclass(frozen=True)
class RewardTrend:
    """The training reward's mean over the first and the last ``k`` of ``logged_steps`` logged steps."""

    first: float
    last: float
    k: int
    logged_steps: int


@dataclass(frozen=True)
class EpisodeStats:
    """A policy's seeded evaluation episodes: success rate with its 95% interval, mean return."""

    episodes: int
    success_rate: float
    ci95: tuple[float, float]
    mean_return: float


@dataclass(frozen=True)
class LadderSeeds:
    """The seeds of an SFT -> GRPO -> equal-time control ladder: per GRPO run, its data order and its control."""

    grpo: tuple[int, ...]
    grpo_data: tuple[int, ...]
    control: tuple[int, ...]
    held_out_eval: int
    released_grpo_seed: int


@dataclass(frozen=True, kw_only=True)
class HeldOut:
    """The held-out set of a ladder: its task, what is scored, and the final and curve sample counts.

    Attributes:
        metric: the held-out metric (absent where the set names a ``protocol`` instead).
        protocol: how an episode is scored (the GUI agent's step and episode success).
        n_curve_sft: samples per point of the SFT curve, where it differs from ``n_curve``.
    """

    task: str
    metric: str | None = optional()
    protocol: str | None = optional()
    n_final: int
    n_curve: int
    n_curve_sft: int | None = optional()


@dataclass(frozen=True)
class BenchmarkFiles:
    """The benchmark and files released weights were scored on (the first fields of a released evaluation)."""

    benchmark: str
    files: str
