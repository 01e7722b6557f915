"""What the image release (``flow-grpo-tiny-colour``) measured: pre-training a tiny SD3-style pipeline from scratch,
then Flow-GRPO on the prompt-colour reward, scored on held-out prompts before and after."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from zoo.measurements.common import LogRow, RecipeSnapshot


@dataclass(frozen=True)
class Pretrain:
    """Pre-training the VAE and the denoiser from random weights, and their final losses."""

    seed: int
    vae_steps: int
    denoiser_steps: int
    uncond_prob: float
    vae_mse: float
    denoiser_loss: float
    cpu_minutes: float


@dataclass(frozen=True)
class ColourImageScores:
    """One sampling seed's images on the held-out prompts: the reward and its two terms."""

    reward: float
    images: int
    colour_match: float
    foreground_fraction: float


@dataclass(frozen=True)
class PromptsHeldOut:
    """The held-out prompts, how they are sampled, and the scores before and after RL per sampling seed."""

    prompts: tuple[str, ...]
    per_prompt: int
    num_inference_steps: int
    guidance_scale: float
    seeds: tuple[int, ...]
    before: Mapping[str, ColourImageScores]
    after: Mapping[str, ColourImageScores]


@dataclass(frozen=True)
class FlowGrpoMeasurements:
    """``flow-grpo-tiny-colour``: pre-training, the Flow-GRPO run and the engine's own evaluation curve."""

    script: str
    recipe: RecipeSnapshot
    pretrain: Pretrain
    rl_cpu_minutes: float
    held_out: PromptsHeldOut
    engine_eval_curve: tuple[LogRow, ...]
