"""StableReinforce's loss against R1-Reward's own PolicyLoss (yfzhang114/r1_reward @ 3693413a,
``openrlhf/models/loss.py``), numbers in golden/perception.json; and its row in the loss table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from domains.perception.algorithms import (
    PRE_CLIP,
    advantage_filter,
    stable_reinforce_advantages,
    stable_reinforce_loss,
)
from zoo.algorithms import ADVANTAGE_ESTIMATORS, LOSS_TYPES, POLICY_LOSSES

CASES = json.loads((Path(__file__).parent / "golden" / "perception.json").read_text())["stable_reinforce"]


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_stable_reinforce_matches_authors_policy_loss(case):
    t = {k: torch.tensor(case[k]) for k in ("logp", "old_logp", "advantages", "mask")}
    loss, stats = stable_reinforce_loss(t["logp"], t["old_logp"], t["advantages"], t["mask"],
                                        clip_low=case["clip_eps"], clip_high=case["clip_eps"])
    assert loss.item() == pytest.approx(case["loss"], rel=1e-5)
    assert set(stats) == {"clipfrac", "clipfrac_lower", "ppo_kl"}


def test_pre_clip_bounds_the_ratio_where_plain_ppo_does_not():
    logp, old = torch.tensor([[0.0]]), torch.tensor([[-30.0]])  # ratio e^30 without the pre-clip
    adv, mask = torch.tensor([-1.0]), torch.ones(1, 1)
    loss, _ = stable_reinforce_loss(logp, old, adv, mask)
    assert loss.item() == pytest.approx(math.exp(PRE_CLIP[1]))  # -min(r A, clip(r) A) = r = 1000
    plain, _ = POLICY_LOSSES.get("vanilla")(logp, old, adv, mask, clip_low=0.2, clip_high=0.2)
    assert plain.item() > 1e8


def test_loss_table_row_and_shape_errors():
    row = LOSS_TYPES.get("stable_reinforce")
    assert row.loss == "stable_reinforce" and row.aggregation == "seq-mean-token-mean"
    with pytest.raises(ValueError, match="must all be"):
        stable_reinforce_loss(torch.zeros(2, 3), torch.zeros(2, 2), torch.zeros(2), torch.ones(2, 3))


def test_verl_export_names_the_stable_reinforce_loss_and_the_curriculum_order(tmp_path):
    import yaml

    from zoo.train import run

    recipe = Path(__file__).parents[3] / "domains" / "perception" / "recipes" / "r1-reward-smoke.yaml"
    run(str(recipe), ["training.shuffle=false", f"training.output_dir={tmp_path}"], resume=False, engine="verl",
        dry_run=True)  # fmt: skip
    args = yaml.safe_load((tmp_path / "verl" / "verl_args.yaml").read_text())
    # the name verl_plugin registers for every POLICY_LOSSES entry, domain losses included
    assert args["actor_rollout_ref.actor.policy_loss.loss_mode"] == "zoo_" + POLICY_LOSSES.canonical("stable_reinforce")
    assert args["actor_rollout_ref.actor.loss_agg_mode"] == "seq-mean-token-mean"
    assert args["data.shuffle"] in (False, "False", "false")


# --- StableReinforce's advantage filter ------------------------------------------------------------
# Rule of r1_reward @ 3693413a, openrlhf/trainer/ppo_utils/replay_buffer.py::NaiveReplayBuffer.normalize:
# z = (a - m) * rsqrt(max(v, 1e-8)) + 1e-8 over the valid tokens (m mean, v biased variance), zeroed
# outside [m - 3, m + 3] and beyond +-10. Every expected number below is worked out by hand.


def test_filter_drops_a_lone_success_past_three_sigma():
    # 1 success in 12: m = 1/12, v = 11/144, the success's z = sqrt(11) = 3.317 > m + 3 = 3.083
    adv = stable_reinforce_advantages([1.0] + [0.0] * 11)
    assert adv[0].item() == 0.0
    assert adv[1:].tolist() == pytest.approx([-1 / math.sqrt(11)] * 11)


def test_band_is_centred_on_the_raw_mean_as_released_not_on_zero():
    # nine 2.5 and one 0: m = 2.25, v = 0.5625 (std 0.75); the failure's z = -3 + 1e-8
    rewards = [2.5] * 9 + [0.0]
    released = stable_reinforce_advantages(rewards)
    assert released[-1].item() == 0.0  # below m - 3 = -0.75
    assert released[:-1].tolist() == pytest.approx([1 / 3] * 9)
    three_sigma = stable_reinforce_advantages(rewards, bounds_at_raw_mean=False)
    assert three_sigma[-1].item() == pytest.approx(-3.0)  # |z| <= 3 keeps it


def test_statistics_count_tokens_when_a_mask_is_given():
    # tokens 1,1,1 | 0: m = 0.75, v = 0.1875; z = 0.25/sqrt(v) = 1/sqrt(3) and -0.75/sqrt(v) = -sqrt(3)
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    adv = stable_reinforce_advantages(torch.tensor([1.0, 0.0]), None, mask=mask)
    expected = [[1 / math.sqrt(3)] * 3, [-math.sqrt(3), 0.0, 0.0]]
    assert adv.tolist()[0] == pytest.approx(expected[0]) and adv.tolist()[1] == pytest.approx(expected[1])


def test_unscored_samples_and_flat_batches():
    adv = stable_reinforce_advantages([1.0, float("nan"), 0.0])  # stats over {1, 0}: z = +-1
    assert adv.tolist() == pytest.approx([1.0, 0.0, -1.0])
    flat = stable_reinforce_advantages([0.7] * 4)  # v = 0 -> floor 1e-8, z = the 1e-8 offset
    assert flat.abs().max().item() < 1e-7


def test_raw_mean_band_and_the_hard_limit():
    # one 101 among 121 rewards of 100: m = 100 + 1/122; the outlier's z = sqrt(121) = 11, the others'
    # -1/11. The released band [m - 3, m + 3] holds none of them: every advantage is zeroed.
    rewards = [100.0] * 121 + [101.0]
    assert stable_reinforce_advantages(rewards).abs().max().item() == 0.0
    # centred on 0 with sigma = 20 only the +-10 limit removes the outlier
    wide = stable_reinforce_advantages(rewards, sigma=20.0, bounds_at_raw_mean=False)
    assert wide[-1].item() == 0.0
    assert wide[:-1].tolist() == pytest.approx([-1 / 11] * 121, rel=1e-3)


def test_filter_errors():
    with pytest.raises(ValueError, match="must both be"):
        advantage_filter(torch.zeros(2, 3), torch.ones(2, 2))
    with pytest.raises(ValueError, match="sigma"):
        advantage_filter(torch.zeros(1, 2), torch.ones(1, 2), sigma=0)
    assert ADVANTAGE_ESTIMATORS.get("stable-reinforce") is stable_reinforce_advantages
