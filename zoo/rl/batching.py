"""Batch-level selection before the loss: infra-failure masking and DAPO dynamic sampling.

Two kinds of samples carry no learning signal and must not reach the gradient:

- **infra failures** — the reward could not be computed (``RewardResult.score is None``:
  render worker died, judge timed out). Scoring them 0 would punish valid work, so
  they become ``NaN`` rewards, which the estimators in :mod:`zoo.rl.advantages` leave
  out of the group statistics (advantage 0), and their loss-mask row is zeroed
  (:func:`mask_failed`). They are counted for the logs.
- **zero-variance groups** — every sample of a prompt got the same reward, so every
  group-relative advantage is 0. DAPO (arXiv 2503.14476, "dynamic sampling") drops
  them and samples more prompts; :func:`dynamic_sampling_keep` says which rows stay.

Shapes: rewards (B,), group_ids (B,), mask (B, T).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from rewards.base import RewardResult
from zoo.rl.advantages import GroupIds, group_index

logger = logging.getLogger(__name__)


def rewards_tensor(scores: Sequence[float | RewardResult | None] | torch.Tensor) -> torch.Tensor:
    """Rewards as a (B,) float32 tensor with ``NaN`` where no score could be computed.

    Accepts floats, ``None`` (TRL's reward-function convention for "no score"), or
    :class:`rewards.base.RewardResult` (``score is None`` = infra failure).
    """
    if isinstance(scores, torch.Tensor):
        return scores.to(torch.float32).reshape(-1)
    values = []
    for i, item in enumerate(scores):
        value = item.score if isinstance(item, RewardResult) else item
        if value is not None and not isinstance(value, (int, float)):
            kind = type(value).__name__
            raise TypeError(f"reward #{i} is {value!r} ({kind}); expected a number, None or RewardResult")
        values.append(math.nan if value is None else float(value))
    return torch.tensor(values, dtype=torch.float32)


def failed(rewards: torch.Tensor) -> torch.Tensor:
    """(B,) bool: True where the reward is missing (NaN)."""
    return torch.isnan(rewards)


def mask_failed(mask: torch.Tensor, rewards: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Zero the (B, T) loss-mask rows of samples whose reward is missing.

    Returns:
        ``(mask, num_failed)``: the new mask (same dtype) and how many samples were
        masked, for the logs (e.g. ``rewards/num_failed``).
    """
    if mask.dim() != 2 or mask.shape[0] != rewards.shape[0]:
        raise ValueError(f"mask {tuple(mask.shape)} must be (B, T) with B = {rewards.shape[0]} rewards")
    bad = failed(rewards).to(mask.device)
    num_failed = int(bad.sum())
    if num_failed:
        logger.warning("%d of %d samples have no reward (infra failure); masked out of loss", num_failed, len(bad))
    return mask * (~bad).unsqueeze(-1).to(mask.dtype), num_failed


@dataclass(frozen=True)
class GroupFilter:
    """Result of :func:`dynamic_sampling_keep`.

    Attributes:
        keep: (B,) bool, rows of groups that carry signal.
        num_groups: groups in the batch.
        num_dropped_groups: groups dropped for zero reward variance.
    """

    keep: torch.Tensor
    num_groups: int
    num_dropped_groups: int


def dynamic_sampling_keep(rewards: torch.Tensor, group_ids: GroupIds) -> GroupFilter:
    """DAPO dynamic sampling: drop groups whose (available) rewards are all equal.

    Reference: verl 0.9.1 ``verl/trainer/ppo/v1/replay_buffer.py::_dapo_filtered_keys``
    drops a group when it has more than one sample and ``np.std`` of its rewards is 0;
    groups of one are kept. Here "std is 0" is tested exactly as ``max == min``, which
    is the same for every finite input and cannot be fooled by rounding in a mean.
    Missing (NaN) rewards are ignored, so a group whose scored samples all agree is
    dropped; a group with no scored sample is dropped too (nothing to learn).

    Args:
        rewards: (B,) rewards, NaN = missing.
        group_ids: (B,) group ids.

    Returns:
        :class:`GroupFilter`; index the batch with ``keep``.
    """
    rewards = rewards.to(torch.float32).reshape(-1)
    index = group_index(group_ids, rewards.shape[0]).to(rewards.device)
    num_groups = int(index.max()) + 1 if index.numel() else 0
    valid = ~torch.isnan(rewards)
    keep = torch.ones_like(rewards, dtype=torch.bool)
    dropped = 0
    for g in range(num_groups):
        members = index == g
        scored = rewards[members & valid]
        flat = scored.numel() == 0 or (members.sum() > 1 and bool(scored.max() == scored.min()))
        if flat:
            keep[members] = False
            dropped += 1
    return GroupFilter(keep=keep, num_groups=num_groups, num_dropped_groups=dropped)
