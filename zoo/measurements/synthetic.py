"""What the synthetic-colour release (``synthetic-colour-sft-tiny``) measured: the SFT warm start it ships
and GRPO runs from it, on held-out images.
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.measurements.common import PairedBySeed, RecipeSnapshot, RewardTrend


@dataclass(frozen=True)
class ColourHeldOut:
    """The held-out images and how many answers are sampled per image."""

    data_seed: int
    images: int
    samples_per_image: int
    metric: str


@dataclass(frozen=True)
class ColourPoint:
    """A point of the warm start's curve: sampled reward and greedy accuracy."""

    step: int
    sampled_reward: float
    greedy: float


@dataclass(frozen=True)
class ColourSFT:
    """The SFT warm start (the shipped weights)."""

    seed: int
    steps: int
    cpu_minutes: float
    curve: tuple[ColourPoint, ...]
    sampled_reward: float
    greedy: float


@dataclass(frozen=True)
class ColourRun:
    """One GRPO run from the warm start: its training reward per step and final held-out scores."""

    seed: int
    steps: int
    cpu_minutes: float
    train_reward: tuple[float, ...]
    train_reward_trend: RewardTrend
    sampled_reward: float
    greedy: float


@dataclass(frozen=True)
class SyntheticColourMeasurements:
    """``synthetic-colour-sft-tiny``: the SFT warm start and GRPO runs from it."""

    release: str
    recipe_sft: RecipeSnapshot
    recipe_grpo: RecipeSnapshot
    held_out: ColourHeldOut
    sft: ColourSFT
    grpo: tuple[ColourRun, ...]
    paired: PairedBySeed
