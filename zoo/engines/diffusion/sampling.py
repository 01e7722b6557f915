"""Rollouts: run the sampler, keep every stochastic step as a transition the PPO loss can re-score.

A :class:`Transitions` batch is what training consumes, for flat groups and trees alike: row n is
a state latent at step ``index[n]`` and its ``K`` children (``K = 1`` for a flat rollout; the
branch factor at a tree's split), each child with its old log-probability and advantage. One
denoiser forward per row scores all its children, since they share the parent's mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from zoo.engines.diffusion.models import DiffusionModel
from zoo.rl.diffusion_steps import (
    StepOutput,
    classifier_free_guidance,
    dance_sde_step,
    ddim_step_with_logprob,
    flow_cps_step,
    flow_sde_step,
    lcm_step_with_logprob,
)

DANCE_SHIFT = 3.0
"""DanceGRPO's time shift (``--shift 3`` in ``scripts/finetune/finetune_flux_grpo_8gpus.sh``)."""


def dance_schedule(num_steps: int, shift: float = DANCE_SHIFT) -> tuple[torch.Tensor, torch.Tensor]:
    """DanceGRPO's own schedule, not the base's scheduler: ``(timesteps (N,), sigmas (N + 1,))``.

    Every flow-matching trainer of XueZeyue/DanceGRPO (``fastvideo/train_grpo_flux.py`` and its FLUX-LoRA,
    HunyuanVideo, Qwen-Image, Wan siblings) shifts an even grid, ``sigma = s t / (1 + (s - 1) t)`` over
    ``t = linspace(1, 0, N + 1)``, and gives the denoiser ``int(sigma * 1000)``: the truncation is theirs.
    """
    grid = torch.linspace(1, 0, num_steps + 1)
    sigmas = shift * grid / (1 + (shift - 1) * grid)
    return (sigmas[:-1] * 1000).long().float(), sigmas


def rlcm_timesteps(num_steps: int, original_steps: int = 50, num_train_timesteps: int = 1000) -> torch.Tensor:
    """RLCM's LCM schedule, not diffusers': every ``len // N``-th of the ``original_steps`` training timesteps
    ``c k - 1`` from the last (Owen-Oertell/rlcm@b8330ed:lcm_rl_pytorch/diffusers_patch/lcm_scheduler.py:377-382,
    the scheduler scripts/main.py:65 installs). For 8 of 50: 999, 879, ..., 159 (diffusers 0.42 spaces its indices
    by ``linspace`` and gives 999, 879, 759, 639, 499, ...)."""
    if num_steps > original_steps:
        raise ValueError(f"an LCM samples at most original_inference_steps={original_steps} steps, got {num_steps}")
    c = num_train_timesteps // original_steps
    origin = torch.arange(1, original_steps + 1) * c - 1
    skipping = len(origin) // num_steps
    return origin.flip(0)[::skipping][:num_steps]


def policy_steps(step: str, num_steps: int) -> int:
    """How many of a rollout's ``num_steps`` are stochastic policy steps (trained and logged with a log-prob).

    All of them, except DanceGRPO's last: its image is the last step's x0-prediction, so that step's draw never
    reaches the image and the authors train the others only (XueZeyue/DanceGRPO@15cc71d:
    fastvideo/train_grpo_flux.py:250-254 return ``pred_original`` as the image, L511-519 drop the last step).
    RLCM re-noises and trains its last step too, though its image is that step's denoised output
    (Owen-Oertell/rlcm@b8330ed:lcm_rl_pytorch/diffusers_patch/lcm_scheduler.py:437-441 and 482-487,
    pipeline.py:746-748, core/ppo_training_loop.py:134 and 188).
    """
    return num_steps - 1 if step == "dance" else num_steps


def _flux_sigmas(scheduler: Any, num_steps: int, model: DiffusionModel) -> dict[str, Any]:
    """``set_timesteps`` arguments reproducing FluxPipeline's schedule when the scheduler shifts by image size
    (``use_dynamic_shifting``: ``mu`` from the packed sequence length; the pipeline's ``linspace(1, 1/N, N)``)."""
    import numpy as np
    from diffusers.pipelines.flux.pipeline_flux import calculate_shift

    if not scheduler.config.get("use_dynamic_shifting", False):
        return {}
    config, (_, h, w) = scheduler.config, model.latent_shape
    mu = calculate_shift((h // 2) * (w // 2), config.base_image_seq_len, config.max_image_seq_len,
                         config.base_shift, config.max_shift)  # fmt: skip
    return {"sigmas": np.linspace(1.0, 1 / num_steps, num_steps), "mu": mu}


class Sampler:
    """The method's policy step on ``num_steps`` of a schedule: the model scheduler's (as its pipeline
    sets it), or the authors' own for DanceGRPO (:func:`dance_schedule`) and RLCM (:func:`rlcm_timesteps`).

    ``policy_steps`` is the number of stochastic steps (:func:`policy_steps`). The image is the final latent,
    except for DanceGRPO and RLCM, whose image is the last step's clean prediction (:meth:`clean_prediction`).
    With ``guidance_scale > 1`` every denoiser call is classifier-free guided against ``null_cond`` (the
    encoded empty prompt).
    """

    def __init__(self, model: DiffusionModel, step: str, num_steps: int, *, guidance_scale: float = 1.0,
                 null_cond: tuple[torch.Tensor, torch.Tensor] | None = None, detach_uncond: bool = False) -> None:  # fmt: skip
        if guidance_scale != 1.0 and null_cond is None:
            raise ValueError("classifier-free guidance needs null_cond, the encoded empty prompt")
        self.guidance_scale, self.null_cond, self.detach_uncond = guidance_scale, null_cond, detach_uncond
        if step not in ("flow", "cps", "dance", "ddim", "lcm"):
            raise ValueError(f"unknown policy step {step!r}")
        self.model, self.step_name, self.num_steps = model, step, num_steps
        scheduler = model.scheduler
        if step == "dance":
            self.timesteps, self.sigmas = dance_schedule(num_steps)
        elif step == "lcm":
            config = scheduler.config
            self.timesteps = rlcm_timesteps(num_steps, config.original_inference_steps, config.num_train_timesteps)
            self.sigmas = None
        else:
            scheduler.set_timesteps(num_steps, **_flux_sigmas(scheduler, num_steps, model))
            self.timesteps = scheduler.timesteps.clone()
            self.sigmas = scheduler.sigmas.clone().float() if hasattr(scheduler, "sigmas") else None
        self.policy_steps = policy_steps(step, num_steps)

    def model_timesteps(self, index: torch.Tensor) -> torch.Tensor:
        """(B,) denoiser timestep inputs for (B,) step indices."""
        return self.timesteps[index.cpu()].to(self.model.device)

    def predict(
        self, latents: torch.Tensor, index: torch.Tensor, cond: tuple[torch.Tensor, torch.Tensor]
    ) -> torch.Tensor:
        """The (guided) denoiser output at (B,) step ``index``: one batched forward of null and prompt
        conditions when guided (the authors concatenate ``[null, prompt]``), the plain output otherwise."""
        timesteps = self.model_timesteps(index)
        if self.guidance_scale == 1.0:
            return self.model.predict(latents, timesteps, cond)
        n = latents.shape[0]
        null_embeds, null_pooled = (c.expand(n, *c.shape[1:]) for c in self.null_cond)
        both = (torch.cat([null_embeds, cond[0]]), torch.cat([null_pooled, cond[1]]))
        out = self.model.predict(torch.cat([latents, latents]), torch.cat([timesteps, timesteps]), both)
        uncond, text = out.chunk(2)
        return classifier_free_guidance(uncond, text, self.guidance_scale, detach_uncond=self.detach_uncond)

    def step(self, index: torch.Tensor, latents: torch.Tensor, model_output: torch.Tensor, noise_level: float,
             prev_sample: torch.Tensor | None = None, generator: torch.Generator | None = None) -> StepOutput:  # fmt: skip
        """The policy step from ``latents`` at (B,) step ``index`` (draws when ``prev_sample`` is None)."""
        index = index.cpu()
        kwargs = {"prev_sample": prev_sample, "generator": generator}
        if self.step_name == "flow":
            return flow_sde_step(model_output, latents, self.sigmas[index], self.sigmas[index + 1],
                                 sigma_max=float(self.sigmas[1]), noise_level=noise_level, **kwargs)  # fmt: skip
        if self.step_name == "cps":
            return flow_cps_step(model_output, latents, self.sigmas[index], self.sigmas[index + 1],
                                 noise_level=noise_level, **kwargs)  # fmt: skip
        if self.step_name == "dance":
            return dance_sde_step(
                model_output, latents, noise_level, self.sigmas[index], self.sigmas[index + 1], **kwargs
            )
        scheduler = self.model.scheduler
        if self.step_name == "ddim":
            return ddim_step_with_logprob(
                scheduler, model_output, self.timesteps[index], latents, eta=noise_level, **kwargs
            )
        # the last step re-noises to its own timestep (rlcm lcm_scheduler.py:438-441: prev_timestep = timestep)
        following = self.timesteps[(index + 1).clamp(max=len(self.timesteps) - 1)]
        return lcm_step_with_logprob(scheduler, model_output, self.timesteps[index], latents, following, **kwargs)

    @torch.no_grad()
    def run(self, latents: torch.Tensor, cond: tuple[torch.Tensor, torch.Tensor], noise_level: float,
            generator: torch.Generator | None, sde_steps: set[int] | None = None) -> tuple[torch.Tensor, list[StepOutput]]:  # fmt: skip
        """Sample from ``latents`` through every step; returns the image's latents and each policy step's output.

        ``sde_steps`` limits noise to those step indices (deterministic steps elsewhere, the
        evaluation sampler when empty); ``None`` makes every policy step stochastic.
        """
        outputs, image = [], None
        for i in range(self.num_steps):
            index = torch.full((latents.shape[0],), i, dtype=torch.long)
            model_output = self.predict(latents, index, cond).float()
            if i == self.num_steps - 1 and self.step_name in ("dance", "lcm"):
                image = self.clean_prediction(latents, model_output, i)
            if i >= self.policy_steps:
                break
            level = noise_level if sde_steps is None or i in sde_steps else 0.0
            out = self.step(index, latents, model_output, level, generator=generator)  # level 0: the exact mean
            outputs.append(out)
            latents = out.prev_sample
        return (latents if image is None else image), outputs

    def clean_prediction(self, latents: torch.Tensor, model_output: torch.Tensor, i: int) -> torch.Tensor:
        """The image-space estimate at step ``i``: DanceGRPO's ``x - sigma v`` (``pred_original_sample``,
        XueZeyue/DanceGRPO@15cc71d:fastvideo/train_grpo_flux.py:145), LCM's ``f = c_skip x + c_out x0_hat``
        (``denoised``, Owen-Oertell/rlcm@b8330ed:lcm_rl_pytorch/diffusers_patch/lcm_scheduler.py:451-475)."""
        if self.step_name == "dance":
            return latents - self.sigmas[i] * model_output
        scheduler = self.model.scheduler
        t = self.timesteps[i]
        a_t = scheduler.alphas_cumprod[t].float()
        c_skip, c_out = scheduler.get_scalings_for_boundary_condition_discrete(t)
        x0_hat = (latents - (1 - a_t) ** 0.5 * model_output) / a_t**0.5
        return float(c_out) * x0_hat + float(c_skip) * latents


@dataclass
class Transitions:
    """Stochastic steps to train on; row n: ``latents[n]`` at step ``index[n]`` and its K children.

    Shapes: ``latents`` (N, C, H, W); ``next_latents`` (N, K, C, H, W); ``index``, ``cond`` (N,)
    (``cond`` indexes the round's prompt embeddings); ``old_log_prob``, ``advantages`` (N, K).
    """

    latents: torch.Tensor
    next_latents: torch.Tensor
    index: torch.Tensor
    cond: torch.Tensor
    old_log_prob: torch.Tensor
    advantages: torch.Tensor

    def __len__(self) -> int:
        return self.latents.shape[0]

    def select(self, rows: torch.Tensor) -> Transitions:
        return Transitions(*(getattr(self, f)[rows] for f in self.__dataclass_fields__))

    @staticmethod
    def cat(parts: list[Transitions]) -> Transitions:
        return Transitions(*(torch.cat([getattr(p, f) for p in parts]) for f in Transitions.__dataclass_fields__))


def flat_transitions(start: torch.Tensor, outputs: list[StepOutput], cond: torch.Tensor, advantages: torch.Tensor,
                     trained: torch.Tensor) -> Transitions:  # fmt: skip
    """Rows for flat rollouts: image b's step ``trained[b, j]`` for each j (K = 1).

    Args:
        start: (B, C, H, W) initial latents; outputs: the T' policy steps of :meth:`Sampler.run`.
        cond: (B,) prompt-embedding index per image; advantages: (B,) per image.
        trained: (B, J) step indices to train for each image (the first J or a random subset).
    """
    states = torch.stack([start, *[o.prev_sample for o in outputs[:-1]]], dim=1)  # (B, T', ...)
    nexts = torch.stack([o.prev_sample for o in outputs], dim=1)
    log_probs = torch.stack([o.log_prob for o in outputs], dim=1)  # (B, T')
    rows = torch.arange(states.shape[0]).unsqueeze(1).expand_as(trained)
    return Transitions(
        latents=states[rows, trained].flatten(0, 1),
        next_latents=nexts[rows, trained].flatten(0, 1).unsqueeze(1),
        index=trained.flatten(),
        cond=cond.unsqueeze(1).expand_as(trained).flatten(),
        old_log_prob=log_probs[rows, trained].flatten().unsqueeze(1),
        advantages=advantages.unsqueeze(1).expand_as(trained).flatten().unsqueeze(1),
    )
