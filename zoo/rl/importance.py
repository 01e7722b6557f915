"""Truncated importance sampling (TIS) between the rollout engine and the trainer.

Once tokens are sampled by something other than the trainer's own forward (vLLM, a compiled
static-cache decode, another dtype), the rollout distribution ``π_rollout`` and the trainer's
``π_old`` differ a little, and the policy gradient is off-policy by their ratio. TIS (Yao et al.,
"Your Efficient RL Framework Secretly Brings You Off-Policy RL Training", 2025) reweights every
token's policy-gradient term by ``min(π_old / π_rollout, C)``, a detached per-token weight; the cap
``C`` bounds the variance. TRL 1.16 does the same for vLLM rollouts
(``vllm_importance_sampling_mode="token_truncate"``, ``vllm_importance_sampling_clip_max``).

Pure tensor code on (B, T) tensors: ``mask`` is the completion mask, ``rollout_logps`` the rollout
engine's log-probability of each sampled token (NaN where it gave none).
"""

from __future__ import annotations

import torch


def truncated_is_weights(
    trainer_logps: torch.Tensor, rollout_logps: torch.Tensor, mask: torch.Tensor, cap: float
) -> tuple[torch.Tensor, dict[str, float]]:
    """Per-token weights ``min(exp(trainer − rollout), cap)`` and the statistics worth logging.

    Args:
        trainer_logps: (B, T) log π_old of the sampled tokens, from the trainer's forward at the
            parameters that generated them.
        rollout_logps: (B, T) log π_rollout of the same tokens, as the rollout engine reported them.
        mask: (B, T) 1 for completion tokens, 0 for padding.
        cap: the truncation ``C`` (TIS uses 2; TRL's default ``clip_max`` is 3).

    Returns:
        ``(weights, stats)``: weights (B, T), detached, 1 on padding and where the rollout gave no
        log-probability (NaN: no correction rather than a NaN loss, as TRL does); stats: ``mean``
        and ``max`` of the *uncapped* ratio over completion tokens and ``frac_capped``, the share of
        tokens the cap touched (all 0/1 when there are no tokens).
    """
    if cap <= 0:
        raise ValueError(f"the importance-sampling cap must be > 0, got {cap}")
    diff = (trainer_logps.detach().float() - rollout_logps.float()) * mask
    diff = torch.nan_to_num(diff, nan=0.0)
    ratio = torch.exp(diff)
    kept = mask.bool()
    tokens = ratio[kept]
    stats = {
        "mean": tokens.mean().item() if tokens.numel() else 1.0,
        "max": tokens.max().item() if tokens.numel() else 1.0,
        "frac_capped": (tokens > cap).float().mean().item() if tokens.numel() else 0.0,
    }
    weights = torch.where(kept, ratio.clamp(max=cap), torch.ones_like(ratio))
    return weights, stats
