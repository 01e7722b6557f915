"""What the GUI releases measured: the grounding ladder (``gui-grounding-tiny``) and the agent ladder
(``gui-agent-tiny``), each SFT start -> RL per seed -> SFT continued for the RL run's time.

Curves and finals are held-out scores of a stage's weights; minutes are CPU minutes on the release machine; a ladder's
control is SFT continued for the RL run's CPU time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from zoo.measurements.common import (
    BenchmarkFiles,
    HeldOut,
    LogRow,
    PairedBySeed,
    PerSeed,
    RecipeSnapshot,
    RewardTrend,
    SeedLevelDifference,
    optional,
)

# --- GUI grounding (gui-grounding-tiny) ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class HitPoint:
    """A point of a grounding curve: the held-out hit rate after ``step`` steps (and the SFT loss, where logged)."""

    step: int
    loss: float | None = optional()
    hit: float
    minutes: float


@dataclass(frozen=True)
class GroundingArgs:
    """The release script's arguments."""

    model_seed: int
    sft_steps: int
    sft_lr: float
    eval_n: int
    final_eval_n: int
    curve_every: int
    sft_curve_every: int
    grpo_overrides: tuple[str, ...]


@dataclass(frozen=True)
class GroundingSeeds:
    """The seeds of the grounding ladder (no control seeds: its controls share the GRPO runs' seeds)."""

    model_init: int
    sft_data: str
    grpo_data: tuple[int, ...]
    grpo: tuple[int, ...]
    held_out_eval: int
    released_grpo_seed: int


@dataclass(frozen=True)
class GroundingSFT:
    """The SFT start: its curve, the training loss every 50 steps, and its final hit rate."""

    curve: tuple[HitPoint, ...]
    loss_every_50: tuple[float, ...]
    train_minutes: float
    final_hit: float
    steps: int
    lr: float


@dataclass(frozen=True)
class GroundingRun:
    """One GRPO run: its curve, final hit rate and the trainer's log."""

    seed: int
    curve: tuple[HitPoint, ...]
    train_minutes: float
    final_hit: float
    log_history: tuple[LogRow, ...]


@dataclass(frozen=True)
class GroundingControl:
    """SFT continued for one GRPO run's time."""

    seed: int
    curve: tuple[HitPoint, ...]
    steps: int
    train_minutes: float
    final_hit: float


@dataclass(frozen=True)
class GroundingSummary:
    """The hit rates the card quotes, per seed."""

    hit_after_sft: float
    hit_after_grpo: PerSeed
    grpo_gain_over_sft: PerSeed
    grpo_gain_min: float
    grpo_gain_mean: float
    hit_after_sft_continue_equal_time: PerSeed


@dataclass(frozen=True)
class DemoExample:
    """The screen the card's example uses, and the released weights' hit rate on 200 upscaled screens."""

    instruction: str
    bbox: tuple[int, ...]
    image_size: tuple[int, ...]
    seed: int
    screens_tried: int
    hit_on_200_upscaled_448px_screens: float


@dataclass(frozen=True)
class GuiGroundingMeasurements:
    """``gui-grounding-tiny``: SFT, GRPO (GUI-G1's loss) and equal-time SFT on synthetic screens."""

    script: str
    args: GroundingArgs
    recipe_grpo: RecipeSnapshot
    seeds: GroundingSeeds
    held_out: HeldOut
    sft: GroundingSFT
    grpo: tuple[GroundingRun, ...]
    sft_continue_equal_time: tuple[GroundingControl, ...]
    summary: GroundingSummary
    demo_example: DemoExample


# --- GUI agent (gui-agent-tiny) -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentArgs:
    """The release's arguments."""

    eval_n: int
    final_eval_n: int
    sft_curve_points: int
    sft_eval_n: int
    confirm_n: int
    confirm_seed: int
    sft_overrides: tuple[str, ...]
    overrides: tuple[str, ...]
    control_overrides: tuple[str, ...]


@dataclass(frozen=True)
class AgentSeeds:
    """The seeds of the agent ladder: per RL run, its data order and its control."""

    rl: tuple[int, ...]
    rl_data: tuple[int, ...]
    control: tuple[int, ...]
    held_out_eval: int
    released_rl_seed: int


@dataclass(frozen=True)
class AgentPoint:
    """A point of an agent curve: step and episode success, and step success per action type."""

    step: int
    minutes: float
    step_success: float
    episode_success: float
    by_action_type: Mapping[str, float]


@dataclass(frozen=True)
class ClickLocalisation:
    """How far the agent's clicks land from the target, and how their coordinates correlate with it."""

    n: int
    median_distance: float
    median_distance_to_next_target: float
    correlation: Mapping[str, float]


@dataclass(frozen=True)
class AgentScores:
    """A stage's final held-out scores, with the per-step hits behind them (``step_hits``: one row per step)."""

    step_success: float
    type_match: float
    n_steps: int
    step_success_se: float
    episode_success: float
    n_episodes: int
    episode_success_se: float
    progress: float
    by_action_type: Mapping[str, float]
    click_localisation: ClickLocalisation
    step_hits: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class CurveEpisodes:
    """The SFT start scored on the curve's own episodes."""

    step_success: float
    n_steps: int
    n_episodes: int
    step_hits: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class AgentSFT:
    """The SFT start."""

    steps: int
    train_minutes: float
    curve: tuple[AgentPoint, ...]
    final: AgentScores
    on_curve_episodes: CurveEpisodes


@dataclass(frozen=True)
class AgentRun:
    """One UI-S1 RL run, with its loop's log."""

    seed: int
    train_minutes: float
    steps: int
    curve: tuple[AgentPoint, ...]
    final: AgentScores
    log_history: tuple[LogRow, ...]


@dataclass(frozen=True)
class AgentControl:
    """SFT continued for one RL run's time (``matched_step``: where the SFT run's minutes reach the RL run's)."""

    seed: int
    rl_minutes: float
    matched_step: int
    matched_minutes: float
    curve: tuple[AgentPoint, ...]
    final: AgentScores


@dataclass(frozen=True)
class Success:
    """Step and episode success."""

    step_success: float
    episode_success: float


@dataclass(frozen=True)
class AgentSummary:
    """The scores and differences the card quotes."""

    sft_start: Success
    ui_s1_rl: Mapping[str, Success]
    ui_s1_rl_step_success_gain_mean: float
    sft_continue_equal_time: Mapping[str, Success]
    sft_continue_equal_time_step_success_gain_mean: float
    step_success_paired: PairedBySeed
    step_success_across_seeds: Mapping[str, SeedLevelDifference]
    rl_training_reward: Mapping[str, RewardTrend]


@dataclass(frozen=True)
class ConfirmedScores:
    """A stage on the confirmation episodes."""

    step_success: float
    wrong_steps: int
    by_action_type: Mapping[str, float]


@dataclass(frozen=True)
class Confirmation:
    """Every stage scored again on a larger, separately seeded set of episodes."""

    episodes: int
    episode_seed: int
    n_steps: int
    sft_start: ConfirmedScores
    rl: Mapping[str, ConfirmedScores]
    control: Mapping[str, ConfirmedScores]
    step_success_paired: PairedBySeed


@dataclass(frozen=True)
class AgentReleasedEval(BenchmarkFiles):
    """The released weights on a benchmark's episodes."""

    episodes: int
    step_success: float
    episode_success: float


@dataclass(frozen=True)
class GuiAgentMeasurements:
    """``gui-agent-tiny``: multi-turn SFT, UI-S1 semi-online RL and equal-time SFT on synthetic phone tasks."""

    release: str
    args: AgentArgs
    recipe_sft: RecipeSnapshot
    recipe_rl: RecipeSnapshot
    recipe_control: RecipeSnapshot
    seeds: AgentSeeds
    held_out: HeldOut
    sft: AgentSFT
    rl: tuple[AgentRun, ...]
    sft_continue_equal_time: tuple[AgentControl, ...]
    summary: AgentSummary
    confirmation: Confirmation
    released_eval: AgentReleasedEval
