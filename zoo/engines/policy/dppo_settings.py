"""DPPO's settings (:mod:`zoo.engines.policy.dppo`), apart from its trainer so that reading a ``dppo`` recipe imports
no torch: :class:`DPPOTuning` holds the terms a recipe sets as ``algorithm`` keys, :class:`DPPOSettings` what the
trainer runs under (those terms plus the ones a recipe shares with other methods or ``training``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DPPOTuning:
    """DPPO's terms that no other method shares; a ``dppo`` recipe sets them as ``algorithm`` keys (defaults:
    DPPO's robomimic configs, ``irom-princeton/dppo@cc7234a:cfg/robomimic/finetune/can/ft_ppo_diffusion_mlp.yaml``)."""

    gae_lambda: float = 0.95
    """GAE lambda over chunk steps."""
    gamma_denoise: float = 0.99
    """Advantage weight ``gamma_denoise^(K'-i-1)`` of fine-tuned denoising step ``i`` (the last step weighs 1)."""
    clip_base: float = 1e-3
    """PPO clip at the noisiest fine-tuned denoising step."""
    clip_final: float = 0.01
    """PPO clip at the last denoising step (the one that produces the action)."""
    clip_rate: float = 3.0
    """Rate of the exponential from ``clip_base`` to ``clip_final`` over the fine-tuned steps."""
    min_sampling_std: float = 0.1
    """Floor of the denoising std when sampling rollouts."""
    vf_coef: float = 0.5
    """Weight of the value loss (on ``0.5 * MSE``)."""
    max_grad_norm: float = 1.0
    """Gradient-norm clip of the actor."""
    target_kl: float = 1.0
    """Stop the epochs after the update whose approximate KL passed this."""
    critic_warmup: int = 0
    """Iterations that update the critic only."""
    act_steps: int = 0
    """Executed actions per chunk (DPPO's reward horizon); 0: the whole chunk."""


@dataclass(frozen=True)
class DPPOSettings(DPPOTuning):
    """DPPO's fine-tuning settings: its own terms, and those a recipe shares with other methods or ``training``."""

    ft_steps: int = 10
    """Fine-tuned denoising steps K' (the last ones of the chain)."""
    n_steps: int = 64
    """Chunk steps per environment per iteration."""
    gamma: float = 0.99
    """Discount per chunk step."""
    epochs: int = 10
    batch_size: int = 512
    """(env step, denoising step) pairs per minibatch."""
    actor_lr: float = 1e-4
    critic_lr: float = 1e-3

