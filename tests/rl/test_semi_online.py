"""UI-S1 semi-online RL maths against the authors' own functions.

Golden numbers: ``tests/rl/golden/ui_s1.json``, produced by ``tests/rl/golden/make_ui_s1_golden.py``
running X-PLUG/MobileAgent@11cea575 ``UI-S1/uis1/core_uis1.py`` and
``MultiRoundGenerator.apply_response`` unchanged (the DAPO filter lines transcribed).
"""

from __future__ import annotations

import random

import pytest
import torch
from torch.testing import assert_close

from tests.rl._golden import load, t
from zoo.algorithms import ADVANTAGE_ESTIMATORS
from zoo.rl import semi_online as S
from zoo.rl.batching import GroupTopUp, TopUpExhausted

GOLDEN = load("ui_s1")
CASES = GOLDEN["cases"]
EXACT = {"rtol": 0.0, "atol": 0.0}


def _ids(case: dict) -> dict:
    return {"traj_ids": case["traj_ids"], "step_ids": case["step_ids"], "matches": case["matches"]}


def test_golden_records_its_source():
    assert GOLDEN["sources"]["ui_s1"].startswith("X-PLUG/MobileAgent@11cea575")
    assert len(CASES) == 4 and sum(len(c["rewards"]) for c in CASES) > 80


@pytest.mark.parametrize("gamma", ["0.5", "0.9"])
@pytest.mark.parametrize("index", range(len(CASES)))
def test_returns_match_authors(index: int, gamma: str):
    case = CASES[index]
    got = S.step_discounted_returns(
        case["rewards"], case["traj_ids"], case["step_ids"], case["matches"], gamma=float(gamma)
    )
    assert_close(got, t(case["returns"][gamma]), **EXACT)


@pytest.mark.parametrize("index", range(len(CASES)))
def test_advantages_match_authors(index: int):
    case = CASES[index]
    mask = t(case["mask"])
    for expected in case["advantages"]:
        options = {k: expected[k] for k in ("mode", "episode_weight", "step_weight")}
        got = S.ui_s1(case["rewards"], case["uids"], **_ids(case), mask=mask, **options)
        assert_close(got, t(expected["values"]), **EXACT, msg=str(options))
        per_sample = S.ui_s1(case["rewards"], case["uids"], **_ids(case), **options)
        assert_close(per_sample, t(expected["values"])[:, 0], **EXACT)  # every mask starts with a 1


@pytest.mark.parametrize("index", range(len(CASES)))
def test_filter_matches_authors(index: int):
    case = CASES[index]
    returns = t(case["returns"]["0.5"])
    for expected in case["filter"]:
        kept = S.future_reward_filter(returns, case["uids"], case["step_ids"], threshold=expected["threshold"])
        assert kept.keep.tolist() == expected["keep"]
        assert kept.num_groups == len(expected["std"])
        assert kept.num_dropped_groups == len({u for u, k in zip(case["uids"], expected["keep"]) if not k})


@pytest.mark.parametrize("golden", GOLDEN["patch"], ids=lambda g: f"threshold={g['threshold']}")
def test_patch_plan_matches_authors(golden: dict):
    for matches, expected in zip(golden["matches"], golden["plans"]):
        plan = S.patch_plan(matches, golden["threshold"])
        assert (plan.rolled_out, list(plan.patched)) == (expected["rolled_out"], expected["patched"])
        assert plan.stopped_early == (expected["rolled_out"] < len(matches))


def test_returns_reset_at_a_mismatch():
    # one trajectory, steps 0..3: match, mismatch, match, match; gamma 0.5
    got = S.step_discounted_returns([1.0, 0.1, 1.0, 1.0], ["a"] * 4, [0, 1, 2, 3], [True, False, True, True])
    assert_close(got, torch.tensor([1.0, 0.1, 1.5, 1.0]), **EXACT)  # step 0 gets nothing from past step 1


def test_returns_ignore_batch_order():
    case = CASES[2]
    order = list(range(len(case["rewards"])))
    random.Random(0).shuffle(order)
    shuffled = {k: [case[k][i] for i in order] for k in ("rewards", "traj_ids", "step_ids", "matches")}
    got = S.step_discounted_returns(**shuffled)
    assert_close(got, t(case["returns"]["0.5"])[order], **EXACT)


def test_equal_rewards_give_zero_advantage_and_are_filtered():
    case = CASES[1]  # every reward 1.0, every step matches
    for mode in S.MODES:
        adv = S.ui_s1(case["rewards"], case["uids"], **_ids(case), mode=mode)
        assert adv.eq(0).all()
    assert not S.future_reward_filter(t(case["returns"]["0.5"]), case["uids"], case["step_ids"]).keep.any()


def test_singletons():
    # a prompt with one sample: episode term is the raw reward / (1 + eps); its step term is 0
    assert_close(S.episode_advantage([0.4], ["p"]), torch.tensor([0.4]) / (1 + 1e-6), **EXACT)
    assert_close(S.step_advantage([0.4], ["p"], [0]), torch.tensor([0.0]), **EXACT)
    # a prompt with one step-0 sample is kept whatever its std; a prompt without step 0 is dropped
    kept = S.future_reward_filter([0.2, 0.3, 0.3], ["solo", "late", "late"], [0, 1, 2])
    assert kept.keep.tolist() == [True, False, False] and kept.num_dropped_groups == 1


def test_mean_norm_only_centres():
    rewards, groups, steps = [1.0, 0.0, 0.55, 0.1], ["p"] * 4, [0, 0, 1, 1]
    assert_close(S.episode_advantage(rewards, groups, mode="mean_norm"), torch.tensor(rewards) - 0.4125)
    assert_close(S.step_advantage(rewards, groups, steps, mode="mean_norm"), torch.tensor([0.5, -0.5, 0.225, -0.225]))


def test_threshold_is_strict():
    # step-0 returns 0 and 0.5 (exact in float32) have population std exactly 0.25: not above 0.25
    assert not S.future_reward_filter([0.0, 0.5], ["p", "p"], [0, 0], threshold=0.25).keep.any()
    assert S.future_reward_filter([0.0, 0.5], ["p", "p"], [0, 0], threshold=0.24).keep.all()


def test_patch_plan_budget():
    assert S.patch_plan([False, False, False], 0) == S.PatchPlan(1, (False,), stopped_early=True)
    assert S.patch_plan([False, False, False], -1) == S.PatchPlan(3, (True, True, True), stopped_early=False)
    assert S.patch_plan([False, True, False], 1) == S.PatchPlan(3, (True, False, False), stopped_early=False)
    assert S.patch_plan([], 2) == S.PatchPlan(0, (), stopped_early=False)


def test_registered_with_required_ids():
    assert ADVANTAGE_ESTIMATORS.get("ui-s1") is S.ui_s1
    with pytest.raises(ValueError, match="needs traj_ids, step_ids, matches"):
        ADVANTAGE_ESTIMATORS.get("ui-s1")([1.0, 0.0], [0, 0], mask=torch.ones(2, 3))


def test_bad_inputs_name_the_problem():
    ids = {"traj_ids": ["a", "b"], "step_ids": [0, 0], "matches": [True, False]}
    with pytest.raises(ValueError, match="unknown UI-S1 advantage mode 'std'"):
        S.ui_s1([1.0, 0.0], [0, 0], **ids, mode="std")
    with pytest.raises(ValueError, match="NaN"):
        S.ui_s1([1.0, float("nan")], [0, 0], **ids)
    with pytest.raises(ValueError, match="step_ids has 1 entries"):
        S.step_discounted_returns([1.0, 0.0], ["a", "b"], [0], [True, True])
    with pytest.raises(ValueError, match="repeated step id"):
        S.step_discounted_returns([1.0, 0.0], ["a", "a"], [0, 0], [True, True])
    with pytest.raises(ValueError, match="patch_threshold must be an int >= -1"):
        S.patch_plan([True], -2)


# --- batch top-up after the filter -----------------------------------------------------------


def _upstream_top_up(batches: list[tuple[list[str], list[bool]]], prompt_bsz: int, max_num_gen_batches: int):
    """The top-up of X-PLUG/MobileAgent@f7702e46 ``UI-S1/verl/trainer/ppo/dapo_ray_trainer.py::fit``
    transcribed on (uid per row, keep per row) lists: count kept uids per generation batch, keep
    generating while fewer than ``prompt_bsz`` (error past ``max_num_gen_batches``), then walk the
    concatenated rows keeping those of the first ``prompt_bsz`` uids. Returns kept row indices
    (into the concatenation of all batches' rows) and the number of batches used, or "raise"."""
    batch, num_prompt_in_batch, num_gen_batches, base = [], 0, 0, 0
    for uids, keep in batches:
        num_gen_batches += 1
        kept_prompt_uids = {u for u, k in zip(uids, keep) if k}
        num_prompt_in_batch += len(kept_prompt_uids)
        batch += [(base + i, u) for i, u in enumerate(uids) if u in kept_prompt_uids]
        base += len(uids)
        if num_prompt_in_batch < prompt_bsz:
            if max_num_gen_batches <= 0 or num_gen_batches < max_num_gen_batches:
                continue
            return "raise"
        seen, kept = set(), []
        for idx, uid in batch:
            if uid in seen:
                kept.append(idx)
            elif len(seen) < prompt_bsz:
                seen.add(uid)
                kept.append(idx)
        return kept, num_gen_batches
    return "more"


def _run_top_up(batches, target, max_gen_batches):
    top_up = GroupTopUp(target, max_gen_batches)
    base = 0
    for uids, keep in batches:
        try:
            top_up.add(list(range(base, base + len(uids))), uids, keep)
        except TopUpExhausted:
            return "raise"
        base += len(uids)
        if top_up.full:
            return top_up.batch(), top_up.gen_batches
    return "more"


def test_top_up_matches_the_authors_loop():
    rng = random.Random(0)
    for case in range(300):
        target, max_gen = rng.randint(1, 4), rng.choice([0, 1, 2, 3])
        batches = []
        for b in range(5):
            uids = [f"{case}-{b}-{g}" for g in range(rng.randint(1, 4)) for _ in range(rng.randint(1, 3))]
            dropped = {u for u in uids if rng.random() < 0.5}
            batches.append((uids, [u not in dropped for u in uids]))
        assert _run_top_up(batches, target, max_gen) == _upstream_top_up(batches, target, max_gen), case


def test_top_up_refills_then_trims_to_the_first_prompts():
    top_up = GroupTopUp(target=3)
    top_up.add(["a0", "a1", "b0", "b1", "c0", "c1"], ["a", "a", "b", "b", "c", "c"], torch.tensor([1, 1, 0, 0, 1, 1]).bool())
    assert not top_up.full and top_up.kept_prompts == 2  # "b" filtered out: roll out another batch
    top_up.add(["d0", "d1", "e0", "e1"], ["d", "d", "e", "e"], [True, True, True, True])
    assert top_up.full and top_up.gen_batches == 2
    assert top_up.batch() == ["a0", "a1", "c0", "c1", "d0", "d1"]  # "e" is surplus


def test_top_up_gives_up_after_max_gen_batches():
    top_up = GroupTopUp(target=2, max_gen_batches=2)
    top_up.add(["x"], ["p"], [False])
    with pytest.raises(TopUpExhausted, match="kept 0 of the 2 prompts a step needs after 2 rollout batches"):
        top_up.add(["y"], ["q"], [False])
    endless = GroupTopUp(target=1, max_gen_batches=0)
    for i in range(20):
        endless.add([i], [i], [False])
    assert not endless.full
    with pytest.raises(ValueError, match="only 0 of 1 prompts kept"):
        endless.batch()
    with pytest.raises(ValueError, match="2 rows, 1 prompt ids and 2 keep flags"):
        endless.add([1, 2], ["p"], [True, True])
    with pytest.raises(ValueError, match="positive number of prompts"):
        GroupTopUp(target=0)
