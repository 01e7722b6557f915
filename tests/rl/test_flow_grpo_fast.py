"""Guidance, zero-advantage filtering and the SDE window against the authors' numbers (``golden/flow_grpo_fast.json``).

Sources (``golden/make_flow_grpo_fast_golden.py`` runs them): yifan123/flow_grpo @ ac4c86e
``scripts/train_sd3.py::compute_log_prob`` (guided step, null branch detached) and
``calculate_zero_std_ratio``, executed unchanged; its zero-advantage mask and the Flow-GRPO-Fast
denoising loop (``flow_grpo/diffusers_patch/sd3_pipeline_with_logprob_fast.py``) transcribed. The
denoiser is the generator's fixed ``FakeTransformer``; the zoo's :class:`Sampler` runs the same one.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from diffusers import FlowMatchEulerDiscreteScheduler

from tests.rl._golden import load, t
from zoo.engines.diffusion.sampling import Sampler
from zoo.engines.diffusion.setup import Run
from zoo.rl.diffusion_loss import PerPromptStatTracker, nonzero_advantage_mask, zero_std_ratio
from zoo.rl.diffusion_steps import classifier_free_guidance

GOLDEN = load("flow_grpo_fast")
_spec = importlib.util.spec_from_file_location("make_fast", Path(__file__).parent / "golden" / "make_flow_grpo_fast_golden.py")
FAKE = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(FAKE)


class StubModel:
    """What :class:`Sampler` reads of a model: the scheduler, the device and ``predict``."""

    def __init__(self, steps: int) -> None:
        self.scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0)
        self.scheduler.set_timesteps(steps)
        self.denoiser = FAKE.FakeTransformer()
        self.device = torch.device("cpu")

    def predict(self, latents: torch.Tensor, timesteps: torch.Tensor, cond: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return self.denoiser(latents, timesteps, cond[0], cond[1])[0]


def sampler(steps: int, guided: bool) -> Sampler:
    c = GOLDEN["conditions"]
    null = (t(c["null_embeds"]), t(c["null_pooled"]))
    return Sampler(StubModel(steps), "flow", steps, guidance_scale=GOLDEN["guidance_scale"] if guided else 1.0,
                   null_cond=null if guided else None, detach_uncond=True)  # fmt: skip


def prompt_cond() -> tuple[torch.Tensor, torch.Tensor]:
    return t(GOLDEN["conditions"]["embeds"]), t(GOLDEN["conditions"]["pooled"])


@pytest.mark.parametrize("case", GOLDEN["cfg"], ids=lambda c: f"cfg{c['cfg']}-j{c['j']}")
def test_guided_step_log_prob_and_gradient(case: dict) -> None:
    s = sampler(10, case["cfg"])
    j = case["j"]
    latents, nexts = t(case["latents"])[:, j], t(case["next_latents"])[:, j]
    index = torch.full((latents.shape[0],), case["step_indices"][j])
    out = s.step(index, latents, s.predict(latents, index, prompt_cond()).float(), 0.7, prev_sample=nexts)
    torch.testing.assert_close(out.log_prob, t(case["log_prob"]), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out.prev_sample_mean, t(case["prev_sample_mean"]), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out.std_dev_t, t(case["std_dev_t"]), rtol=1e-6, atol=1e-7)
    (grad,) = torch.autograd.grad(out.log_prob.sum(), s.model.denoiser.w)
    assert grad.item() == pytest.approx(case["grad_w"], rel=1e-4)


def test_detaching_the_null_branch_changes_only_the_gradient() -> None:
    w = torch.tensor(2.0, requires_grad=True)
    for detach, expected in [(True, 4.5 * 3 * 3), (False, 3 * (1 + 4.5 * 2))]:
        uncond, cond = w * torch.ones(3), 3 * w * torch.ones(3)
        out = classifier_free_guidance(uncond, cond, 4.5, detach_uncond=detach)
        torch.testing.assert_close(out, torch.full((3,), 2 + 4.5 * 4.0))
        (grad,) = torch.autograd.grad(out.sum(), w)
        assert grad.item() == pytest.approx(expected)


@pytest.mark.parametrize("case", GOLDEN["filter"], ids=lambda c: str(c["rewards"]))
def test_zero_advantage_mask_and_zero_std_ratio(case: dict) -> None:
    advantages = PerPromptStatTracker(global_std=True, eps=1e-4).update(case["prompts"], t(case["rewards"]))
    torch.testing.assert_close(torch.as_tensor(advantages).float(), t(case["advantages"]), rtol=1e-6, atol=1e-7)
    per_step = torch.as_tensor(advantages).unsqueeze(1).expand(-1, 3)
    assert nonzero_advantage_mask(per_step).tolist() == case["mask"]
    assert nonzero_advantage_mask(torch.as_tensor(advantages)).tolist() == case["mask"]
    assert zero_std_ratio(case["prompts"], t(case["rewards"])) == pytest.approx(case["zero_std_ratio"])


@pytest.mark.parametrize("case", GOLDEN["window"], ids=lambda c: f"T{c['steps']}-window{c['window']}")
def test_sde_window_rollout_matches_the_fast_pipeline(case: dict) -> None:
    s = sampler(case["steps"], guided=True)
    lo, hi = case["window"]
    final, outputs = s.run(t(case["start"]), prompt_cond(), 0.7, torch.Generator().manual_seed(case["seed"]),
                           sde_steps=set(range(lo, hi)))  # fmt: skip
    torch.testing.assert_close(final, t(case["final"]), rtol=1e-5, atol=1e-5)
    states = [t(case["start"])] + [o.prev_sample for o in outputs]
    torch.testing.assert_close(torch.stack(states[lo : hi + 1], 1), t(case["latents"]), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.stack([outputs[i].log_prob for i in range(lo, hi)], 1), t(case["log_probs"]),
                               rtol=1e-5, atol=1e-4)  # fmt: skip
    torch.testing.assert_close(s.timesteps[lo:hi], t(case["timesteps"]))
    assert all(torch.isnan(outputs[i].log_prob).all() for i in range(case["steps"]) if not lo <= i < hi)


def test_window_start_is_uniform_over_both_ends() -> None:
    """The authors draw ``random.randint(lo, hi - size)``: both ends included."""
    alg = SimpleNamespace(sde_window_size=2, sde_window_range=(1, 6), num_steps=8)
    stand_in = SimpleNamespace(recipe=SimpleNamespace(algorithm=alg), generator=torch.Generator().manual_seed(0))
    windows = [Run.sde_window(stand_in) for _ in range(300)]
    assert {w.start for w in windows} == {1, 2, 3, 4} and all(len(w) == 2 for w in windows)
    assert Run.trained_steps(stand_in, 3, 8, range(2, 4)).tolist() == [[2, 3]] * 3
