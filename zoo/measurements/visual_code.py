"""What the SVG release (``svg-scenes-tiny``) measured: SFT start -> GRPO per seed -> SFT for GRPO's time.

Curves and finals are held-out scores of a stage's weights; minutes are CPU minutes on the release machine; a ladder's
control is SFT continued for the RL run's CPU time.
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.measurements.common import LadderSeeds, PairedBySeed, RecipeSnapshot, RewardTrend, optional


@dataclass(frozen=True)
class SvgScores:
    """Held-out SVG scores: the reward, RLRF's code and image terms, the share that renders, the reward's s.e."""

    reward: float
    rlrf: float
    rlrf_image: float
    renders: float
    reward_se: float | None = optional()


@dataclass(frozen=True, kw_only=True)
class SvgPoint:
    """A point of an SVG curve: the scores of :class:`SvgScores` after ``step`` steps."""

    step: int
    reward: float
    rlrf: float
    rlrf_image: float
    renders: float
    reward_se: float | None = optional()
    minutes: float


@dataclass(frozen=True)
class SvgHeldOut:
    """The held-out scenes: final and curve counts, and the metric."""

    scenes: int
    curve_scenes: int
    metric: str


@dataclass(frozen=True)
class SvgStage:
    """One stage's run: its overrides, CPU minutes (model and renderer), curve and final scores."""

    overrides: tuple[str, ...]
    process_minutes: float
    render_minutes: float
    total_minutes: float
    steps: int
    curve: tuple[SvgPoint, ...]
    final: SvgScores


@dataclass(frozen=True, kw_only=True)
class SvgSFT(SvgStage):
    """The SFT start, and where its weights were reused from when a re-release did not retrain it."""

    reused: str | None = optional()


@dataclass(frozen=True)
class _Seeded:
    """The training seed, the first field of a seeded stage's row."""

    seed: int


@dataclass(frozen=True)
class SvgControl(SvgStage, _Seeded):
    """SFT continued for one GRPO run's time (its seed first, as the release writes it)."""


@dataclass(frozen=True)
class SvgDiagnostics:
    """What a GRPO run's training log says: reward trend, groups without signal, render failures, lengths."""

    train_reward: RewardTrend
    frac_groups_all_equal: float
    render_failed: float
    completion_mean_length: float
    completion_clipped: float


@dataclass(frozen=True, kw_only=True)
class SvgRun(SvgControl):
    """One GRPO run."""

    diagnostics: SvgDiagnostics


@dataclass(frozen=True)
class MetricRow:
    """One ``model-index`` number as the release computed it."""

    dataset: str
    split: str
    stage: str
    metric: str
    value: float


@dataclass(frozen=True)
class SvgLadderMeasurements:
    """``svg-scenes-tiny``: SFT, GRPO on the shape-IoU reward and equal-time SFT.

    The shipped record also holds the card's model-index rows and texts (``metrics`` to ``limitations``), which the
    release of that time wrote beside its numbers; the release now derives them from the numbers when it renders
    the card (``lab/visual_code/release.py: card_fields``), so a newer record has none of them.
    """

    release: str
    recipe_sft: RecipeSnapshot
    recipe_grpo: RecipeSnapshot
    recipe_control: RecipeSnapshot
    seeds: LadderSeeds
    held_out: SvgHeldOut
    sft: SvgSFT
    grpo: tuple[SvgRun, ...]
    sft_continue_equal_time: tuple[SvgControl, ...]
    paired: PairedBySeed
    metrics: tuple[MetricRow, ...] | None = optional()
    summary: str | None = optional()
    evaluation_note: str | None = optional()
    training_text: str | None = optional()
    intended_use: str | None = optional()
    limitations: str | None = optional()
