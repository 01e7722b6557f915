"""zoo.rl.losses against verl 0.9.1 ``core_algos``, TRL 1.16.0 ``GRPOTrainer._compute_loss`` and GUI-G1.

Golden data (``tests/rl/golden/make_rl_golden.py``): ``policy_losses.json`` (verl
``compute_policy_loss_vanilla`` / ``compute_policy_loss_gspo``: loss, d loss / d logp,
clip fractions, ppo_kl), ``aggregation.json`` (verl ``agg_loss``), ``kl.json`` (verl
``kl_penalty``, values and gradients), ``trl_losses.json`` (TRL's own ``_compute_loss``
run on fixed log-probs; GUI-G1's loss line transcribed at commit bb4e586). Inputs have
ragged masks (with holes for odd seeds), mixed-sign advantages, a zero-advantage row and
log-ratios of +-25 to hit verl's clamps.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from torch.testing import assert_close

from tests.rl._golden import case_id, load, t
from zoo.rl import losses as L

POLICY = load("policy_losses")
TRL = load("trl_losses")
CLOSE = {"rtol": 1e-5, "atol": 1e-6}


def _inputs(stored: dict) -> tuple[torch.Tensor, ...]:
    logp = t(stored["logp"]).requires_grad_(True)
    return logp, t(stored["old_logp"]), t(stored["advantages"]), t(stored["mask"])


def test_golden_sources_are_named():
    for name in ("policy_losses", "aggregation", "kl", "trl_losses"):
        assert load(name)["sources"]["verl"] == "0.9.1"
        assert load(name)["sources"]["trl"] == "1.16.0"


@pytest.mark.parametrize(
    "case", POLICY["verl"], ids=lambda c: case_id(c, "kind", "seed", "clip_low", "clip_high", "dual_clip", "agg")
)
def test_policy_loss_matches_verl(case):
    logp, old, adv, mask = _inputs(POLICY["inputs"][str(case["seed"])])
    weights = t(case["weights"]) if "weights" in case else None
    if case["kind"] == "vanilla":
        loss, stats = L.clipped_surrogate(
            logp,
            old,
            adv,
            mask,
            clip_low=case["clip_low"],
            clip_high=case["clip_high"],
            dual_clip=case["dual_clip"],
            agg=case["agg"],
            weights=weights,
        )
    else:
        loss, stats = L.gspo_loss(
            logp, old, adv, mask, clip_low=case["clip_low"], clip_high=case["clip_high"], agg=case["agg"]
        )
    loss.backward()
    assert loss.dtype == torch.float32 and loss.dim() == 0
    assert loss.item() == pytest.approx(case["loss"], rel=1e-5, abs=1e-6)
    assert_close(logp.grad, t(case["grad"]), **CLOSE)
    for key in ("clipfrac", "clipfrac_lower", "ppo_kl"):
        assert stats[key].item() == pytest.approx(case[key], rel=1e-5, abs=1e-6), key


@pytest.mark.parametrize(
    "case", load("aggregation")["verl"], ids=lambda c: case_id(c, "seed", "mode", "loss_scale_factor")
)
def test_aggregate_matches_verl(case):
    value = L.aggregate(t(case["loss_mat"]), t(case["mask"]), case["mode"], loss_scale_factor=case["loss_scale_factor"])
    assert value.item() == pytest.approx(case["value"], rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("case", load("kl")["verl"], ids=lambda c: case_id(c, "seed", "estimator"))
def test_kl_penalty_matches_verl_values_clamps_and_gradients(case):
    logp = t(case["logp"]).requires_grad_(True)
    value = L.kl_penalty(logp, t(case["ref_logp"]), case["estimator"])
    value.sum().backward()
    assert_close(value, t(case["value"]), **CLOSE)
    assert_close(logp.grad, t(case["grad"]), **CLOSE)


def test_kl_clamps_are_reached_by_the_golden_inputs():
    k3 = [c for c in load("kl")["verl"] if c["estimator"] == "k3"]
    assert any(v == 10.0 for c in k3 for row in c["value"] for v in row)


def _trl_agg(case: dict) -> partial:
    loss_type = case["loss_type"]
    return partial(L.trl_aggregate, loss_type=loss_type, max_completion_length=case["max_completion_length"])


@pytest.mark.parametrize("case", TRL["trl"], ids=lambda c: case_id(c, "seed", "loss_type", "beta", "level"))
def test_trl_grpo_trainer_loss(case):
    """TRL's loss = clipped surrogate (no dual clip) + beta * k3, aggregated per loss_type.

    ``importance_sampling_level="sequence"`` is GSPO's ratio (no clamp is reached here).
    """
    logp, old, adv, mask = _inputs(case["inputs"])
    agg = _trl_agg(case)
    if case["level"] == "sequence":
        loss, _ = L.gspo_loss(logp, old, adv, mask, clip_low=case["eps_low"], clip_high=case["eps_high"], agg=agg)
    else:
        loss, _ = L.clipped_surrogate(
            logp, old, adv, mask, clip_low=case["eps_low"], clip_high=case["eps_high"], agg=agg
        )
    if case["beta"]:
        loss = loss + case["beta"] * agg(L.kl_penalty(logp, t(case["ref_logp"]), "k3"), mask)
    loss.backward()
    assert loss.item() == pytest.approx(case["loss"], rel=1e-5, abs=1e-6)
    assert_close(logp.grad, t(case["grad"]), **CLOSE)


@pytest.mark.parametrize("case", TRL["gui_g1"], ids=lambda c: f"seed{c['seed']}")
def test_gui_g1_loss_is_weighted_token_sum_over_64(case):
    logp, old, adv, mask = _inputs(case["inputs"])
    loss, _ = L.clipped_surrogate(
        logp,
        old,
        adv,
        mask,
        clip_low=case["epsilon"],
        clip_high=case["epsilon"],
        weights=torch.tensor(case["rates"], dtype=torch.float32),
        agg="seq-mean-token-sum-norm",
        loss_scale_factor=64,
    )
    assert loss.item() == pytest.approx(case["loss"], rel=1e-5, abs=1e-7)


def test_trl_aggregations_relate_to_verl_modes():
    """Without empty rows TRL 'bnpo' is verl 'token-mean', 'grpo' is 'seq-mean-token-mean'."""
    gen = torch.Generator().manual_seed(0)
    loss_mat, mask = torch.randn(4, 5, generator=gen), (torch.rand(4, 5, generator=gen) > 0.3).float()
    mask[:, 0] = 1
    assert_close(L.trl_aggregate(loss_mat, mask, "bnpo"), L.aggregate(loss_mat, mask, "token-mean"))
    assert_close(L.trl_aggregate(loss_mat, mask, "grpo"), L.aggregate(loss_mat, mask, "seq-mean-token-mean"))
    assert_close(L.trl_aggregate(loss_mat, mask, "dapo"), L.aggregate(loss_mat, mask, "token-mean"))
    assert_close(
        L.trl_aggregate(loss_mat, mask, "dr_grpo", max_completion_length=8),
        L.aggregate(loss_mat, mask, "seq-mean-token-sum-norm", loss_scale_factor=8),
    )


def test_sequence_log_ratio_is_mean_over_valid_tokens():
    logp = torch.tensor([[0.0, -1.0, -2.0], [-1.0, 5.0, 5.0]])
    old = torch.tensor([[-1.0, -1.0, 0.0], [-2.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    assert_close(L.sequence_log_ratio(logp, old, mask), torch.tensor([-1.0 / 3, 1.0]))


def test_bad_inputs_name_the_problem():
    x, mask = torch.zeros(2, 3), torch.ones(2, 3)
    with pytest.raises(ValueError, match="unknown aggregation mode 'token_mean'"):
        L.aggregate(x, mask, "token_mean")
    with pytest.raises(ValueError, match=r"dual_clip must be > 1\.0"):
        L.clipped_surrogate(x, x, torch.ones(2), mask, dual_clip=0.5)
    with pytest.raises(ValueError, match="logp has shape"):
        L.clipped_surrogate(torch.zeros(2, 4), x, torch.ones(2), mask)
    with pytest.raises(ValueError, match="unknown KL estimator 'k4'"):
        L.kl_penalty(x, x, "k4")
    with pytest.raises(ValueError, match="max_completion_length"):
        L.trl_aggregate(x, mask, "dr_grpo")
    with pytest.raises(ValueError, match="unknown TRL loss_type"):
        L.trl_aggregate(x, mask, "sapo")
    with pytest.raises(ValueError, match="named modes only"):
        L.aggregate(x, mask, partial(L.trl_aggregate, loss_type="bnpo"), loss_scale_factor=64)


def test_aggregate_accepts_a_callable_mode():
    loss_mat, mask = torch.arange(6.0).reshape(2, 3), torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    dr_grpo = partial(L.trl_aggregate, loss_type="dr_grpo", max_completion_length=4)
    assert L.aggregate(loss_mat, mask, dr_grpo).item() == pytest.approx((0 + 1 + 3) / (2 * 4))


@pytest.mark.verl
@pytest.mark.parametrize("seed", [21, 22])
def test_live_against_installed_verl(seed):
    """Fresh random inputs against verl itself, when verl is importable."""
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
    from verl.workers.config import ActorConfig

    gen = torch.Generator().manual_seed(seed)
    old = -torch.rand(8, 9, generator=gen) * 2
    logp = old + torch.randn(8, 9, generator=gen) * 0.5
    adv = torch.randn(8, generator=gen)
    mask = (torch.rand(8, 9, generator=gen) > 0.25).float()
    config = ActorConfig(
        strategy="fsdp",
        clip_ratio=0.2,
        clip_ratio_low=0.15,
        clip_ratio_high=0.3,
        clip_ratio_c=2.0,
        ppo_micro_batch_size_per_gpu=1,
        rollout_n=1,
    )
    for mode in L.AGG_MODES:
        expected, metrics = core_algos.compute_policy_loss_vanilla(old, logp, adv[:, None] * mask, mask, mode, config)
        got, stats = L.clipped_surrogate(logp, old, adv, mask, clip_low=0.15, clip_high=0.3, dual_clip=2.0, agg=mode)
        assert got.item() == pytest.approx(expected.item(), rel=1e-5, abs=1e-6)
        assert stats["clipfrac"].item() == pytest.approx(metrics["actor/pg_clipfrac"], abs=1e-7)
