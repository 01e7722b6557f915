"""zoo.rl.batching: infra-failure masking and DAPO dynamic sampling.

The dynamic-sampling rule is checked against verl 0.9.1's own criterion
(``verl/trainer/ppo/v1/replay_buffer.py::_dapo_filtered_keys``: a group is filtered when
``len(values) > 1 and np.std(values) == 0.0``), evaluated here with numpy on the golden
advantage batches.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from rewards.base import RewardResult
from tests.rl._golden import load
from zoo.rl import aggregate, clipped_surrogate, grpo
from zoo.rl.batching import dynamic_sampling_keep, failed, mask_failed, rewards_tensor


def test_rewards_tensor_turns_none_into_nan():
    scores = [1.0, None, RewardResult(score=0.5), RewardResult(score=None, error="render worker died"), 2]
    rewards = rewards_tensor(scores)
    assert rewards.dtype == torch.float32
    assert failed(rewards).tolist() == [False, True, False, True, False]
    assert rewards[~failed(rewards)].tolist() == [1.0, 0.5, 2.0]


def test_rewards_tensor_rejects_non_numbers():
    with pytest.raises(TypeError, match=r"reward #1 is '0.5' \(str\)"):
        rewards_tensor([1.0, "0.5"])


def test_mask_failed_zeroes_rows_and_counts(caplog):
    rewards = torch.tensor([1.0, math.nan, 0.0])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1], [1, 0, 0]])
    with caplog.at_level(logging.WARNING, logger="zoo.rl.batching"):
        new_mask, num_failed = mask_failed(mask, rewards)
    assert num_failed == 1 and "1 of 3 samples" in caplog.text
    assert new_mask.dtype == mask.dtype
    assert new_mask.tolist() == [[1, 1, 0], [0, 0, 0], [1, 0, 0]]


def test_failed_samples_leave_advantages_and_loss_as_if_absent():
    """End to end: NaN rewards -> grpo + masked loss == the batch without those samples."""
    gen = torch.Generator().manual_seed(0)
    rewards = torch.tensor([1.0, math.nan, 0.0, 0.5, 2.0, 1.0, math.nan, 0.0])
    groups = [0, 0, 0, 0, 1, 1, 1, 1]
    mask = (torch.rand(8, 5, generator=gen) > 0.3).float()
    mask[:, 0] = 1
    old = -torch.rand(8, 5, generator=gen)
    logp = old + 0.3 * torch.randn(8, 5, generator=gen)
    masked, num_failed = mask_failed(mask, rewards)
    loss, _ = clipped_surrogate(logp, old, grpo(rewards, groups), masked, clip_high=0.28)
    keep = ~failed(rewards)
    kept_groups = [g for g, k in zip(groups, keep, strict=True) if k]
    expected, _ = clipped_surrogate(logp[keep], old[keep], grpo(rewards[keep], kept_groups), mask[keep], clip_high=0.28)
    assert num_failed == 2
    assert_close(loss, expected)


def _verl_filtered_groups(rewards: list[float], uids: list) -> set:
    """verl 0.9.1 replay_buffer rule, transcribed: filtered iff len > 1 and np.std == 0."""
    values = defaultdict(list)
    for r, uid in zip(rewards, uids, strict=True):
        values[uid].append(float(r))
    return {uid for uid, v in values.items() if len(v) > 1 and float(np.std(v)) == 0.0}


@pytest.mark.parametrize("case", load("advantages")["verl"], ids=lambda c: f"seed{c['seed']}")
def test_dynamic_sampling_matches_verl_rule(case):
    result = dynamic_sampling_keep(torch.tensor(case["rewards"]), case["uids"])
    filtered = _verl_filtered_groups(case["rewards"], case["uids"])
    assert filtered  # the golden batches contain equal-reward groups
    assert [uid not in filtered for uid in case["uids"]] == result.keep.tolist()
    assert result.num_groups == len(set(case["uids"]))
    assert result.num_dropped_groups == len(filtered)


def test_dynamic_sampling_ignores_missing_rewards():
    rewards = torch.tensor([1.0, math.nan, 1.0, 0.0, 1.0, math.nan, math.nan, 3.0])
    result = dynamic_sampling_keep(rewards, [0, 0, 0, 1, 1, 2, 2, 3])
    # group 0: scored samples agree; 1: differ; 2: nothing scored; 3: a single sample (kept, as verl)
    assert result.keep.tolist() == [False, False, False, True, True, False, False, True]
    assert result.num_dropped_groups == 2


def test_aggregate_after_dynamic_sampling_only_sees_kept_rows():
    rewards = torch.tensor([1.0, 1.0, 0.0, 1.0])
    keep = dynamic_sampling_keep(rewards, ["a", "a", "b", "b"]).keep
    loss_mat = torch.arange(8.0).reshape(4, 2)
    assert aggregate(loss_mat[keep], torch.ones(2, 2), "token-mean").item() == pytest.approx((4 + 5 + 6 + 7) / 4)
