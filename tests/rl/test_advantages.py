"""zoo.rl.advantages against numbers from verl 0.9.1 ``core_algos`` and TRL 1.16.0.

Golden data: ``tests/rl/golden/advantages.json`` (``tests/rl/golden/make_rl_golden.py``). Inputs
cover groups of one, equal-reward groups (0.1 x 3: non-dyadic), binary and mixed-sign
groups, interleaved string uids, ragged masks and masks with holes, three seeds.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from tests.rl._golden import load, t
from zoo.rl import advantages as A

VERL = load("advantages")["verl"]
TRL = load("advantages")["trl"]
EXACT = {"rtol": 0.0, "atol": 0.0}


def test_golden_sources_are_named():
    assert load("advantages")["sources"]["verl"] == "0.9.1"
    assert load("advantages")["sources"]["trl"] == "1.16.0"


@pytest.mark.parametrize("case", VERL, ids=lambda c: f"seed{c['seed']}")
@pytest.mark.parametrize("normalize_std", [True, False])
def test_grpo_matches_verl_bit_for_bit(case, normalize_std):
    mask = t(case["mask"])
    expected = t(case[f"grpo_std_{normalize_std}"])
    tokens = A.grpo(case["rewards"], case["uids"], normalize_std=normalize_std, mask=mask)
    assert_close(tokens, expected, **EXACT)
    per_seq = A.grpo(torch.tensor(case["rewards"]), case["uids"], normalize_std=normalize_std)
    assert per_seq.shape == (len(case["rewards"]),) and per_seq.dtype == torch.float32
    assert_close(A.to_token_level(per_seq, mask), expected, **EXACT)


@pytest.mark.parametrize("case", VERL, ids=lambda c: f"seed{c['seed']}")
def test_grpo_degenerate_groups(case):
    """Size-1 groups: r / (1 + eps) (verl); equal-reward groups: exactly 0."""
    adv = A.grpo(case["rewards"], case["uids"])
    for i, uid in enumerate(case["uids"]):
        if uid in ("uid-1", "uid-6"):  # the size-1 groups
            assert adv[i].item() == pytest.approx(case["rewards"][i] / (1 + 1e-6))
        if uid in ("uid-2", "uid-4"):  # the equal-reward groups
            assert adv[i].item() == 0.0


@pytest.mark.parametrize("case", VERL, ids=lambda c: f"seed{c['seed']}")
def test_rloo_matches_verl(case):
    assert_close(A.rloo(case["rewards"], case["uids"], mask=t(case["mask"])), t(case["rloo"]), **EXACT)


@pytest.mark.parametrize("case", VERL, ids=lambda c: f"seed{c['seed']}")
def test_reinforce_plus_plus_baseline_matches_verl(case):
    got = A.reinforce_plus_plus_baseline(case["rewards"], case["uids"], mask=t(case["mask"]))
    assert_close(got, t(case["rpp_baseline"]), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", VERL, ids=lambda c: f"seed{c['seed']}")
@pytest.mark.parametrize("gamma", [1.0, 0.9])
def test_reinforce_plus_plus_matches_verl(case, gamma):
    mask = t(case["mask"])
    expected = t(case[f"rpp_gamma_{gamma}"])
    assert_close(A.reinforce_plus_plus(case["rewards"], mask=mask, gamma=gamma), expected, rtol=1e-6, atol=1e-6)
    token_rewards = t(case["token_rewards"])
    assert_close(A.outcome_to_token_rewards(torch.tensor(case["rewards"]), mask), token_rewards, **EXACT)
    assert_close(A.reinforce_plus_plus(token_rewards, mask=mask, gamma=gamma), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", TRL, ids=lambda c: f"seed{c['seed']}")
def test_grpo_with_missing_rewards_matches_trl(case):
    """None rewards: TRL 1.16 excludes them from the group mean/std and gives them advantage 0.

    TRL divides by ``std + 1e-4``; seed 0 leaves a group with one scored sample (TRL: 0).
    """
    rewards = [math.nan if r is None else r for r in case["rewards"]]
    assert_close(A.grpo(rewards, case["uids"], eps=1e-4), t(case["advantages"]), rtol=1e-6, atol=1e-6)


def test_missing_reward_is_excluded_not_zeroed():
    """A NaN reward changes nothing for the others: same as dropping the sample."""
    rewards = torch.tensor([1.0, math.nan, 0.0, 0.5, 2.0, math.nan])
    groups = [0, 0, 0, 0, 1, 1]
    keep = ~torch.isnan(rewards)
    for fn in (A.grpo, A.rloo):
        full = fn(rewards, groups)
        dropped = fn(rewards[keep], [g for g, k in zip(groups, keep, strict=True) if k])
        assert_close(full[keep][:3], dropped[:3], **EXACT)  # group 0, scored samples
        assert full[~keep].eq(0).all()
    assert A.grpo(rewards, groups)[4] == 0.0  # group 1 left with one scored sample: no baseline


def test_group_ids_accept_tensors_and_hashables():
    rewards = [1.0, 2.0, 4.0, 3.0]
    expected = A.grpo(rewards, torch.tensor([7, 9, 7, 9]))
    assert_close(A.grpo(rewards, ["a", ("b",), "a", ("b",)]), expected, **EXACT)


def test_bad_inputs_name_the_problem():
    with pytest.raises(ValueError, match="one id per sample"):
        A.grpo([1.0, 2.0], [0])
    with pytest.raises(ValueError, match=r"shape \(B,\)"):
        A.grpo(torch.ones(2, 3), [0, 0])
    with pytest.raises(ValueError, match="needs mask"):
        A.reinforce_plus_plus([1.0, 2.0])
    with pytest.raises(ValueError, match="at least 2 unmasked tokens"):
        A.reinforce_plus_plus([1.0], mask=torch.ones(1, 1))


@pytest.mark.verl
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_live_against_installed_verl(seed):
    """Fresh random batches against verl itself, when verl is importable (GPU clusters, scratch venv)."""
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
    np = pytest.importorskip("numpy")
    gen = torch.Generator().manual_seed(seed)
    groups = torch.randint(0, 5, (16,), generator=gen)
    rewards = torch.randint(-2, 3, (16,), generator=gen).float() / 2
    mask = (torch.rand(16, 6, generator=gen) > 0.3).float()
    mask[:, 0] = 1
    tokens = torch.zeros(16, 6)
    tokens[:, 0] = rewards
    index = np.array(groups.tolist())
    expected, _ = core_algos.compute_grpo_outcome_advantage(tokens.clone(), mask, index)
    assert_close(A.grpo(rewards, groups, mask=mask), expected, **EXACT)
    expected, _ = core_algos.compute_rloo_outcome_advantage(tokens.clone(), mask, index)
    assert_close(A.rloo(rewards, groups, mask=mask), expected, **EXACT)
