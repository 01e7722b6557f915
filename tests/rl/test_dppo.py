"""Diffusion-policy PPO maths against the numbers of DPPO's own code.

Golden source: irom-princeton/dppo (MIT) at commit cc7234ad7ff39a8f32de3af903606723a16f0648,
``model/diffusion/diffusion_vpg.py::get_logprobs_subsample`` and ``model/diffusion/diffusion_ppo.py::loss``,
run on the fixed inputs of ``tests/rl/golden/make_dppo_golden.py`` (which writes ``dppo.json``).
"""

from __future__ import annotations

import pytest
import torch

from tests.rl._golden import load, t
from zoo.rl.dppo import (
    chunk_log_prob,
    denoising_discount,
    denoising_log_prob,
    denoising_minibatches,
    dppo_policy_loss,
    interpolated_clip,
)

GOLDEN = load("dppo")
CASES = GOLDEN["cases"]
IDS = [f"B{c['B']}-Ta{c['Ta']}-Da{c['Da']}-K{c['ft_steps']}" for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_denoising_log_prob_matches_dppo_with_the_std_floor(case):
    ours = denoising_log_prob(t(case["mean"]), t(case["logvar"]), t(case["x_next"]))
    torch.testing.assert_close(ours, t(case["new_log_prob"]), atol=1e-5, rtol=1e-5)
    assert (torch.exp(0.5 * t(case["logvar"])) < 0.1).any(), "the case must exercise the floor"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_policy_loss_statistics_and_gradient_match_dppo(case):
    mean = t(case["mean"]).requires_grad_(True)
    new = denoising_log_prob(mean, t(case["logvar"]), t(case["x_next"]))
    loss, stats = dppo_policy_loss(new, t(case["old_log_prob"]), t(case["advantages"]),
                                   torch.tensor(case["denoising_index"]), ft_steps=case["ft_steps"],
                                   reward_horizon=case["reward_horizon"], gamma_denoise=case["gamma_denoise"],
                                   clip_base=GOLDEN["clip"]["clip_ploss_coef_base"],
                                   clip_final=GOLDEN["clip"]["clip_ploss_coef"],
                                   clip_rate=GOLDEN["clip"]["clip_ploss_coef_rate"])  # fmt: skip
    assert loss.item() == pytest.approx(case["pg_loss"], rel=1e-4, abs=1e-7)
    assert stats.clip_fraction == pytest.approx(case["clip_fraction"])
    assert 0 < stats.clip_fraction < 1, "the case must clip some pairs and not others"
    assert stats.approx_kl == pytest.approx(case["approx_kl"], rel=1e-3, abs=1e-8)
    assert stats.ratio_mean == pytest.approx(case["ratio_mean"], rel=1e-5)
    loss.backward()
    torch.testing.assert_close(mean.grad, t(case["grad_mean"]), atol=1e-6, rtol=1e-4)


def test_clip_and_discount_run_from_the_noisiest_to_the_last_fine_tuned_step():
    steps = torch.arange(10)
    clip = interpolated_clip(steps, 10)
    assert clip[0].item() == pytest.approx(1e-3) and clip[-1].item() == pytest.approx(0.01)
    assert (clip.diff() > 0).all()
    discount = denoising_discount(steps, 10, 0.99)
    assert discount[-1].item() == 1.0 and discount[0].item() == pytest.approx(0.99**9)
    assert interpolated_clip(torch.zeros(3, dtype=torch.long), 1).tolist() == pytest.approx([0.01] * 3)


def test_log_probs_are_clamped_then_averaged_over_executed_steps_only():
    log_prob = torch.tensor([[[-9.0, 0.0], [3.0, 1.0], [100.0, 100.0]]])  # Ta=3, Da=2; step 3 not executed
    assert chunk_log_prob(log_prob, reward_horizon=2).item() == pytest.approx((-5 + 0 + 2 + 1) / 4)
    with pytest.raises(ValueError, match="reward_horizon"):
        chunk_log_prob(log_prob, reward_horizon=0)


def test_minibatches_cover_every_env_and_denoising_step_pair_once():
    batches = denoising_minibatches(6, 4, 8, torch.Generator().manual_seed(0))
    pairs = [(int(s), int(k)) for sample, step in batches for s, k in zip(sample, step)]
    assert len(batches) == 3 and sorted(pairs) == [(s, k) for s in range(6) for k in range(4)]
