"""Losses the perception papers define, declared by this domain (the backbone names no paper's loss).

StableReinforce (R1-Reward, Zhang et al., arXiv 2505.02835; yfzhang114/r1_reward
``openrlhf/models/loss.py::PolicyLoss``): the log importance ratio is clamped to
``[ln 1e-3, ln 1e3]`` *before* ``exp`` ("pre-clip"), so one token whose probability moved by
orders of magnitude cannot blow the ratio up; then PPO's clipped surrogate, averaged per sequence
and over the batch (OpenRLHF ``masked_mean(loss, mask, dim=-1).mean()`` = verl's
``seq-mean-token-mean``). The consistency reward is ``r1-reward`` in :mod:`domains.perception.rewards`.

StableReinforce's advantage filter (the paper's "3-sigma rule") is the ``stable-reinforce`` advantage
estimator here (``algorithm.adv_estimator: stable-reinforce``), reproduced from where the released
code has it: ``openrlhf/trainer/ppo_utils/replay_buffer.py::NaiveReplayBuffer.normalize`` (r1_reward
@ 3693413a), which whitens the REINFORCE returns over the whole rollout buffer and zeroes the outliers.

Importing this module also registers the domain's rollout plug-ins (``algorithm.plugins``):
``shuffle-r1`` (:mod:`domains.perception.shuffle_r1`) and ``scs`` (:mod:`domains.perception.scs_rollout`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from domains.perception import scs_rollout, shuffle_r1  # noqa: F401  (register the rollout plug-ins)
from zoo.algorithms import ADVANTAGE_ESTIMATORS, POLICY_LOSSES, LossType, register_loss_type
from zoo.rl.advantages import GroupIds
from zoo.rl.losses import Aggregation, aggregate

#: R1-Reward's pre-clip bounds of the log importance ratio (``np.log(1e-3)``, ``np.log(1e3)``).
PRE_CLIP = (math.log(1e-3), math.log(1e3))

#: Constants of r1_reward's ``NaiveReplayBuffer.normalize``: the floor of the variance before ``rsqrt``,
#: the offset added to every whitened advantage, and the magnitude past which one is zeroed in any case.
_VAR_FLOOR, _OFFSET, _HARD_LIMIT = 1e-8, 1e-8, 10.0


def advantage_filter(
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    sigma: float = 3.0,
    bounds_at_raw_mean: bool = True,
) -> torch.Tensor:
    """Whiten advantages over every valid token of the batch, then zero the outliers (StableReinforce).

    As r1_reward's ``NaiveReplayBuffer.normalize`` (@ 3693413a) computes it: with ``m`` the mean and
    ``v`` the biased variance of ``advantages`` over the tokens where ``mask`` is 1,
    ``z = (a - m) · rsqrt(max(v, 1e-8)) + 1e-8``; ``z`` is set to 0 where it lies outside
    ``[m - sigma, m + sigma]``, and where it is NaN, infinite or beyond ±10.

    The released code centres that interval on ``m``, the mean of the advantages *before*
    whitening, not on 0 (the mean of ``z``): for R1-Reward's rewards in [0, 2.5] the kept band is
    shifted towards positive advantages. ``bounds_at_raw_mean=False`` centres it on 0 instead, which
    is the 3-sigma rule the paper names (|z| ≤ sigma); the default keeps the released behaviour.

    Args:
        advantages: (B, T) token advantages (R1-Reward: REINFORCE returns).
        mask: (B, T) 0/1 response mask; masked tokens leave the statistics and come back as 0.
            Upstream sums the advantages of every position for the mean, which is the same number
            because OpenRLHF's returns are 0 on padding.
        sigma: half-width of the kept band, in standard deviations (3 upstream, hard-coded).
        bounds_at_raw_mean: centre the band on the raw mean (released code) rather than on 0.

    Returns:
        (B, T) float32 filtered advantages, 0 on masked tokens.
    """
    if advantages.shape != mask.shape or advantages.dim() != 2:
        raise ValueError(f"advantages {tuple(advantages.shape)} and mask {tuple(mask.shape)} must both be (B, T)")
    if sigma <= 0:
        raise ValueError(f"sigma must be positive, got {sigma}")
    values, mask = advantages.to(torch.float32), mask.to(torch.float32)
    count = mask.sum()
    if count < 1:
        return torch.zeros_like(values)
    mean = (values * mask).sum() / count
    var = ((values - mean).pow(2) * mask).sum() / count
    z = (values - mean) * var.clamp(min=_VAR_FLOOR).rsqrt() + _OFFSET
    centre = mean if bounds_at_raw_mean else torch.zeros_like(mean)
    outlier = (z < centre - sigma) | (z > centre + sigma)
    broken = ~torch.isfinite(z) | (z.abs() > _HARD_LIMIT)
    return torch.where(outlier | broken, 0.0, z) * mask


@ADVANTAGE_ESTIMATORS.decorator("stable-reinforce")
def stable_reinforce_advantages(
    rewards: torch.Tensor | Sequence[float],
    group_ids: GroupIds | None = None,
    *,
    mask: torch.Tensor | None = None,
    sigma: float = 3.0,
    bounds_at_raw_mean: bool = True,
) -> torch.Tensor:
    """R1-Reward's advantages: REINFORCE returns, whitened over the batch and 3-sigma filtered.

    R1-Reward trains with OpenRLHF's ``reinforce`` estimator, one sample per prompt
    (``scripts/train.sh``): with the outcome reward on the last token and ``gamma = 1`` every token's
    return is the sample's reward; then :func:`advantage_filter`. Upstream's returns also carry a
    per-token KL penalty (``--init_kl_coef 1e-3``); here the KL stays a loss term (``beta``), so
    the returns are the rewards alone. ``group_ids`` is ignored (no group baseline), kept for the shared call
    shape. A NaN reward (unscorable sample) leaves the statistics and gets advantage 0.

    Without ``mask`` (the TRL engine's per-sequence advantages) every sample counts once in the
    statistics; upstream counts every token, so the two agree when the completions have equal length.

    Returns:
        (B, T) float32 advantages with ``mask``, else (B,).
    """
    scores = torch.as_tensor(rewards, dtype=torch.float32)
    if scores.dim() != 1:
        raise ValueError(f"rewards must be one scalar per sample, shape (B,), got {tuple(scores.shape)}")
    token_mask = torch.ones(scores.shape[0], 1) if mask is None else mask.to(torch.float32)
    if token_mask.dim() != 2 or token_mask.shape[0] != scores.shape[0]:
        raise ValueError(f"mask must have shape (B={scores.shape[0]}, T), got {tuple(token_mask.shape)}")
    scored = ~torch.isnan(scores)
    token_mask = token_mask * scored.unsqueeze(-1)
    returns = torch.nan_to_num(scores, nan=0.0).unsqueeze(-1) * token_mask
    filtered = advantage_filter(returns, token_mask, sigma=sigma, bounds_at_raw_mean=bounds_at_raw_mean)
    return filtered[:, 0] if mask is None else filtered


@POLICY_LOSSES.decorator("stable_reinforce")
def stable_reinforce_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    agg: Aggregation = "seq-mean-token-mean",
    weights: torch.Tensor | None = None,
    loss_scale_factor: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``-min(r A, clip(r, 1 - clip_low, 1 + clip_high) A)`` with ``r = exp(clamp(log r, PRE_CLIP))``.

    Args:
        logp, old_logp, mask: (B, T) log-probs of the sampled tokens and their 0/1 mask.
        advantages: (B,) or (B, T).
        agg, loss_scale_factor: reduction of the (B, T) loss (:func:`zoo.rl.losses.aggregate`).
        weights: optional (B,) or (B, T) multiplier of the per-token loss.

    Returns:
        ``(loss, stats)`` with the stats every engine logs: ``clipfrac``, ``clipfrac_lower`` (0: no
        dual clip) and ``ppo_kl`` (masked mean of ``old_logp - logp``, after the pre-clip).
    """
    if logp.shape != mask.shape or old_logp.shape != mask.shape:
        raise ValueError(f"logp {tuple(logp.shape)}, old_logp {tuple(old_logp.shape)} and mask {tuple(mask.shape)} "
                         "must all be (B, T)")  # fmt: skip
    mask = mask.to(torch.float32)
    adv = advantages.to(torch.float32)
    adv = adv.unsqueeze(-1) if adv.dim() == 1 else adv
    log_ratio = torch.clamp(logp - old_logp, min=PRE_CLIP[0], max=PRE_CLIP[1])
    ratio = torch.exp(log_ratio)
    surrogate, clipped = ratio * adv, torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * adv
    per_token = -torch.minimum(surrogate, clipped)
    if weights is not None:
        weights = torch.as_tensor(weights, dtype=torch.float32, device=per_token.device)
        per_token = per_token * (weights.unsqueeze(-1) if weights.dim() == 1 else weights)
    count = mask.sum().clamp(min=1.0)
    stats = {
        "clipfrac": ((clipped < surrogate).float() * mask).sum() / count,
        "clipfrac_lower": torch.zeros((), device=per_token.device),
        "ppo_kl": (-log_ratio * mask).sum() / count,
    }
    loss = aggregate(per_token, mask, agg, loss_scale_factor=loss_scale_factor)
    return loss, {k: v.detach() for k, v in stats.items()}


STABLE_REINFORCE = register_loss_type(
    LossType(
        "stable_reinforce",
        "seq-mean-token-mean",
        loss="stable_reinforce",
        paper="StableReinforce (R1-Reward, arXiv 2505.02835): pre-clipped log-ratio, PPO clip, seq-mean-token-mean",
    )
)
