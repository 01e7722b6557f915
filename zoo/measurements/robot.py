"""What the robot releases measured: behaviour cloning on scripted demonstrations (``fetch-push-bc-tiny``) and
ResiP's residual PPO on top of it (``fetch-push-resip-tiny``), both on seeded FetchPush episodes."""

from __future__ import annotations

from dataclasses import dataclass

from zoo.measurements.common import EpisodeStats


@dataclass(frozen=True)
class BCArgs:
    """The release script's arguments: demonstrations, action chunk, optimiser steps."""

    demo_episodes: int
    demo_seed: int
    chunk: int
    steps: int
    lr: float
    batch_size: int


@dataclass(frozen=True)
class FetchPushBCMeasurements:
    """``fetch-push-bc-tiny``: the demonstrations, the final BC loss and the policy's seeded evaluation."""

    script: str
    args: BCArgs
    demo_transitions: int
    demo_successful_episodes: int
    final_bc_loss: float
    eval_seed: int
    eval: EpisodeStats
    wall_seconds: float


@dataclass(frozen=True)
class ResipEvaluation:
    """The frozen base and the base plus the trained residual on the same seeded episodes."""

    seed: int
    base: EpisodeStats
    trained: EpisodeStats


@dataclass(frozen=True)
class ResipMeasurements:
    """``fetch-push-resip-tiny``: residual PPO (``recipe``: the recipe file's text as run, with ``overrides``)."""

    script: str
    recipe: str
    overrides: tuple[str, ...]
    cpu_minutes_training: float
    eval: ResipEvaluation
