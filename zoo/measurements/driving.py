"""What the driving releases measured: the VLA ladder (``driving-vla-tiny``: SFT -> GRPO -> equal-time SFT)
and CaRL's PPO policy (``carl-highway-tiny``).

Curves and finals are held-out scores of a stage's weights; minutes are CPU minutes on the release machine; a ladder's
control is SFT continued for the RL run's CPU time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from zoo.measurements.common import (
    BenchmarkFiles,
    HeldOut,
    LadderSeeds,
    LogRow,
    PairedBySeed,
    PerSeed,
    RecipeSnapshot,
    RewardTrend,
    SeedLevelDifference,
    optional,
)

# --- driving (driving-vla-tiny) -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PdmsPoint:
    """A point of a driving curve: the held-out PDMS-style score after ``step`` steps (and the loss, where logged)."""

    step: int
    pdms: float
    minutes: float
    loss: float | None = optional()


@dataclass(frozen=True)
class DrivingArgs:
    """The release's arguments."""

    eval_n: int
    final_eval_n: int
    sft_eval_n: int
    sft_overrides: tuple[str, ...]
    grpo_overrides: tuple[str, ...]
    control_overrides: tuple[str, ...]
    control_steps_per_minute: float


@dataclass(frozen=True)
class DrivingSFT:
    """The SFT start."""

    curve: tuple[PdmsPoint, ...]
    train_minutes: float
    steps: int
    lr: float
    final_pdms: float


@dataclass(frozen=True)
class DrivingRun:
    """One GRPO run, with the trainer's log (``metrics.csv`` rows, as written)."""

    seed: int
    curve: tuple[PdmsPoint, ...]
    train_minutes: float
    final_pdms: float
    log_history: tuple[LogRow, ...]


@dataclass(frozen=True)
class DrivingControl:
    """SFT continued for one GRPO run's time."""

    seed: int
    curve: tuple[PdmsPoint, ...]
    train_minutes: float
    steps: int
    final_pdms: float


@dataclass(frozen=True)
class DrivingSummary:
    """The scores the card quotes, per seed."""

    pdms_after_sft: float
    pdms_after_grpo: PerSeed
    grpo_gain_over_sft: PerSeed
    grpo_gain_min: float
    grpo_gain_mean: float
    grpo_train_reward: Mapping[str, RewardTrend]
    pdms_after_sft_continue_equal_time: PerSeed


@dataclass(frozen=True)
class StandardErrors:
    """The standard error of each stage's held-out mean over ``n`` scenes."""

    n: int
    sft: float
    grpo: PerSeed
    control: PerSeed


@dataclass(frozen=True)
class PdmsScores:
    """The PDMS-style score and its sub-scores (NAVSIM's names), with the share of unparsable plans, over ``n``."""

    pdms: float
    epdms: float
    nc: float
    dac: float
    ddc: float
    tlc: float
    ep: float
    ttc: float
    lk: float
    c: float
    hc: float
    parse_failure_rate: float
    n: int


@dataclass(frozen=True)
class ReleasedPdms(PdmsScores, BenchmarkFiles):
    """The released weights' scores on a benchmark's files (the benchmark's fields first, as the release writes)."""


@dataclass(frozen=True)
class DrivingExample:
    """The scene the card's example uses."""

    question: str
    seed: int
    kind: str


@dataclass(frozen=True)
class DrivingLadderMeasurements:
    """``driving-vla-tiny``: SFT, GRPO on the PDMS-style reward and equal-time SFT on synthetic scenes."""

    release: str
    args: DrivingArgs
    recipe_sft: RecipeSnapshot
    recipe_grpo: RecipeSnapshot
    recipe_control: RecipeSnapshot
    seeds: LadderSeeds
    held_out: HeldOut
    sft: DrivingSFT
    grpo: tuple[DrivingRun, ...]
    sft_continue_equal_time: tuple[DrivingControl, ...]
    summary: DrivingSummary
    standard_error: StandardErrors
    paired: PairedBySeed
    across_seeds: Mapping[str, SeedLevelDifference]
    seed_mean_over_scenes: Mapping[str, SeedLevelDifference]
    by_kind: Mapping[str, Mapping[str, float]]
    plans_at_answer_precision: Mapping[str, PdmsScores]
    released_eval: ReleasedPdms
    example: DrivingExample


# --- CaRL (carl-highway-tiny) -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CarlTraining:
    """The PPO run: CPU minutes, environment steps, PPO iterations."""

    cpu_minutes: float
    env_steps: int
    iterations: int


@dataclass(frozen=True)
class RouteEpisodes:
    """Seeded episodes of one driver: route completion, collision, off-road, blocked and success rates (each with
    its 95% interval), mean return, and how the episodes ended."""

    episodes: int
    route_completion: float
    route_completion_ci95: tuple[float, float]
    collision_rate: float
    collision_rate_ci95: tuple[float, float]
    off_road_rate: float
    off_road_rate_ci95: tuple[float, float]
    blocked_rate: float
    blocked_rate_ci95: tuple[float, float]
    success_rate: float
    success_rate_ci95: tuple[float, float]
    mean_return: float
    terminations: Mapping[str, int]


@dataclass(frozen=True)
class CarlEvaluation:
    """The untrained start, the trained policy and the simulator's built-in driver on the same seeded routes."""

    recipe: str
    run_dir: str
    env: str
    env_kwargs: Mapping[str, int | float]
    seed: int
    untrained: RouteEpisodes
    trained: RouteEpisodes
    builtin_driver: RouteEpisodes


@dataclass(frozen=True)
class CarlMeasurements:
    """``carl-highway-tiny``: CaRL's PPO on highway-env routes (``recipe``: the recipe file's text as run)."""

    script: str
    recipe: str
    training: CarlTraining
    evaluation: CarlEvaluation
