"""Brief supervised pre-training of a tiny model on (image, prompt) pairs, so that RL starts from a model
that makes images rather than noise (benchmarks; CPU minutes).

Two stages: the VAE as an autoencoder (MSE plus a small KL), its latent scale set so latents have
unit std (``scaling_factor``, as SD's VAEs are configured); then the denoiser on those latents with
its own objective: rectified flow for ``kind="flow"`` (``x_s = (1 - s) x0 + s eps``, target
``eps - x0``, timestep ``1000 s``: SD3's convention, which the Flow-GRPO step assumes) or noise
prediction for ``kind="eps"`` (``scheduler.add_noise``, target ``eps``).
"""

from __future__ import annotations

import logging

import torch

from zoo.engines.diffusion.models import DiffusionModel

logger = logging.getLogger(__name__)


def pretrain_vae(model: DiffusionModel, images: torch.Tensor, *, steps: int, lr: float = 2e-3, batch: int = 32,
                 generator: torch.Generator | None = None) -> float:  # fmt: skip
    """Fit the VAE to ``images`` (N, 3, H, W) in [0, 1]; sets ``scaling_factor``; returns the last MSE."""
    vae = model.vae.train().requires_grad_(True)
    optimizer = torch.optim.AdamW(vae.parameters(), lr=lr)
    data = images * 2 - 1
    mse = torch.zeros(())
    for _ in range(steps):
        x = data[torch.randint(len(data), (batch,), generator=generator)]
        posterior = vae.encode(x).latent_dist
        recon = vae.decode(posterior.sample(generator=generator)).sample
        mse = torch.nn.functional.mse_loss(recon, x)
        loss = mse + 1e-6 * posterior.kl().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    vae.eval().requires_grad_(False)
    with torch.no_grad():
        std = float(vae.encode(data[:256]).latent_dist.mean.std())
    vae.register_to_config(scaling_factor=1.0 / std)
    return mse.item()


def pretrain_denoiser(model: DiffusionModel, images: torch.Tensor, prompts: list[str], *, steps: int, lr: float = 1e-3,
                      batch: int = 32, uncond_prob: float = 0.0, generator: torch.Generator | None = None) -> float:  # fmt: skip
    """Fit the denoiser to generate ``images`` from their ``prompts``; returns the mean loss of the last 50 steps.

    ``uncond_prob`` replaces each example's prompt by the empty one with that probability (SD's prompt
    dropout, 0.1 there), which teaches the null-prompt branch classifier-free guidance needs.
    """
    with torch.no_grad():
        latents = model.vae.encode(images * 2 - 1).latent_dist.mean * model.vae.config.scaling_factor
        embeds, pooled = model.encoder(prompts)
        null_embeds, null_pooled = model.encoder([""])
    denoiser = model.denoiser.train()
    optimizer = torch.optim.AdamW([p for p in denoiser.parameters() if p.requires_grad], lr=lr)
    losses = []
    for _ in range(steps):
        rows = torch.randint(len(latents), (batch,), generator=generator)
        x0, noise = latents[rows], torch.randn(latents[rows].shape, generator=generator)
        if model.kind == "flow":
            s = torch.rand(batch, generator=generator)
            x_s = (1 - s.view(-1, 1, 1, 1)) * x0 + s.view(-1, 1, 1, 1) * noise
            target, timesteps = noise - x0, s * 1000
        else:
            timesteps = torch.randint(model.scheduler.config.num_train_timesteps, (batch,), generator=generator)
            x_s, target = model.scheduler.add_noise(x0, noise, timesteps), noise
        cond = (embeds[rows], pooled[rows])
        if uncond_prob > 0:  # no draw otherwise, so runs without dropout keep their random stream
            drop = (torch.rand(batch, generator=generator) < uncond_prob).view(-1, 1)
            cond = (torch.where(drop.unsqueeze(-1), null_embeds, cond[0]), torch.where(drop, null_pooled, cond[1]))
        prediction = model.predict(x_s, timesteps, cond)
        loss = torch.nn.functional.mse_loss(prediction, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    denoiser.eval()
    return sum(losses[-50:]) / len(losses[-50:])
