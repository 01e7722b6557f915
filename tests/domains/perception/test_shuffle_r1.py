"""Shuffle-R1's Pairwise Trajectory Sampling and Advantage-based Batch Shuffle, on hand-computed cases.

Reference: xiaomi-research/shuffle-r1 @ 31d3ff03c38c8527f9cc6f55b572f0cf798fcfbd,
``shuffle_r1/custom_algos.py`` (``compute_pairwise_purning_grpo_advantage``, ``normalize_advantage``;
its ``__main__`` example is the first case below) and ``shuffle_r1/ray_trainer.py``
(``experience_resampling``). Every expected number is worked out by hand in the comments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from domains.perception.shuffle_r1 import ShuffleR1, pair_trajectories, sampling_probabilities, shuffle_pairs
from zoo.algorithms import ADVANTAGE_ESTIMATORS
from zoo.engines.vlm.plugins import ScoredBatch

GRPO = ADVANTAGE_ESTIMATORS.get("grpo")


def test_pairs_of_the_authors_example_group():
    # custom_algos.py __main__: one group of 8 with outcome rewards 8, 4, 4, 4, 5, 3, 3, 3.
    # mean 4.25; unbiased var (3.75^2 + 3*0.25^2 + 0.75^2 + 3*1.25^2) / 7 = 19.5 / 7, std 1.66905.
    # adv: 2.24677, -0.14979 (x3), 0.44936, -0.74893 (x3). Ranked (stable, descending): 0 4 1 2 3 5 6 7.
    # Outside-in pairs: (0,7) (4,6) (1,5) (2,3); prune 0.5 keeps int(4 * 0.5) = 2: the first two.
    rewards = torch.tensor([8.0, 4, 4, 4, 5, 3, 3, 3])
    adv = GRPO(rewards, [0] * 8)
    std = math.sqrt(19.5 / 7)
    assert adv[0].item() == pytest.approx(3.75 / (std + 1e-6), rel=1e-6)
    pairs = pair_trajectories(adv, [0] * 8, prune_ratio=0.5)
    assert [p.rows for p in pairs] == [(0, 7), (4, 6)]
    hi, lo = 3.75 / std, -1.25 / std
    assert pairs[0].sum == pytest.approx(abs(hi) + abs(lo), rel=1e-5)
    assert pairs[0].max == pytest.approx(abs(hi), rel=1e-5)
    assert pairs[0].mean == pytest.approx((abs(hi) + abs(lo)) / 2, rel=1e-5)
    assert pairs[0].pos == pytest.approx(abs(hi), rel=1e-5)
    # the second pair: 0.75 / std and -1.25 / std; its 'pos' weight is |0.44936|
    assert pairs[1].pos == pytest.approx(0.75 / std, rel=1e-5) and pairs[1].sum == pytest.approx(2.0 / std, rel=1e-5)


def test_pairs_stay_within_groups_and_prune_ratio_zero_keeps_all():
    # two groups of 4: rewards 3 1 2 0 -> adv rank 0 2 1 3 -> pairs (0,3) (2,1); second group reversed.
    adv = GRPO(torch.tensor([3.0, 1, 2, 0, 0, 2, 1, 3]), [0, 0, 0, 0, 1, 1, 1, 1])
    assert [p.rows for p in pair_trajectories(adv, [0, 0, 0, 0, 1, 1, 1, 1], 0.0)] == [(0, 3), (2, 1), (7, 4), (5, 6)]
    assert [p.rows for p in pair_trajectories(adv, [0, 0, 0, 0, 1, 1, 1, 1], 0.5)] == [(0, 3), (7, 4)]
    # a pair whose advantages are both negative: 'pos' is |max(a1, a2)|, the smaller magnitude
    pair = pair_trajectories(torch.tensor([-1.0, -3.0]), [0, 0], 0.0)[0]
    assert pair.rows == (0, 1) and pair.pos == 1.0 and pair.max == 3.0


def test_odd_groups_are_refused():
    with pytest.raises(ValueError, match="G must be even"):
        pair_trajectories(torch.zeros(3), [0, 0, 0])


def test_sampling_probabilities_each_method():
    w = [1.0, 2.0, 3.0]
    assert sampling_probabilities(w, "power", 2) == pytest.approx(np.array([1, 4, 9]) / 14)
    # softmax: T = (t_max - t_min) cos(pi/2 * step/total) + t_min: 2 at the start, 1 at the end
    start = np.exp(np.array(w) / 2)
    assert sampling_probabilities(w, "softmax", step=0, total_steps=10) == pytest.approx(start / start.sum())
    end = np.exp(np.array(w))
    assert sampling_probabilities(w, "softmax", step=10, total_steps=10) == pytest.approx(end / end.sum())
    # log_softmax: T = (t_max - t_min) sin(...) + t_min: 1 at the start -> log(1 + w)
    logs = np.log1p(np.array(w))
    assert sampling_probabilities(w, "log_softmax", step=0, total_steps=10) == pytest.approx(logs / logs.sum())
    inv = 1 / (np.array(w) + 1e-6)
    assert sampling_probabilities(w, "inverse") == pytest.approx(inv / inv.sum())
    assert sampling_probabilities([0.0, 0.0], "power").tolist() == [0.0, 0.0]  # upstream: NaN


def test_shuffle_rounds_sizes_and_replay_off():
    rng = np.random.default_rng(0)
    uniform = np.full(6, 1 / 6)
    order = shuffle_pairs(uniform, replay_times=3, rng=rng)
    assert len(order) == 6
    assert all(len(set(order[i : i + 2])) == 2 for i in (0, 2, 4))  # 3 rounds of 2, each without replacement
    assert shuffle_pairs(uniform, replay_times=1, rng=rng) == list(range(6))
    assert len(shuffle_pairs(np.full(5, 0.2), replay_times=2, rng=rng)) == 5  # rounds of 3 and 2


def test_shuffle_favours_high_advantage_pairs_and_fills_from_zero_weight_ones():
    rng = np.random.default_rng(0)
    # two pairs, weights 9:1, two rounds of one draw: pair 0 is drawn with probability 0.9 per round
    draws = [i for _ in range(2000) for i in shuffle_pairs(np.array([0.9, 0.1]), 2, rng)]
    assert draws.count(0) / len(draws) == pytest.approx(0.9, abs=0.02)
    # a round of 3 with only 2 non-zero pairs: both, plus one zero-weight pair (upstream would raise)
    order = shuffle_pairs(np.array([0.5, 0.5, 0.0, 0.0, 0.0, 0.0]), 2, rng)
    assert set(order[:3]) >= {0, 1} and set(order[3:]) >= {0, 1}


def test_plugin_rows_are_pairs_in_shuffled_order():
    plugin = ShuffleR1(prune_ratio=0.5, replay_times=2)
    rewards = torch.tensor([8.0, 4, 4, 4, 5, 3, 3, 3])
    batch = ScoredBatch(rewards, GRPO(rewards, [0] * 8), torch.zeros(8, dtype=torch.long), 1, 10,
                        np.random.default_rng(0))  # fmt: skip
    selection = plugin.select_rows(batch)
    assert len(selection.rows) == 4
    assert {tuple(selection.rows[:2]), tuple(selection.rows[2:])} <= {(0, 7), (4, 6)}
    assert selection.metrics["kept_rows"] == 4.0


def test_plugin_arguments_are_checked():
    with pytest.raises(ValueError, match="prune_ratio"):
        ShuffleR1(prune_ratio=1.0)
    with pytest.raises(ValueError, match="sampling_weight"):
        ShuffleR1(sampling_weight="median")
