"""Batch-level selection before the loss: infra-failure masking and DAPO dynamic sampling.

Two kinds of samples carry no learning signal and must not reach the gradient:

- **infra failures** — the reward could not be computed (``RewardResult.score is None``:
  render worker died, judge timed out). Scoring them 0 would punish valid work, so
  they become ``NaN`` rewards, which the estimators in :mod:`zoo.rl.advantages` leave
  out of the group statistics (advantage 0), and their loss-mask row is zeroed
  (:func:`mask_failed`). They are counted for the logs.
- **zero-variance groups** — every sample of a prompt got the same reward, so every
  group-relative advantage is 0. DAPO (arXiv 2503.14476, "dynamic sampling") drops
  them and samples more prompts; :func:`dynamic_sampling_keep` says which rows stay, and
  :class:`GroupTopUp` is the loop that refills the batch with further rollouts (as UI-S1's
  trainer does after its own future-reward filter, :func:`zoo.rl.semi_online.future_reward_filter`).

Shapes: rewards (B,), group_ids (B,), mask (B, T).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import torch

from rewards.base import RewardResult
from zoo.rl.advantages import GroupIds, group_index

logger = logging.getLogger(__name__)

Row = TypeVar("Row")
MAX_GEN_BATCHES = 10  # verl/trainer/config/ppo_trainer.yaml: algorithm.filter_groups.max_num_gen_batches


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


class TopUpExhausted(RuntimeError):
    """The filter kept too few prompts in ``max_gen_batches`` rollouts (upstream raises the same way)."""


class GroupTopUp(Generic[Row]):
    """UI-S1's batch top-up: filtered rollouts accumulate until ``target`` prompts are kept.

    Reference: ``UI-S1/verl/trainer/ppo/dapo_ray_trainer.py::RayTrajDAPOTrainer.fit``
    (X-PLUG/MobileAgent@f7702e46), the ``filter_groups.enable`` branch. Per generation batch:
    the rows of the prompts the filter keeps are appended to the batch and the kept prompts are
    counted (``num_prompt_in_batch``). While fewer than ``train_batch_size`` prompts are kept,
    another batch is rolled out, unless ``max_num_gen_batches`` (> 0) batches have been, which is
    an error. Once enough are kept, the batch is *aligned*: rows are walked in order and a row
    stays when its prompt was already taken or fewer than ``train_batch_size`` prompts have been
    taken, so the first ``train_batch_size`` prompts to appear are trained on, whole, and the
    surplus of the last batch is dropped.

    Prompt ids must be unique across the batches of one step (upstream draws a ``uuid`` per
    prompt); a caller re-drawing the same episode gives it a fresh id. Rows are any objects; the
    caller passes each row's prompt id and the filter's keep flag.

    Example::

        top_up = GroupTopUp(target=8)
        while not top_up.full:
            rows, ids, keep = rollout_and_filter()
            top_up.add(rows, ids, keep)
        batch = top_up.batch()
    """

    def __init__(self, target: int, max_gen_batches: int = MAX_GEN_BATCHES) -> None:
        if isinstance(target, bool) or not isinstance(target, int) or target < 1:
            raise ValueError(f"target must be a positive number of prompts, got {target!r}")
        self.target, self.max_gen_batches = target, max_gen_batches
        self.rows: list[Row] = []
        self.ids: list[Hashable] = []
        self.kept_prompts = 0
        self.gen_batches = 0

    @property
    def full(self) -> bool:
        """Enough prompts kept: :meth:`batch` may be taken."""
        return self.kept_prompts >= self.target

    def add(self, rows: Sequence[Row], group_ids: Sequence[Hashable], keep: torch.Tensor | Sequence[bool]) -> None:
        """Add one generation batch: its rows, their prompt ids and the filter's (B,) keep flags.

        Raises :class:`TopUpExhausted` when this batch still leaves fewer than ``target`` prompts
        and ``max_gen_batches`` (> 0) batches have been added.
        """
        flags = keep.tolist() if isinstance(keep, torch.Tensor) else list(keep)
        if not len(rows) == len(group_ids) == len(flags):
            raise ValueError(f"got {len(rows)} rows, {len(group_ids)} prompt ids and {len(flags)} keep flags")
        self.gen_batches += 1
        kept = [(row, gid) for row, gid, k in zip(rows, group_ids, flags) if k]
        self.kept_prompts += len({gid for _, gid in kept})
        self.rows.extend(row for row, _ in kept)
        self.ids.extend(gid for _, gid in kept)
        if not self.full and 0 < self.max_gen_batches <= self.gen_batches:
            raise TopUpExhausted(
                f"the future-reward filter kept {self.kept_prompts} of the {self.target} prompts a step needs "
                f"after {self.gen_batches} rollout batches; the tasks are too easy or too hard for the policy. "
                "Lower multi_turn.filter_std_threshold, switch the filter off (null), or raise "
                "multi_turn.max_gen_batches (0 = no limit)"
            )

    def batch(self) -> list[Row]:
        """The rows of the first ``target`` prompts, in the order they were added (upstream's alignment)."""
        if not self.full:
            raise ValueError(f"only {self.kept_prompts} of {self.target} prompts kept; add more batches first")
        taken: set[Hashable] = set()
        out = []
        for row, gid in zip(self.rows, self.ids):
            if gid not in taken and len(taken) < self.target:
                taken.add(gid)
            if gid in taken:
                out.append(row)
        return out
