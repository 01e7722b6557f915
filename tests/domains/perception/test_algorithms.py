"""StableReinforce's loss against R1-Reward's own PolicyLoss (yfzhang114/r1_reward @ 3693413a,
``openrlhf/models/loss.py``), numbers in golden/perception.json; and its row in the loss table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from domains.perception.algorithms import PRE_CLIP, stable_reinforce_loss
from zoo.rl.loss_types import LOSS_TYPES
from zoo.rl.losses import POLICY_LOSSES

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
