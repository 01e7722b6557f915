"""Losses the perception papers define, declared by this domain (the backbone names no paper's loss).

StableReinforce (R1-Reward, Zhang et al., arXiv 2505.02835; yfzhang114/r1_reward
``openrlhf/models/loss.py::PolicyLoss``): the log importance ratio is clamped to
``[ln 1e-3, ln 1e3]`` *before* ``exp`` ("pre-clip"), so one token whose probability moved by
orders of magnitude cannot blow the ratio up; then PPO's clipped surrogate, averaged per sequence
and over the batch (OpenRLHF ``masked_mean(loss, mask, dim=-1).mean()`` = verl's
``seq-mean-token-mean``). The paper's advantage filter and consistency reward are not part of this
loss: the reward is ``r1-reward`` in :mod:`domains.perception.rewards`.

Importing this module also registers the domain's rollout plug-ins (``algorithm.plugins``):
``shuffle-r1`` (:mod:`domains.perception.shuffle_r1`) and ``scs`` (:mod:`domains.perception.scs_rollout`).
"""

from __future__ import annotations

import math

import torch

from domains.perception import scs_rollout, shuffle_r1  # noqa: F401  (register the rollout plug-ins)
from zoo.rl.loss_types import LossType, register_loss_type
from zoo.rl.losses import POLICY_LOSSES, Aggregation, aggregate

#: R1-Reward's pre-clip bounds of the log importance ratio (``np.log(1e-3)``, ``np.log(1e3)``).
PRE_CLIP = (math.log(1e-3), math.log(1e3))


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
