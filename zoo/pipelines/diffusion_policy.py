"""A small diffusion policy: DDPM over an action chunk, conditioned on one observation.

``policy_config.json`` says ``"architecture": "diffusion-mlp"`` with ``denoising_steps`` (K) and,
after DPPO fine-tuning, ``ft_denoising_steps`` (K'): the last K' denoising steps then run a
fine-tuned copy of the noise network (``net_ft.*`` beside ``net.*`` in ``model.safetensors``) and
the first K - K' the frozen pre-trained one, as in DPPO (Ren et al. 2024, ``irom-princeton/dppo``,
MIT, ``model/diffusion/diffusion.py`` and ``diffusion_vpg.py``; written from them, not copied).

DDPM as there: cosine beta schedule (Nichol & Dhariwal, s = 0.008, betas clipped at 0.999),
epsilon prediction, the reconstructed ``x_0`` clamped to [-1, 1] (actions live in [-1, 1]), the
posterior mean ``coef1 * x_0 + coef2 * x_t`` and the clipped posterior log-variance. Sampling
noise is clamped to ±3 and the sampled action to [-1, 1]. The noise network is the zoo's own
small MLP: ``[x_t (Ta*Da), sinusoidal embedding of t, observation] -> epsilon``, Mish activations.

``forward(obs)`` is what :class:`~zoo.pipelines.policy.PolicyPipeline` calls: DPPO's
*deterministic* evaluation sampler (std floored at 1e-3, no noise on the last step), drawing its
initial noise from the module's own generator (seed 0 at load), so an evaluation is repeatable.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from torch import nn

from zoo.pipelines.policy import PolicyConfig, feedforward

RANDN_CLIP = 3.0  # DPPO's randn_clip_value in its fine-tuning configs
ACTION_CLIP = 1.0  # denoised_clip_value and final_action_clip_value
TIME_DIM = 16


def cosine_betas(steps: int, s: float = 0.008) -> torch.Tensor:
    """``(K,)`` betas of the cosine schedule, clipped to [0, 0.999]."""
    x = np.linspace(0, steps + 1, steps + 1)
    alphas_cumprod = np.cos(((x / (steps + 1)) + s) / (1 + s) * np.pi * 0.5) ** 2
    alphas_cumprod = alphas_cumprod / alphas_cumprod[0]
    return torch.tensor(np.clip(1 - alphas_cumprod[1:] / alphas_cumprod[:-1], 0, 0.999), dtype=torch.float32)


def time_embedding(t: torch.Tensor, dim: int = TIME_DIM) -> torch.Tensor:
    """``(B, dim)`` sinusoidal embedding of integer steps ``(B,)``."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / (half - 1))
    angles = t.float()[:, None] * freqs[None]
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


def noise_net(config: PolicyConfig) -> nn.Module:
    """``[x_t, time embedding, obs] -> epsilon`` MLP with Mish activations."""
    chunk = config.action_chunk * config.action_dim
    return feedforward([chunk + TIME_DIM + config.observation_dim, *config.hidden, chunk], nn.Mish)


class DiffusionPolicy(nn.Module):
    """DDPM action-chunk policy; ``net_ft`` exists when ``ft_denoising_steps`` > 0 (see the module doc)."""

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__()
        self.chunk, self.action_dim = config.action_chunk, config.action_dim
        self.steps = int(config.extra.get("denoising_steps", 20))
        self.ft_steps = int(config.extra.get("ft_denoising_steps", 0))
        if not 0 <= self.ft_steps <= self.steps or self.steps < 1:
            raise ValueError(f"diffusion-mlp: need 0 <= ft_denoising_steps ({self.ft_steps}) <= denoising_steps "
                             f"({self.steps}) and denoising_steps >= 1")  # fmt: skip
        self.net = noise_net(config)
        self.net_ft = noise_net(config) if self.ft_steps else None
        betas = cosine_betas(self.steps)
        alphas = 1 - betas
        cum = torch.cumprod(alphas, 0)
        cum_prev = torch.cat([torch.ones(1), cum[:-1]])
        var = betas * (1 - cum_prev) / (1 - cum)
        for name, value in (("sqrt_cum", cum.sqrt()), ("sqrt_one_minus_cum", (1 - cum).sqrt()),
                            ("sqrt_recip_cum", (1 / cum).sqrt()), ("sqrt_recipm1_cum", (1 / cum - 1).sqrt()),
                            ("mu_coef1", betas * cum_prev.sqrt() / (1 - cum)),
                            ("mu_coef2", (1 - cum_prev) * alphas.sqrt() / (1 - cum)),
                            ("logvar", var.clamp(min=1e-20).log())):  # fmt: skip
            self.register_buffer(name, value, persistent=False)
        self.generator = torch.Generator().manual_seed(0)

    def start_fine_tuning(self, ft_steps: int) -> None:
        """Copy the pre-trained network into ``net_ft`` for the last ``ft_steps`` steps; freeze ``net``."""
        if not 1 <= ft_steps <= self.steps:
            raise ValueError(f"ft_denoising_steps={ft_steps} must be in 1..{self.steps}")
        self.ft_steps = ft_steps
        self.net_ft = copy.deepcopy(self.net).requires_grad_(True)
        self.net.requires_grad_(False)

    def epsilon(self, x: torch.Tensor, t: torch.Tensor, obs: torch.Tensor, fine_tuned: bool) -> torch.Tensor:
        """Predicted noise ``(B, Ta, Da)`` for chunks ``x (B, Ta, Da)`` at steps ``t (B,)`` given ``obs (B, Do)``."""
        net = self.net_ft if fine_tuned and self.net_ft is not None else self.net
        out = net(torch.cat([x.flatten(1), time_embedding(t), obs], dim=-1))
        return out.view_as(x)

    def mean_logvar(self, x: torch.Tensor, t: torch.Tensor, obs: torch.Tensor,
                    fine_tuned: bool | None = None) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """Posterior mean ``(B, Ta, Da)`` and log-variance ``(B, 1, 1)`` of step ``t -> t-1``.

        ``fine_tuned=None`` picks ``net_ft`` for ``t < K'`` and ``net`` otherwise (one ``t`` per call).
        """
        if fine_tuned is None:
            fine_tuned = bool(t[0] < self.ft_steps)
        eps = self.epsilon(x, t, obs, fine_tuned)
        pick = lambda buf: buf[t].view(-1, 1, 1)
        x0 = (pick(self.sqrt_recip_cum) * x - pick(self.sqrt_recipm1_cum) * eps).clamp(-ACTION_CLIP, ACTION_CLIP)
        return pick(self.mu_coef1) * x0 + pick(self.mu_coef2) * x, pick(self.logvar)

    def bc_loss(
        self, obs: torch.Tensor, actions: torch.Tensor, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """Epsilon-prediction MSE on ``(B, Ta, Da)`` normalised action chunks (DDPM training)."""
        t = torch.randint(0, self.steps, (len(obs),), generator=generator)
        noise = torch.randn(actions.shape, generator=generator)
        x = self.sqrt_cum[t].view(-1, 1, 1) * actions + self.sqrt_one_minus_cum[t].view(-1, 1, 1) * noise
        return nn.functional.mse_loss(self.epsilon(x, t, obs, fine_tuned=False), noise)

    @torch.no_grad()
    def sample(self, obs: torch.Tensor, *, min_std: float, deterministic: bool = False,
               generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """An action chunk ``(B, Ta, Da)`` and the chain of the fine-tuned steps ``(B, K'+1, Ta, Da)``.

        The chain holds ``x_{K'}`` then each fine-tuned step's output (the last is the action).
        ``deterministic``: DPPO's evaluation sampler (std floor 1e-3, none on the last step);
        otherwise the std is floored at ``min_std`` (DPPO's ``min_sampling_denoising_std``).
        """
        x = torch.randn((len(obs), self.chunk, self.action_dim), generator=generator)
        chain = [x] if self.ft_steps == self.steps else []
        for t in reversed(range(self.steps)):
            mean, logvar = self.mean_logvar(x, torch.full((len(obs),), t), obs)
            std = (0.5 * logvar).exp()
            if deterministic:
                std = torch.zeros_like(std) if t == 0 else std.clamp(min=1e-3)
            else:
                std = std.clamp(min=min_std)
            x = mean + std * torch.randn(x.shape, generator=generator).clamp(-RANDN_CLIP, RANDN_CLIP)
            if t == 0:
                x = x.clamp(-ACTION_CLIP, ACTION_CLIP)
            if t <= self.ft_steps:  # the input of the first fine-tuned step, then each one's output
                chain.append(x)
        return x, torch.stack(chain, dim=1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``(B, Ta*Da)`` normalised chunk by the deterministic evaluation sampler."""
        return self.sample(obs, min_std=0.0, deterministic=True, generator=self.generator)[0].flatten(1)
