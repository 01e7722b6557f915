"""Outcome-reward advantage estimators (GRPO, RLOO, REINFORCE++), as pure tensor functions.

Every estimator reproduces the verl 0.9.1 function named in its docstring
(``verl/trainer/ppo/core_algos.py``) number for number; the tests compare against
numbers produced by verl itself (``tests/rl/golden/make_rl_golden.py``).

One thing is added on top of verl: a reward may be ``NaN``, which means *the reward
could not be computed* (``RewardResult.score is None``, see ``zoo.rl.batching``).
Such a sample is left out of its group's statistics and gets advantage 0, as TRL's
``GRPOTrainer`` treats unscorable completions; so do the samples of a group left with a
single scored sample (no baseline; TRL gives them 0 too, DAPO would drop the group).
A group that *is* a single sample keeps verl's convention. Without NaNs the output
equals verl's.

The estimators share one call shape, so a trainer can pick one by name
(:data:`zoo.algorithms.ADVANTAGE_ESTIMATORS` names them)::

    fn = ADVANTAGE_ESTIMATORS.get("grpo")
    adv = fn(rewards, group_ids, mask=mask, **options)   # (B, T); without mask: (B,)

``group_ids`` is what verl calls ``index`` (the prompt ``uid``): an int tensor or any
sequence of hashables, one per sample.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import torch

GroupIds = torch.Tensor | Sequence[Hashable]

_WHITEN_EPS = 1e-8  # verl.utils.torch_functional.masked_mean / masked_whiten constant


def _as_rewards(rewards: torch.Tensor | Sequence[float]) -> torch.Tensor:
    scores = torch.as_tensor(rewards, dtype=torch.float32)
    if scores.dim() != 1:
        raise ValueError(
            f"rewards must be one scalar per sample, shape (B,), got shape {tuple(scores.shape)}; "
            "sum token-level rewards over the response first"
        )
    return scores.clone()


def group_index(group_ids: GroupIds, batch_size: int) -> torch.Tensor:
    """Map arbitrary group ids to ``0..G-1`` in order of first appearance; returns (B,) int64."""
    keys = group_ids.reshape(-1).tolist() if isinstance(group_ids, torch.Tensor) else list(group_ids)
    if len(keys) != batch_size:
        raise ValueError(
            f"group_ids has {len(keys)} entries but there are {batch_size} rewards; give one id per sample"
        )
    first: dict[Hashable, int] = {}
    return torch.tensor([first.setdefault(k, len(first)) for k in keys], dtype=torch.long)


def _group_stats(scores: torch.Tensor, group_ids: GroupIds, with_std: bool) -> tuple[torch.Tensor, ...]:
    """Per-sample (mean, std, count) of its group over the scored (non-NaN) samples.

    Each group's mean/std is taken with ``torch.mean`` / ``torch.std`` (unbiased) on the
    group's scores in batch order, exactly the reductions verl runs, so the float32
    results agree bit for bit (this matters for equal-reward groups, where a mean that
    is off by one ulp, divided by ``std + eps``, would give a visibly non-zero advantage).
    A group of one sample gets mean 0 and std 1, verl's convention. ``count`` is the
    number of scored samples in the group, or -1 for a group of several samples left
    with fewer than two scored ones (no baseline: those samples get advantage 0).
    """
    index = group_index(group_ids, scores.shape[0]).to(scores.device)
    valid = ~torch.isnan(scores)
    mean = torch.zeros_like(scores)
    std = torch.ones_like(scores)
    count = torch.full_like(scores, -1.0)
    for g in range(int(index.max()) + 1 if index.numel() else 0):
        members = index == g
        rows = (members & valid).nonzero(as_tuple=True)[0]
        if rows.numel() > 1:
            values = scores[rows]
            mean[members] = values.mean()
            if with_std:
                std[members] = values.std()
            count[members] = float(rows.numel())
        elif int(members.sum()) == 1:
            count[members] = 1.0
    return mean, std, count


def _finish(adv: torch.Tensor, scores: torch.Tensor, count: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Zero the advantage of unscored samples and of groups without a baseline; lay out as asked."""
    no_signal = torch.isnan(scores) | (count < 0)
    return _to_tokens(torch.where(no_signal, 0.0, adv), mask)


def _to_tokens(adv: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """verl's broadcast of a per-sequence advantage: ``adv[:, None] * response_mask``."""
    if mask is None:
        return adv
    mask = _as_mask(mask, adv.shape[0])
    return adv.unsqueeze(-1) * mask


def _as_mask(mask: torch.Tensor, batch_size: int) -> torch.Tensor:
    if mask.dim() != 2 or mask.shape[0] != batch_size:
        raise ValueError(f"mask must have shape (B={batch_size}, T), got {tuple(mask.shape)}")
    return mask.to(torch.float32)


def grpo(
    rewards: torch.Tensor | Sequence[float],
    group_ids: GroupIds,
    *,
    normalize_std: bool = True,
    eps: float = 1e-6,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """GRPO group-relative advantage ``(r - mean_g) / (std_g + eps)``, or ``r - mean_g``.

    Reference: verl 0.9.1 ``core_algos.compute_grpo_outcome_advantage``
    (``norm_adv_by_std_in_grpo`` = ``normalize_std``, ``epsilon`` = ``eps``). std is the
    unbiased (Bessel) std, as ``torch.std``. ``normalize_std=False`` is Dr. GRPO
    (arXiv 2503.20783) and GUI-G1's advantage. Groups of one sample get mean 0, std 1,
    so their advantage is ``r / (1 + eps)`` — verl's behaviour, kept on purpose. TRL
    differs here (it zeroes them) and uses ``eps=1e-4``.

    Args:
        rewards: (B,) scalar outcome reward per sample; NaN = reward unavailable
            (advantage 0, left out of its group's mean/std; see the module docstring).
        group_ids: (B,) group (prompt) id per sample.
        normalize_std: divide by the group std.
        eps: added to the std before dividing.
        mask: optional (B, T) response mask; when given, returns verl's token layout.

    Returns:
        (B,) float32 advantages, or (B, T) ``adv[:, None] * mask`` when ``mask`` is given.
    """
    scores = _as_rewards(rewards)
    mean, std, count = _group_stats(scores, group_ids, with_std=normalize_std)
    adv = (scores - mean) / (std + eps) if normalize_std else scores - mean
    return _finish(adv, scores, count, mask)


def rloo(
    rewards: torch.Tensor | Sequence[float], group_ids: GroupIds, *, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """REINFORCE leave-one-out advantage ``r_i - mean_{j != i} r_j`` (arXiv 2402.14740).

    Reference: verl 0.9.1 ``core_algos.compute_rloo_outcome_advantage``, which writes it as
    ``r * n / (n - 1) - mean * n / (n - 1)``; the same float32 operations are used here.
    A group of one keeps its raw reward (verl). NaN rewards: see :func:`grpo`.

    Args:
        rewards: (B,) outcome rewards; group_ids: (B,); mask: optional (B, T).

    Returns:
        (B,) float32 advantages, or (B, T) when ``mask`` is given.
    """
    scores = _as_rewards(rewards)
    mean, _, count = _group_stats(scores, group_ids, with_std=False)
    loo = scores * count / (count - 1) - mean * count / (count - 1)
    return _finish(torch.where(count > 1, loo, scores), scores, count, mask)


def masked_whiten(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Whiten ``values`` with the mean and unbiased variance of its masked entries.

    Reference: verl 0.9.1 ``verl/utils/torch_functional.py::masked_whiten`` (with
    ``masked_mean``'s ``+1e-8`` in the denominators and ``rsqrt(var + 1e-8)``).
    Shapes: values, mask (B, T). Needs at least two masked entries.
    """
    count = mask.sum()
    if count < 2:
        raise ValueError(
            f"whitening needs at least 2 unmasked tokens, got {int(count)}; "
            "use a larger batch or an estimator that does not whiten over the batch"
        )
    mean = torch.where(mask.bool(), values, 0.0).mul(mask).sum() / (count + _WHITEN_EPS)
    centred_sq = (values - mean) ** 2
    var = torch.where(mask.bool(), centred_sq, 0.0).mul(mask).sum() / (count + _WHITEN_EPS)
    var = var * (count / (count - 1))
    return (values - mean) * torch.rsqrt(var + _WHITEN_EPS)


def _drop_missing(scores: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Zero the reward and the mask row of every sample whose reward is NaN."""
    missing = torch.isnan(scores)
    return torch.nan_to_num(scores, nan=0.0), mask * (~missing).unsqueeze(-1).to(mask.dtype)


def _require_mask(mask: torch.Tensor | None, name: str, batch_size: int) -> torch.Tensor:
    if mask is None:
        raise ValueError(f"{name} whitens over the batch's response tokens and needs mask=(B, T)")
    return _as_mask(mask, batch_size)


def reinforce_plus_plus_baseline(
    rewards: torch.Tensor | Sequence[float], group_ids: GroupIds, *, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """REINFORCE++ with a group-mean baseline (arXiv 2501.03262), whitened over the batch.

    Reference: verl 0.9.1 ``core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage``:
    ``r - mean_g`` (mean 0 for groups of one), broadcast over the response tokens, then
    whitened with the mean/var of *all* masked tokens in the batch (so longer responses
    weigh more in the statistics), then masked.

    Args:
        rewards: (B,) outcome rewards (NaN = unavailable: row masked out).
        group_ids: (B,) group ids.
        mask: (B, T) response mask, required.

    Returns:
        (B, T) float32 token advantages.
    """
    scores = _as_rewards(rewards)
    token_mask = _require_mask(mask, "reinforce-plus-plus-baseline", scores.shape[0])
    mean, _, count = _group_stats(scores, group_ids, with_std=False)
    centred, token_mask = _drop_missing(torch.where(count < 0, float("nan"), scores - mean), token_mask)
    tiled = centred.unsqueeze(-1).expand_as(token_mask) * token_mask
    return masked_whiten(tiled, token_mask) * token_mask


def reinforce_plus_plus(
    rewards: torch.Tensor | Sequence[float],
    group_ids: GroupIds | None = None,
    *,
    mask: torch.Tensor | None = None,
    gamma: float = 1.0,
) -> torch.Tensor:
    """REINFORCE++ (arXiv 2501.03262): discounted return-to-go, whitened over the batch.

    Reference: verl 0.9.1 ``core_algos.compute_reinforce_plus_plus_outcome_advantage``
    (``config.gamma`` = ``gamma``): returns run backwards over the tokens; a masked
    token (e.g. a tool observation) carries the running return through unchanged and
    gets return 0. ``group_ids`` is ignored (no group baseline), accepted so every
    registered estimator has the same call shape — verl's also ignores ``index``.

    Args:
        rewards: (B,) outcome rewards, placed on each row's last unmasked token (where
            verl's reward manager puts them), or (B, T) token-level rewards.
            NaN outcome rewards mask the row out.
        group_ids: ignored.
        mask: (B, T) response mask, required.
        gamma: discount factor.

    Returns:
        (B, T) float32 token advantages.
    """
    token_rewards = torch.as_tensor(rewards, dtype=torch.float32)
    token_mask = _require_mask(mask, "reinforce-plus-plus", token_rewards.shape[0])
    if token_rewards.dim() == 1:
        scores, token_mask = _drop_missing(token_rewards, token_mask)
        token_rewards = outcome_to_token_rewards(scores, token_mask)
    elif token_rewards.shape != token_mask.shape:
        raise ValueError(f"token rewards {tuple(token_rewards.shape)} and mask {tuple(token_mask.shape)} differ")
    returns = torch.zeros_like(token_rewards)
    running = torch.zeros_like(token_rewards[:, 0])
    for t in reversed(range(token_rewards.shape[1])):
        step = token_rewards[:, t] + gamma * running
        returns[:, t] = step * token_mask[:, t]
        running = step * token_mask[:, t] + running * (1 - token_mask[:, t])
    return masked_whiten(returns, token_mask) * token_mask


def outcome_to_token_rewards(rewards: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Place each (B,) outcome reward on its row's last unmasked token; returns (B, T) float32.

    Rows with no unmasked token get no reward.
    """
    token_mask = _as_mask(mask, rewards.shape[0])
    positions = torch.arange(token_mask.shape[1], device=token_mask.device)
    last = (positions * (token_mask > 0)).argmax(dim=-1)
    out = torch.zeros_like(token_mask)
    has_tokens = token_mask.sum(-1) > 0
    out[has_tokens, last[has_tokens]] = rewards.to(torch.float32)[has_tokens]
    return out


def to_token_level(advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B,) per-sequence advantages -> (B, T) ``adv[:, None] * mask`` (verl's layout); (B, T) passes through."""
    if advantages.dim() == 2:
        return advantages.to(torch.float32) * _as_mask(mask, advantages.shape[0])
    return _to_tokens(advantages.to(torch.float32), mask)
