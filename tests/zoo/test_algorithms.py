"""The algorithm tables: every estimator and loss a recipe can name, its own and the domains', shares one call shape."""

from __future__ import annotations

import pytest
import torch

from zoo.algorithms import ADVANTAGE_ESTIMATORS, LOSS_TYPES, POLICY_LOSSES, LossType
from zoo.rl import advantages, losses


def test_estimators_are_named_and_share_one_call_shape():
    names = ["grpo", "reinforce-plus-plus", "reinforce-plus-plus-baseline", "rloo", "ui-s1"]
    assert set(names) <= set(ADVANTAGE_ESTIMATORS.list())  # listing runs the domains' discovery too
    assert "stable-reinforce" in ADVANTAGE_ESTIMATORS  # perception's, found without importing it by name
    assert ADVANTAGE_ESTIMATORS.get("reinforce_plus_plus") is advantages.reinforce_plus_plus  # verl's spelling
    rewards, groups = torch.tensor([1.0, 0.0, 1.0, 0.5]), [0, 0, 1, 1]
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 0]])
    # ui-s1 also needs the per-step ids of a multi-turn rollout (zoo.rl.semi_online)
    extra = {"ui-s1": {"traj_ids": [0, 0, 1, 1], "step_ids": [0, 1, 0, 1], "matches": [True, False, True, True]}}
    for name in ADVANTAGE_ESTIMATORS:
        adv = ADVANTAGE_ESTIMATORS.get(name)(rewards, groups, mask=mask, **extra.get(name, {}))
        assert adv.shape == mask.shape and adv.dtype == torch.float32
        assert adv[mask == 0].eq(0).all()


def test_policy_losses_are_named_and_share_one_call_shape():
    assert {"gspo", "vanilla", "stable-reinforce"} <= set(POLICY_LOSSES.list())
    assert POLICY_LOSSES.get("clip") is losses.clipped_surrogate
    logp, old = torch.zeros(2, 3), torch.zeros(2, 3)
    for name in POLICY_LOSSES:
        loss, stats = POLICY_LOSSES.get(name)(logp, old, torch.tensor([1.0, -1.0]), torch.ones(2, 3))
        assert loss.item() == 0.0 and set(stats) == {"clipfrac", "clipfrac_lower", "ppo_kl"}


def test_every_loss_row_names_a_known_surrogate_and_reduction():
    for name in LOSS_TYPES:
        row = LOSS_TYPES.get(name)
        assert row.aggregation in losses.AGG_MODES and POLICY_LOSSES.get(row.loss)
    assert LOSS_TYPES.get("gspo").sequence_level and not LOSS_TYPES.get("dapo").sequence_level
    assert LOSS_TYPES.get("dr_grpo").scale(256) == 256.0 and LOSS_TYPES.get("gui_g1").scale(256) == 64.0


@pytest.mark.parametrize(("row", "message"), [
    (dict(aggregation="seq-mean"), "aggregation 'seq-mean' is not one of"),
    (dict(aggregation="token-mean", trl_loss_type="sapo"), "TRL has no loss_type 'sapo'"),
    (dict(aggregation="token-mean", loss="vanila"), "Did you mean: vanilla"),
])  # fmt: skip
def test_a_bad_loss_row_is_refused_by_name(row, message):
    with pytest.raises((ValueError, KeyError), match=message):
        LossType("mine", **row)
