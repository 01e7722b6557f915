"""Policy-gradient losses, loss aggregation and KL estimators, as pure tensor functions.

Each function reproduces the verl 0.9.1 (``verl/trainer/ppo/core_algos.py``) or TRL 1.x
(``trl/trainer/grpo_trainer.py::GRPOTrainer._compute_loss``) code named in its
docstring; the tests compare against numbers those libraries produced
(``tests/rl/golden/make_rl_golden.py``).

Shapes: ``logp``, ``old_logp``, ``ref_logp``, ``mask`` are (B, T) per-token log-probs of
the sampled response tokens and its 0/1 mask; ``advantages`` is (B,) or (B, T).

GUI-G1 (Zhou et al., Yuqi-Zhou/GUI-G1 ``src/open-r1-multimodal/src/open_r1/trainer/grpo_trainer.py``,
``compute_loss``) needs no loss of its own: its loss
``mean_i(sum_t(clip_loss_it * mask_it) * rate_i / 64)`` is::

    clipped_surrogate(logp, old_logp, advantages, mask, weights=rate,
                      agg="seq-mean-token-sum-norm", loss_scale_factor=64)

with ``advantages = grpo(r, groups, normalize_std=False)``. The only difference is
verl's seq-mean skipping rows with no response token, which GUI-G1 would average in
as zeros; a generated completion always has at least one token, so it does not arise.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

AGG_MODES = ("token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")
"""verl's ``loss_agg_mode`` values accepted by :func:`aggregate`."""

TRL_LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")
"""TRL ``GRPOConfig.loss_type`` values whose aggregation :func:`trl_aggregate` reproduces."""

Aggregation = str | Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""A :func:`aggregate` mode name, or any ``fn(loss_mat, mask) -> scalar``
(e.g. ``functools.partial(trl_aggregate, loss_type="dr_grpo", max_completion_length=256)``)."""

_KL_NAMES = {"k1": "k1", "kl": "k1", "k2": "k2", "mse": "k2", "k3": "k3", "low_var_kl": "k3", "abs": "abs"}
_LOG_RATIO_CLAMP = 20.0  # verl clamps log-ratios to [-20, 20] before exp (vanilla loss, k3)
_K3_CLAMP = 10.0  # verl clamps the k3 estimate to [-10, 10]
_GSPO_LOG_RATIO_MAX = 10.0  # verl clamps GSPO's log sequence ratio from above


def _masked_sum(values: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Sum of masked entries; NaN/inf outside the mask cannot leak in (verl ``masked_sum``)."""
    kept = torch.where(mask.bool(), values, 0.0) * mask
    return kept.sum() if dim is None else kept.sum(dim=dim)


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """verl ``masked_mean``: masked sum over (mask count + 1e-8)."""
    return _masked_sum(values, mask) / (mask.sum() + 1e-8)


def _check_shapes(mask: torch.Tensor, **tensors: torch.Tensor) -> torch.Tensor:
    if mask.dim() != 2:
        raise ValueError(f"mask must be (B, T), got shape {tuple(mask.shape)}")
    for name, tensor in tensors.items():
        if tensor.shape != mask.shape:
            shapes = f"{tuple(tensor.shape)} but mask has {tuple(mask.shape)}"
            raise ValueError(f"{name} has shape {shapes}; both must be (B, T)")
    return mask.to(torch.float32)


def aggregate(
    loss_mat: torch.Tensor,
    mask: torch.Tensor,
    mode: Aggregation,
    *,
    loss_scale_factor: float | None = None,
    batch_num_tokens: float | torch.Tensor | None = None,
    global_batch_size: float | torch.Tensor | None = None,
) -> torch.Tensor:
    """Reduce a (B, T) per-token loss to a scalar, one of verl's ``loss_agg_mode`` s.

    Reference: verl 0.9.1 ``core_algos.agg_loss`` with ``dp_size=1``.

    - ``token-mean``: sum over all masked tokens / number of masked tokens (DAPO).
    - ``token-sum``: sum over masked tokens.
    - ``seq-mean-token-sum``: mean over non-empty sequences of each sequence's token sum.
    - ``seq-mean-token-mean``: mean over non-empty sequences of each sequence's token mean
      (original GRPO).
    - ``seq-mean-token-sum-norm``: ``seq-mean-token-sum / loss_scale_factor`` (default T,
      the padded length; Dr. GRPO uses the max response length; GUI-G1 uses 64).

    ``batch_num_tokens`` / ``global_batch_size`` replace the local token / sequence count
    (verl passes the global ones so the loss is invariant to data-parallel sharding).
    A callable ``mode`` is applied as ``mode(loss_mat, mask)`` (the keyword options must
    then be left unset), so one aggregation value can travel through a trainer whether
    it names a verl mode or wraps :func:`trl_aggregate`.

    Args:
        loss_mat: (B, T) per-token loss. mask: (B, T) 0/1.
        mode: one of :data:`AGG_MODES`, or a callable ``fn(loss_mat, mask) -> scalar``.

    Returns:
        0-d float32 tensor.
    """
    if callable(mode):
        if loss_scale_factor is not None or batch_num_tokens is not None or global_batch_size is not None:
            raise ValueError(
                "loss_scale_factor / batch_num_tokens / global_batch_size apply to named modes only; "
                "fold them into your aggregation function"
            )
        return mode(loss_mat, mask)
    mask = _check_shapes(mask, loss_mat=loss_mat)
    if mode == "token-mean":
        denominator = mask.sum() if batch_num_tokens is None else batch_num_tokens
        return _masked_sum(loss_mat, mask) / denominator
    if mode == "token-sum":
        return _masked_sum(loss_mat, mask)
    if mode in ("seq-mean-token-sum", "seq-mean-token-sum-norm", "seq-mean-token-mean"):
        tokens = mask.sum(dim=-1)
        seq_losses = (loss_mat * mask).sum(dim=-1)
        if mode == "seq-mean-token-mean":
            seq_losses = seq_losses / (tokens + 1e-8)
        non_empty = (tokens > 0).float()
        denominator = non_empty.sum() if global_batch_size is None else global_batch_size
        loss = _masked_sum(seq_losses, non_empty) / denominator
        if mode == "seq-mean-token-sum-norm":
            loss = loss / (mask.shape[-1] if loss_scale_factor is None else loss_scale_factor)
        return loss
    raise ValueError(f"unknown aggregation mode {mode!r}; choose one of {', '.join(AGG_MODES)}")


def trl_aggregate(
    loss_mat: torch.Tensor,
    mask: torch.Tensor,
    loss_type: str,
    *,
    max_completion_length: int | None = None,
    num_items_in_batch: float | torch.Tensor | None = None,
) -> torch.Tensor:
    """Reduce a (B, T) per-token loss the way TRL's ``GRPOTrainer`` does for ``loss_type``.

    Reference: TRL 1.16 ``GRPOTrainer._compute_loss`` (the aggregation after the
    per-token loss), before TRL's division by the gradient-accumulation steps, which
    stays the trainer's job:

    - ``grpo``: mean over *all* sequences of ``sum_t / max(n_tokens, 1)``;
    - ``bnpo``: ``sum / max(n_tokens_in_batch, 1)``;
    - ``dr_grpo``: ``sum / (B * max_completion_length)``;
    - ``dapo``: ``sum / max(num_items_in_batch, 1)``, where TRL's normaliser is the token
      count of the whole generation batch divided by ``num_processes`` and scaled by
      ``grad_accum / steps_per_generation``; pass that value (default: local token count).

    Unlike :func:`aggregate` the masking is a plain product, as in TRL.

    Returns:
        0-d float32 tensor.
    """
    mask = _check_shapes(mask, loss_mat=loss_mat)
    masked = loss_mat * mask
    if loss_type == "grpo":
        return (masked.sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    if loss_type == "bnpo":
        return masked.sum() / mask.sum().clamp(min=1.0)
    if loss_type == "dr_grpo":
        if max_completion_length is None:
            raise ValueError("loss_type 'dr_grpo' divides by B * max_completion_length; pass max_completion_length")
        return masked.sum() / (loss_mat.shape[0] * max_completion_length)
    if loss_type == "dapo":
        items = mask.sum() if num_items_in_batch is None else torch.as_tensor(num_items_in_batch, dtype=torch.float32)
        return masked.sum() / items.clamp(min=1.0)
    raise ValueError(f"unknown TRL loss_type {loss_type!r}; choose one of {', '.join(TRL_LOSS_TYPES)}")


def _token_advantages(advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(-1)
    if advantages.shape[0] != mask.shape[0] or advantages.shape[-1] not in (1, mask.shape[-1]):
        raise ValueError(f"advantages of shape {tuple(advantages.shape)} do not fit mask {tuple(mask.shape)}")
    return advantages.to(torch.float32)


def _weighted(pg_losses: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """Multiply in per-sample (B,) or per-token (B, T) weights (verl's ``rollout_is_weights`` slot)."""
    if weights is None:
        return pg_losses
    weights = torch.as_tensor(weights, dtype=torch.float32, device=pg_losses.device)
    return pg_losses * (weights.unsqueeze(-1) if weights.dim() == 1 else weights)


def clipped_surrogate(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    dual_clip: float | None = None,
    agg: Aggregation = "token-mean",
    weights: torch.Tensor | None = None,
    loss_scale_factor: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO clipped surrogate ``max(-A r, -A clip(r, 1-clip_low, 1+clip_high))``, aggregated.

    Reference: verl 0.9.1 ``core_algos.compute_policy_loss_vanilla`` with
    ``clip_ratio_low/high`` = ``clip_low/high`` (``clip_high > clip_low`` is DAPO's
    clip-higher) and ``clip_ratio_c`` = ``dual_clip`` (dual-clip PPO, arXiv 1912.09729:
    for ``A < 0`` the loss is capped at ``-A * dual_clip``). verl always dual-clips
    (default 3.0); here ``dual_clip=None`` turns it off, which is TRL's
    ``-min(r A, clip(r) A)`` and equals verl with ``clip_ratio_c = inf``.
    ``log(r)`` is clamped to [-20, 20] before ``exp``, as verl does.

    Args:
        logp, old_logp, mask: (B, T). advantages: (B,) or (B, T).
        weights: optional (B,) or (B, T) multiplier of the per-token loss before
            aggregation (verl's ``rollout_is_weights``; GUI-G1's per-sample ``rate``).
        agg, loss_scale_factor: see :func:`aggregate`; ``agg`` may be a callable such as a
            :func:`trl_aggregate` partial for TRL's ``loss_type`` reductions.

    Returns:
        ``(loss, stats)``: 0-d float32 loss; stats (detached 0-d tensors, verl's metrics):
        ``clipfrac`` (masked fraction of tokens where the clipped term is taken),
        ``clipfrac_lower`` (fraction hit by the dual clip), ``ppo_kl`` (masked mean of
        ``old_logp - logp``).
    """
    mask = _check_shapes(mask, logp=logp, old_logp=old_logp)
    if dual_clip is not None and not dual_clip > 1.0:
        raise ValueError(f"dual_clip must be > 1.0 (it caps the loss at -A * dual_clip), got {dual_clip}")
    adv = _token_advantages(advantages, mask)
    log_ratio = torch.clamp(logp - old_logp, min=-_LOG_RATIO_CLAMP, max=_LOG_RATIO_CLAMP)
    ratio = torch.exp(log_ratio)
    unclipped = -adv * ratio
    clipped = -adv * torch.clamp(ratio, 1 - clip_low, 1 + clip_high)
    pg_losses = torch.maximum(unclipped, clipped)
    stats = {"clipfrac": _masked_mean(torch.gt(clipped, unclipped).float(), mask)}
    if dual_clip is None:
        stats["clipfrac_lower"] = torch.zeros((), device=pg_losses.device)
    else:
        cap = -adv * dual_clip
        hit = torch.gt(pg_losses, cap) & (adv < 0)
        stats["clipfrac_lower"] = _masked_mean(hit.float(), mask)
        pg_losses = torch.where(adv < 0, torch.minimum(cap, pg_losses), pg_losses)
    stats["ppo_kl"] = _masked_mean(-log_ratio, mask)
    loss = aggregate(_weighted(pg_losses, weights), mask, agg, loss_scale_factor=loss_scale_factor)
    return loss, {k: v.detach() for k, v in stats.items()}


def sequence_log_ratio(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """GSPO's length-normalised sequence log importance ratio ``mean_t(logp - old_logp)``.

    ``log s_i = (1/|y_i|) sum_t log(pi(y_it) / pi_old(y_it))`` (GSPO, arXiv 2507.18071,
    eq. 7), lengths clamped to >= 1. Reference: verl 0.9.1
    ``core_algos.compute_policy_loss_gspo`` (``negative_approx_kl_seq``); TRL 1.x
    ``importance_sampling_level="sequence"`` computes the same value.

    Shapes: (B, T) inputs -> (B,) float32.
    """
    mask = _check_shapes(mask, logp=logp, old_logp=old_logp)
    return ((logp - old_logp) * mask).sum(dim=-1) / mask.sum(dim=-1).clamp(min=1)


def gspo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float = 3e-4,
    clip_high: float = 4e-4,
    agg: Aggregation = "seq-mean-token-mean",
    weights: torch.Tensor | None = None,
    loss_scale_factor: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """GSPO clipped loss with the sequence-level importance ratio (arXiv 2507.18071).

    Reference: verl 0.9.1 ``core_algos.compute_policy_loss_gspo``. The per-token ratio is
    ``s_it = sg[s_i] * pi_t / sg[pi_t]``: its value is the sequence ratio ``s_i`` (from
    :func:`sequence_log_ratio`, log clamped at 10) and its gradient flows through each
    token's ``logp``. Default clip range 3e-4 / 4e-4 is the paper's (verl takes
    ``clip_ratio_low/high`` from its config).

    Args / Returns: as :func:`clipped_surrogate` (no dual clip; ``clipfrac_lower`` is 0).
    """
    mask = _check_shapes(mask, logp=logp, old_logp=old_logp)
    adv = _token_advantages(advantages, mask)
    seq_log_ratio = sequence_log_ratio(logp, old_logp, mask).detach()
    log_ratio = torch.clamp(logp - logp.detach() + seq_log_ratio.unsqueeze(-1), max=_GSPO_LOG_RATIO_MAX)
    ratio = torch.exp(log_ratio)
    unclipped = -adv * ratio
    clipped = -adv * torch.clamp(ratio, 1 - clip_low, 1 + clip_high)
    pg_losses = torch.maximum(unclipped, clipped)
    loss = aggregate(_weighted(pg_losses, weights), mask, agg, loss_scale_factor=loss_scale_factor)
    stats = {
        "clipfrac": _masked_mean(torch.gt(clipped, unclipped).float(), mask),
        "clipfrac_lower": torch.zeros((), device=loss.device),
        "ppo_kl": _masked_mean(old_logp - logp, mask),
    }
    return loss, {k: v.detach() for k, v in stats.items()}


def _kl_forward(logp: torch.Tensor, ref_logp: torch.Tensor, base: str) -> torch.Tensor:
    if base == "k1":
        return logp - ref_logp
    if base == "abs":
        return (logp - ref_logp).abs()
    if base == "k2":
        return 0.5 * (logp - ref_logp).square()
    log_ratio = torch.clamp(ref_logp - logp, min=-_LOG_RATIO_CLAMP, max=_LOG_RATIO_CLAMP)
    return torch.clamp(torch.exp(log_ratio) - log_ratio - 1, min=-_K3_CLAMP, max=_K3_CLAMP)


def kl_penalty(logp: torch.Tensor, ref_logp: torch.Tensor, estimator: str) -> torch.Tensor:
    """Per-token KL(pi || pi_ref) estimate (Schulman, "Approximating KL divergence", 2020).

    Reference: verl 0.9.1 ``core_algos.kl_penalty`` / ``kl_penalty_forward``.

    - ``k1`` (``kl``): ``logp - ref_logp``;
    - ``k2`` (``mse``): ``0.5 (logp - ref_logp)^2``;
    - ``k3`` (``low_var_kl``): ``exp(d) - d - 1`` with ``d = ref_logp - logp`` clamped to
      [-20, 20] and the result clamped to [-10, 10] (verl's clamps; TRL's ``beta`` term
      is the unclamped k3);
    - ``abs``: ``|logp - ref_logp|``.

    A trailing ``+`` (``k1+``, ``k3+``, ...) keeps the value but takes the gradient of k2,
    verl's straight-through trick for an unbiased KL gradient.

    Shapes: (B, T) in, (B, T) float32 out (unmasked; aggregate with :func:`aggregate`).
    """
    straight_through = estimator.endswith("+")
    base = _KL_NAMES.get(estimator[:-1] if straight_through else estimator)
    if base is None:
        raise ValueError(f"unknown KL estimator {estimator!r}; choose one of {', '.join(_KL_NAMES)} (optionally + '+')")
    if logp.shape != ref_logp.shape:
        raise ValueError(f"logp {tuple(logp.shape)} and ref_logp {tuple(ref_logp.shape)} must have the same shape")
    value = _kl_forward(logp.float(), ref_logp.float(), base)
    if not straight_through or base == "k2":
        return value
    k2 = 0.5 * (logp.float() - ref_logp.float()).square()
    return k2 - k2.detach() + value.detach()
