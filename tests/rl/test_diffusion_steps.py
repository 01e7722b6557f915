"""Diffusion policy steps against the authors' numbers (``golden/diffusion.json``).

The goldens were produced by running the authors' functions unchanged
(``golden/make_diffusion_golden.py`` names repo, commit and file of each):
yifan123/flow_grpo @ ac4c86e ``flow_grpo/diffusers_patch/sd3_sde_with_logprob.py::sde_step_with_logprob``,
kvablack/ddpo-pytorch @ 1958463 ``ddpo_pytorch/diffusers_patch/ddim_with_logprob.py::ddim_step_with_logprob``,
XueZeyue/DanceGRPO @ 15cc71d ``fastvideo/train_grpo_flux.py::flux_step``,
showlab/Adv-GRPO @ 8287f90 ``adv_grpo/diffusers_patch/sd3_sde_with_logprob.py::sde_step_with_logprob_new``.
"""

from __future__ import annotations

import pytest
import torch
from diffusers import DDIMScheduler, FlowMatchEulerDiscreteScheduler, LCMScheduler

from tests.rl._golden import load, t
from zoo.rl.diffusion_steps import (
    dance_sde_step,
    ddim_step_with_logprob,
    flow_cps_step,
    flow_sde_step,
    flow_sde_step_scheduler,
    lcm_step_with_logprob,
)

GOLDEN = load("diffusion")


def close(actual: torch.Tensor, expected: list | float) -> None:
    torch.testing.assert_close(actual, t(expected), rtol=1e-5, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize(
    "case", GOLDEN["flow_sde"], ids=lambda c: f"idx{c['indices']}-a{c['noise_level']}-shift{c['shift']}"
)
def test_flow_sde_step_matches_flow_grpo(case: dict) -> None:
    scheduler = FlowMatchEulerDiscreteScheduler(shift=case["shift"])
    scheduler.set_timesteps(case["steps"])
    close(scheduler.sigmas, case["sigmas"])
    generator = torch.Generator().manual_seed(case["draw_seed"]) if case["draw_seed"] is not None else None
    given = None if case["prev_sample_in"] is None else t(case["prev_sample_in"])
    out = flow_sde_step_scheduler(scheduler, t(case["model_output"]), t(case["timestep"]), t(case["sample"]),
                                  noise_level=case["noise_level"], prev_sample=given, generator=generator)  # fmt: skip
    close(out.prev_sample, case["prev_sample"])
    close(out.log_prob, case["log_prob"])
    close(out.prev_sample_mean, case["prev_sample_mean"])
    close(out.std_dev_t, case["std_dev_t"])


@pytest.mark.parametrize("case", GOLDEN["flow_cps"], ids=lambda c: f"idx{c['indices']}-a{c['noise_level']}")
def test_flow_cps_step_matches_adv_grpo(case: dict) -> None:
    sigmas, idx = t(case["sigmas"]), torch.tensor(case["indices"])
    generator = torch.Generator().manual_seed(case["draw_seed"]) if case["draw_seed"] is not None else None
    given = None if case["prev_sample_in"] is None else t(case["prev_sample_in"])
    out = flow_cps_step(t(case["model_output"]), t(case["sample"]), sigmas[idx], sigmas[idx + 1],
                        noise_level=case["noise_level"], prev_sample=given, generator=generator)  # fmt: skip
    close(out.prev_sample, case["prev_sample"])
    close(out.log_prob, case["log_prob"])
    close(out.prev_sample_mean, case["prev_sample_mean"])
    close(out.std_dev_t, case["std_dev_t"])


def test_flow_sde_step_0d_sigma_equals_batch_of_one() -> None:
    """The authors' step iterates over (B,) timesteps only (a 0-d one raises); here 0-d broadcasts."""
    case = GOLDEN["flow_sde"][0]  # all three samples at the first step
    sigmas = t(case["sigmas"])
    batched = flow_sde_step(t(case["model_output"]), t(case["sample"]), sigmas[[0, 0, 0]], sigmas[[1, 1, 1]],
                            sigma_max=float(sigmas[1]), prev_sample=t(case["prev_sample_in"]))  # fmt: skip
    scalar = flow_sde_step(t(case["model_output"]), t(case["sample"]), sigmas[0], sigmas[1],
                           sigma_max=float(sigmas[1]), prev_sample=t(case["prev_sample_in"]))  # fmt: skip
    close(scalar.log_prob, case["log_prob"])
    torch.testing.assert_close(scalar.log_prob, batched.log_prob)


def test_flow_log_prob_gradient_flows_through_the_mean_only() -> None:
    velocity = torch.randn(2, 4, 4, 4, requires_grad=True)
    prev = torch.randn(2, 4, 4, 4, requires_grad=True)
    out = flow_sde_step(velocity, torch.randn(2, 4, 4, 4), 0.8, 0.6, sigma_max=0.95, prev_sample=prev)
    out.log_prob.sum().backward()
    assert velocity.grad is not None and velocity.grad.abs().sum() > 0
    assert prev.grad is None


def _ddim(case: dict) -> DDIMScheduler:
    config = {"num_train_timesteps": 1000, "beta_schedule": "scaled_linear", "beta_start": 0.00085, "beta_end": 0.012,
                  "clip_sample": False, "set_alpha_to_one": False, "steps_offset": 1}  # fmt: skip
    scheduler = DDIMScheduler(**{**config, **case["overrides"]})
    scheduler.set_timesteps(case["steps"])
    return scheduler


@pytest.mark.parametrize("case", GOLDEN["ddim"], ids=lambda c: f"idx{c['indices']}-eta{c['eta']}-{c['overrides']}")
def test_ddim_step_matches_ddpo(case: dict) -> None:
    scheduler = _ddim(case)
    assert scheduler.timesteps[case["indices"]].tolist() == case["timestep"]
    generator = torch.Generator().manual_seed(case["draw_seed"]) if case["draw_seed"] is not None else None
    given = None if case["prev_sample_in"] is None else t(case["prev_sample_in"])
    out = ddim_step_with_logprob(scheduler, t(case["model_output"]), torch.tensor(case["timestep"]),
                                 t(case["sample"]), eta=case["eta"], prev_sample=given, generator=generator)  # fmt: skip
    close(out.prev_sample, case["prev_sample"])
    close(out.log_prob, case["log_prob"])


def test_ddim_python_int_timestep_equals_0d_tensor() -> None:
    case = next(c for c in GOLDEN["ddim"] if isinstance(c["indices"], int))
    scheduler = _ddim(case)
    out = ddim_step_with_logprob(scheduler, t(case["model_output"]), int(case["timestep"]), t(case["sample"]),
                                 eta=1.0, prev_sample=t(case["prev_sample_in"]))  # fmt: skip
    close(out.log_prob, case["log_prob"])


def test_ddim_steps_offset_zero_gives_a_non_finite_last_step() -> None:
    case = next(c for c in GOLDEN["ddim"] if c["overrides"].get("steps_offset") == 0)
    out = ddim_step_with_logprob(_ddim(case), t(case["model_output"]), torch.tensor(case["timestep"]),
                                 t(case["sample"]), eta=1.0, prev_sample=t(case["prev_sample_in"]))  # fmt: skip
    assert not torch.isfinite(out.log_prob).any()


def test_ddim_without_timesteps_is_a_named_error() -> None:
    with pytest.raises(ValueError, match="set_timesteps"):
        ddim_step_with_logprob(DDIMScheduler(), torch.zeros(1, 1, 2, 2), 10, torch.zeros(1, 1, 2, 2))


@pytest.mark.parametrize("case", GOLDEN["dance_sde"], ids=lambda c: f"i{c['index']}-eta{c['eta']}-sde{c['sde_solver']}")
def test_dance_sde_step_matches_dance_grpo(case: dict) -> None:
    sigmas = t(case["sigmas"])
    i = case["index"]
    out = dance_sde_step(t(case["model_output"]), t(case["latents"]), case["eta"], sigmas[i], sigmas[i + 1],
                         sde_solver=case["sde_solver"], prev_sample=t(case["prev_sample_in"]))  # fmt: skip
    close(out.log_prob, case["log_prob"])
    batched = dance_sde_step(t(case["model_output"]), t(case["latents"]), case["eta"], sigmas[[i] * 3],
                             sigmas[[i + 1] * 3], sde_solver=case["sde_solver"], prev_sample=t(case["prev_sample_in"]))  # fmt: skip
    torch.testing.assert_close(batched.log_prob, out.log_prob)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_lcm_step_draws_what_diffusers_lcm_scheduler_draws(index: int) -> None:
    """RLCM's policy mean and std are LCM's re-noising: the same seed must give diffusers' sample."""
    scheduler = LCMScheduler(beta_schedule="scaled_linear", beta_start=0.00085, beta_end=0.012, set_alpha_to_one=False)
    scheduler.set_timesteps(4, original_inference_steps=50)
    sample, eps = torch.randn(2, 4, 3, 3), torch.randn(2, 4, 3, 3)
    timestep, prev_timestep = scheduler.timesteps[index], scheduler.timesteps[index + 1]
    scheduler._step_index = index
    expected = scheduler.step(eps, timestep, sample, generator=torch.Generator().manual_seed(5)).prev_sample
    out = lcm_step_with_logprob(
        scheduler, eps, timestep, sample, prev_timestep, generator=torch.Generator().manual_seed(5)
    )
    torch.testing.assert_close(out.prev_sample, expected)
    rescored = lcm_step_with_logprob(scheduler, eps, timestep, sample, prev_timestep, prev_sample=expected)
    torch.testing.assert_close(rescored.log_prob, out.log_prob)
    noise = (expected - out.prev_sample_mean) / out.std_dev_t
    torch.testing.assert_close(out.log_prob, (-0.5 * noise**2 - out.std_dev_t.log() - 0.9189385).mean((1, 2, 3)))


def test_ddim_returns_the_next_latent_in_the_input_dtype() -> None:
    case = GOLDEN["ddim"][0]
    out = ddim_step_with_logprob(_ddim(case), t(case["model_output"]).bfloat16(), torch.tensor(case["timestep"]),
                                 t(case["sample"]).bfloat16(), eta=1.0, prev_sample=t(case["prev_sample_in"]))  # fmt: skip
    assert out.prev_sample.dtype == torch.bfloat16 and out.log_prob.dtype == torch.float32
