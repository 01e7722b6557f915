"""DanceGRPO's and RLCM's rollouts against their authors' code, ported here as the reference.

* DanceGRPO (XueZeyue/DanceGRPO@15cc71d:fastvideo/train_grpo_flux.py): the image is the last step's
  x0-prediction (``run_sample_step`` returns ``pred_original``, L250-254), and the last step is dropped from
  training (L511-519), 60 % of the other 15 trained in random order (L551-570).
* RLCM (Owen-Oertell/rlcm@b8330ed): every UNet call gets the guidance embedding of ``w = 8 - 1``
  (``pipeline.py`` L422-448, L695-719), the schedule is its patched scheduler's (``lcm_scheduler.py``
  L377-382), every step re-noises (the last to its own timestep, L437-441) and is trained, and the image is the
  last step's ``denoised`` (``pipeline.py`` L746-748).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from zoo.engines.diffusion.methods import METHODS
from zoo.engines.diffusion.models import build_tiny, guidance_embedding
from zoo.engines.diffusion.sampling import Sampler
from zoo.engines.diffusion.setup import build_run
from zoo.engines.diffusion.trainer import flat_round
from zoo.engines.reading import load_recipe

SMOKE = Path(__file__).with_name("diffusion_smoke.yaml")


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


# --- DanceGRPO ---------------------------------------------------------------------------------------------------
def their_flux_step(model_output, latents, eta, sigmas, index, prev_sample):
    """XueZeyue/DanceGRPO@15cc71d:fastvideo/train_grpo_flux.py:131-170 (``grpo=True, sde_solver=True``)."""
    sigma = sigmas[index]
    dsigma = sigmas[index + 1] - sigma
    prev_sample_mean = latents + dsigma * model_output
    pred_original_sample = latents - sigma * model_output
    delta_t = sigma - sigmas[index + 1]
    std_dev_t = eta * math.sqrt(delta_t)
    score_estimate = -(latents - pred_original_sample * (1 - sigma)) / sigma**2
    log_term = -0.5 * eta**2 * score_estimate
    prev_sample_mean = prev_sample_mean + log_term * dsigma
    if prev_sample is None:
        prev_sample = prev_sample_mean + torch.randn_like(prev_sample_mean) * std_dev_t
    log_prob = (-((prev_sample.detach().to(torch.float32) - prev_sample_mean.to(torch.float32)) ** 2) / (2 * (std_dev_t**2))
                - math.log(std_dev_t) - torch.log(torch.sqrt(2 * torch.as_tensor(math.pi))))  # fmt: skip
    return prev_sample, pred_original_sample, log_prob.mean(dim=tuple(range(1, log_prob.ndim)))


def test_dancegrpo_rewards_the_last_x0_prediction_and_keeps_its_last_step_out_of_training():
    model = build_tiny("tiny:sd3", seed=0, sample_size=8)
    sampler = Sampler(model, "dance", 16)
    cond = model.encoder(["a red square", "a red square"])
    start = torch.randn(2, *model.latent_shape, generator=torch.Generator().manual_seed(0))
    image, outputs = sampler.run(start, cond, 0.3, torch.Generator().manual_seed(1))
    assert sampler.policy_steps == len(outputs) == 15

    # their loop (run_sample_step, L228-257) on the same denoiser, replaying the zoo's draws
    sigmas, z, log_probs = sampler.sigmas, start, []
    for i in range(16):
        timesteps = torch.full((2,), int(sigmas[i] * 1000))
        pred = model.predict(z, timesteps.float(), cond).float()
        drawn = outputs[i].prev_sample if i < 15 else None
        z, pred_original, log_prob = their_flux_step(pred, z.float(), 0.3, sigmas, i, drawn)
        log_probs.append(log_prob)
    torch.testing.assert_close(image, pred_original)  # latents = pred_original (L254): what they decode and score
    torch.testing.assert_close(torch.stack([o.log_prob for o in outputs], 1), torch.stack(log_probs[:15], 1))


def test_dancegrpo_trains_nine_of_the_first_fifteen_steps_in_random_order(tmp_path):
    run = build_run(load_recipe(SMOKE, ["algorithm.method=dance_grpo", "algorithm.num_steps=16", "algorithm.group_size=2",
                                        "training.prompts_per_step=1", "model.tiny={sample_size: 8}",
                                        "algorithm.timestep_fraction=null"]), tmp_path)  # fmt: skip
    assert run.settings.timestep_fraction == 0.6 and run.settings.shuffle_timesteps
    transitions, _, _ = flat_round(run, METHODS.get("dance_grpo"), run.draw_prompts())
    per_image = transitions.index.view(2, -1)
    # their samples["timesteps"][:, :-1] (L512), randperm over those 15 (L551-556), int(15 * 0.6) trained (L570)
    assert per_image.shape[1] == int(15 * 0.6) == 9 and int(per_image.max()) <= 14
    assert all(len(set(row.tolist())) == 9 for row in per_image)
    assert not all(torch.equal(row, torch.arange(9)) for row in per_image)  # random steps, not the first nine


# --- RLCM --------------------------------------------------------------------------------------------------------
def their_guidance_embedding(w, embedding_dim=512, dtype=torch.float32):
    """Owen-Oertell/rlcm@b8330ed:lcm_rl_pytorch/diffusers_patch/pipeline.py:422-448."""
    assert len(w.shape) == 1
    w = w * 1000.0
    half_dim = embedding_dim // 2
    emb = torch.log(torch.tensor(10000.0)) / (half_dim - 1)
    emb = torch.exp(torch.arange(half_dim, dtype=dtype) * -emb)
    emb = w.to(dtype)[:, None] * emb[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)
    if embedding_dim % 2 == 1:
        emb = torch.nn.functional.pad(emb, (0, 1))
    return emb


def their_timesteps(num_inference_steps, original_steps=50, num_train_timesteps=1000, strength=1.0):
    """Owen-Oertell/rlcm@b8330ed:lcm_rl_pytorch/diffusers_patch/lcm_scheduler.py:377-384."""
    c = num_train_timesteps // original_steps
    lcm_origin_timesteps = np.asarray(list(range(1, int(original_steps * strength) + 1))) * c - 1
    skipping_step = len(lcm_origin_timesteps) // num_inference_steps
    timesteps = lcm_origin_timesteps[::-skipping_step][:num_inference_steps]
    return torch.from_numpy(timesteps.copy()).to(dtype=torch.long)


def their_lcm_step(scheduler, timesteps, step_index, model_output, timestep, sample, generator=None, prev_sample=None):
    """Owen-Oertell/rlcm@b8330ed:lcm_rl_pytorch/diffusers_patch/lcm_scheduler.py:437-509 (epsilon prediction, no
    clipping: the configuration RLCM runs); ``scheduler`` supplies ``alphas_cumprod`` and the boundary scalings."""
    prev_step_index = step_index + 1
    prev_timestep = timesteps[prev_step_index] if prev_step_index < len(timesteps) else timestep
    alpha_prod_t = scheduler.alphas_cumprod[timestep]
    alpha_prod_t_prev = scheduler.alphas_cumprod[prev_timestep]
    beta_prod_t, beta_prod_t_prev = 1 - alpha_prod_t, 1 - alpha_prod_t_prev
    c_skip, c_out = scheduler.get_scalings_for_boundary_condition_discrete(timestep)
    predicted_original_sample = (sample - beta_prod_t.sqrt() * model_output) / alpha_prod_t.sqrt()
    denoised = c_out * predicted_original_sample + c_skip * sample
    if prev_sample is None:
        noise = torch.randn(model_output.shape, generator=generator, dtype=denoised.dtype)
        prev_sample = alpha_prod_t_prev.sqrt() * denoised + beta_prod_t_prev.sqrt() * noise
    log_prob = (-((prev_sample.detach() - denoised * alpha_prod_t_prev.sqrt()) ** 2) / (2 * beta_prod_t_prev)
                - torch.log(beta_prod_t_prev.sqrt()) - torch.log(torch.sqrt(2 * torch.as_tensor(math.pi))))  # fmt: skip
    return prev_sample, denoised, log_prob.mean(dim=tuple(range(1, log_prob.ndim)))


@pytest.mark.parametrize("dim", [256, 32, 7])
def test_guidance_embedding_is_rlcms_and_diffusers(dim):
    from diffusers import LatentConsistencyModelPipeline

    w = torch.tensor([7.0, 0.0, 3.5])
    theirs = their_guidance_embedding(w, embedding_dim=dim)
    torch.testing.assert_close(guidance_embedding(w, dim), theirs, rtol=0, atol=0)
    diffusers = LatentConsistencyModelPipeline.get_guidance_scale_embedding(None, w, embedding_dim=dim)
    torch.testing.assert_close(guidance_embedding(w, dim), diffusers)


def test_an_lcm_unet_gets_its_guidance_embedding_at_every_call():
    model = build_tiny("tiny:lcm", seed=0, sample_size=8)
    assert model.denoiser.config.time_cond_proj_dim == 32 and model.embedded_guidance == 8.0  # RLCM's guidance_scale
    latents = torch.randn(2, *model.latent_shape, generator=torch.Generator().manual_seed(0))
    cond, t = model.encoder(["a red square", "a blue circle"]), torch.tensor([999, 999])
    w_embedding = their_guidance_embedding(torch.tensor(8.0 - 1).repeat(2), embedding_dim=32)  # L172-177
    with torch.no_grad():
        theirs = model.denoiser(latents, t, timestep_cond=w_embedding, encoder_hidden_states=cond[0], return_dict=False)[0]
        torch.testing.assert_close(model.predict(latents, t, cond), theirs)
        other = build_tiny("tiny:lcm", seed=0, sample_size=8, embedded_guidance=2.0).predict(latents, t, cond)
    assert not torch.allclose(other, theirs)  # the embedding is read: another guidance, another output


@pytest.mark.parametrize("steps", [4, 8])
def test_rlcm_rollout_is_their_pipeline_and_trains_the_last_renoise(steps, tmp_path):
    model = build_tiny("tiny:lcm", seed=0, sample_size=8)
    sampler = Sampler(model, "lcm", steps)
    assert sampler.timesteps.tolist() == their_timesteps(steps).tolist()
    cond = model.encoder(["a red square"])
    start = torch.randn(1, *model.latent_shape, generator=torch.Generator().manual_seed(0))
    image, outputs = sampler.run(start, cond, 0.0, torch.Generator().manual_seed(3))

    # their sampling loop (pipeline.py:709-748) on the same UNet, with the same noise generator
    generator, latents, states, log_probs = torch.Generator().manual_seed(3), start, [], []
    w_embedding = their_guidance_embedding(torch.tensor(8.0 - 1).repeat(1), embedding_dim=32)
    timesteps = their_timesteps(steps)
    for i, t in enumerate(timesteps):
        with torch.no_grad():
            pred = model.denoiser(latents, t, timestep_cond=w_embedding, encoder_hidden_states=cond[0], return_dict=False)[0]
        latents, denoised, log_prob = their_lcm_step(model.scheduler, timesteps, i, pred, t, latents, generator)
        states.append(latents)
        log_probs.append(log_prob)
    assert sampler.policy_steps == len(outputs) == steps  # every step is a policy step, the last included
    torch.testing.assert_close(torch.stack([o.prev_sample for o in outputs]), torch.stack(states))
    torch.testing.assert_close(torch.stack([o.log_prob for o in outputs]), torch.stack(log_probs))
    torch.testing.assert_close(image, denoised)  # the image is the last denoised, not the re-noised state

    run = build_run(load_recipe(SMOKE, ["algorithm.method=rlcm", "model.name=tiny:lcm", "model.tiny={sample_size: 8}",
                                        f"algorithm.num_steps={steps}", "algorithm.group_size=2",
                                        "training.prompts_per_step=1"]), tmp_path)  # fmt: skip
    transitions, _, _ = flat_round(run, METHODS.get("rlcm"), run.draw_prompts())
    assert sorted(set(transitions.index.tolist())) == list(range(steps))  # they train all num_timesteps (L134, L188)
    last = transitions.select((transitions.index == steps - 1).nonzero().flatten())
    rescored = run.sampler.step(last.index, last.latents, run.sampler.predict(last.latents, last.index,
                                run.select_cond(run.round_cond, last.cond)).float(), 0.0,
                                prev_sample=last.next_latents[:, 0])  # fmt: skip
    torch.testing.assert_close(rescored.log_prob, last.old_log_prob[:, 0])  # the last re-noise is scored as drawn
