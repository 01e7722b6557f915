"""Diffusion-policy PPO (DPPO, Ren et al. 2024, arXiv 2409.00588): PPO over the denoising chain.

Each denoising step ``x_k -> x_{k-1}`` of a diffusion policy is a Gaussian policy
``N(mu_theta(x_k, k, s), sigma_k^2)``, so an action chunk's sampling chain is a sequence of
Gaussian decisions and PPO applies to every (environment step, denoising step) pair. Only the
last ``K'`` denoising steps are fine-tuned; their index ``i`` runs ``0 .. K'-1`` from the noisiest
fine-tuned step to the one that produces the action. Written from the paper and checked against
the numbers of the authors' code (``irom-princeton/dppo``, MIT, commit cc7234a:
``model/diffusion/diffusion_vpg.py::get_logprobs_subsample`` and ``diffusion_ppo.py::loss``) in
``tests/rl/test_dppo.py``. The same maths serves DiWA (PPO in a world model) and ReinFlow-style
flow policies whose steps are made Gaussian.

Shapes: ``B`` sampled pairs, ``Ta`` chunk length, ``Da`` action dimension.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

MIN_LOGPROB_STD = 0.1  # DPPO's min_logprob_denoising_std
LOGPROB_CLAMP = (-5.0, 2.0)


def denoising_log_prob(mean: torch.Tensor, logvar: torch.Tensor, x_next: torch.Tensor,
                       min_std: float = MIN_LOGPROB_STD) -> torch.Tensor:  # fmt: skip
    """Per-element Gaussian log-density of ``x_next`` under one denoising step, ``(B, Ta, Da)``.

    The step's standard deviation ``exp(logvar / 2)`` is floored at ``min_std``: the last DDPM
    steps have tiny variances whose log-densities would otherwise dominate the ratio.
    """
    std = torch.exp(0.5 * logvar).clamp(min=min_std).expand_as(mean)
    return -((x_next - mean) ** 2) / (2 * std**2) - torch.log(std) - 0.5 * math.log(2 * math.pi)


def chunk_log_prob(log_prob: torch.Tensor, reward_horizon: int, clamp: tuple[float, float] = LOGPROB_CLAMP) -> torch.Tensor:
    """One number per pair, ``(B,)``: per-element log-probs clamped, then averaged over the executed steps.

    Only the first ``reward_horizon`` actions of the chunk were executed (DPPO's ``act_steps``), so
    only they carry the gradient; the mean (not the sum) over ``Ta x Da`` keeps the ratio's scale
    independent of the chunk size.
    """
    if reward_horizon < 1:
        raise ValueError(f"reward_horizon={reward_horizon} must be >= 1")
    return log_prob.clamp(*clamp)[:, :reward_horizon].mean(dim=(-1, -2))


def denoising_discount(denoising_index: torch.Tensor, ft_steps: int, gamma_denoise: float) -> torch.Tensor:
    """``gamma_denoise ** (K' - i - 1)``: the step that produces the action weighs 1, earlier steps less."""
    return gamma_denoise ** (ft_steps - denoising_index.to(torch.float64) - 1)


def interpolated_clip(denoising_index: torch.Tensor, ft_steps: int, clip_base: float = 1e-3, clip_final: float = 0.01,
                      rate: float = 3.0) -> torch.Tensor:  # fmt: skip
    """PPO clip coefficient per pair, exponentially from ``clip_base`` (noisiest step) to ``clip_final`` (last).

    ``c(i) = base + (final - base) * (exp(rate * t) - 1) / (exp(rate) - 1)`` with ``t = i / (K' - 1)``.
    With ``K' = 1`` the one fine-tuned step is the last and gets ``clip_final`` (DPPO's code divides
    0 by 0 there and gets NaN).
    """
    if ft_steps == 1:
        return torch.full(denoising_index.shape, clip_final)
    t = denoising_index.to(torch.float32) / (ft_steps - 1)
    return clip_base + (clip_final - clip_base) * (torch.exp(rate * t) - 1) / (math.exp(rate) - 1)


@dataclass(frozen=True)
class DPPOStats:
    """Diagnostics of one policy-loss evaluation (DPPO logs the same three)."""

    approx_kl: float
    clip_fraction: float
    ratio_mean: float


def dppo_policy_loss(new_log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor,
                     denoising_index: torch.Tensor, *, ft_steps: int, reward_horizon: int,
                     gamma_denoise: float = 0.99, clip_base: float = 1e-3, clip_final: float = 0.01,
                     clip_rate: float = 3.0, normalize_advantages: bool = True,
                     advantage_quantiles: tuple[float, float] = (0.0, 1.0)) -> tuple[torch.Tensor, DPPOStats]:  # fmt: skip
    """The clipped PPO loss over sampled (env step, denoising step) pairs.

    Args:
        new_log_prob, old_log_prob: per-element log-probs ``(B, Ta, Da)`` (:func:`denoising_log_prob`).
        advantages: ``(B,)`` GAE advantage of each pair's environment step (shared by its denoising steps).
        denoising_index: ``(B,)`` fine-tuned step index ``i`` in ``0 .. K'-1``.

    The advantages are normalised over the minibatch, clipped to the given quantiles (DPPO's
    default ``(0, 1)`` clips nothing), then weighted by :func:`denoising_discount`; each pair's
    ratio is clipped at :func:`interpolated_clip`.
    """
    new = chunk_log_prob(new_log_prob, reward_horizon)
    old = chunk_log_prob(old_log_prob, reward_horizon)
    adv = advantages.to(new.dtype)
    if normalize_advantages:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    low, high = torch.quantile(adv, advantage_quantiles[0]), torch.quantile(adv, advantage_quantiles[1])
    adv = adv.clamp(low, high) * denoising_discount(denoising_index, ft_steps, gamma_denoise).to(adv)
    log_ratio = new - old
    ratio = log_ratio.exp()
    clip = interpolated_clip(denoising_index, ft_steps, clip_base, clip_final, clip_rate).to(ratio)
    loss = torch.max(-adv * ratio, -adv * torch.clamp(ratio, 1 - clip, 1 + clip)).mean()
    with torch.no_grad():
        stats = DPPOStats(approx_kl=float(((ratio - 1) - log_ratio).mean()),
                          clip_fraction=float(((ratio - 1).abs() > clip).float().mean()),
                          ratio_mean=float(ratio.mean()))  # fmt: skip
    return loss, stats


def denoising_minibatches(n_samples: int, ft_steps: int, batch_size: int,
                          generator: torch.Generator | None = None) -> list[tuple[torch.Tensor, torch.Tensor]]:  # fmt: skip
    """One epoch of minibatches over all ``n_samples x K'`` (env step, denoising step) pairs.

    Shuffles the flat pair index and splits it into ``max(1, total // batch_size)`` minibatches
    (a remainder is dropped, as in DPPO); each is ``(sample_index, denoising_index)``. Sampling pairs
    rather than whole chains decorrelates the updates of one chain's steps.
    """
    total = n_samples * ft_steps
    order = torch.randperm(total, generator=generator)
    batches = []
    for b in range(max(1, total // batch_size)):
        flat = order[b * batch_size:(b + 1) * batch_size]
        batches.append((flat // ft_steps, flat % ft_steps))
    return batches
