"""Tiny models: the prompt encoder is compositional, pre-training lowers its losses, save/load round-trips."""

from __future__ import annotations

from pathlib import Path

import torch

from zoo.engines.diffusion.models import HashedPromptEncoder, build_tiny, load_model, save_tiny
from zoo.engines.diffusion.pretrain import pretrain_denoiser, pretrain_vae


def test_hashed_encoder_is_deterministic_and_built_from_words() -> None:
    encoder = HashedPromptEncoder(8, 4, max_tokens=4)
    embeds, pooled = encoder(["a red square", "A RED circle"])
    again, _ = HashedPromptEncoder(8, 4, max_tokens=4)(["a red square"])
    assert torch.equal(embeds[0], again[0]) and pooled.shape == (2, 4)
    assert torch.equal(embeds[0, :2], embeds[1, :2]) and not torch.equal(embeds[0, 2], embeds[1, 2])
    assert torch.equal(embeds[0, 3], torch.zeros(8))  # padding


def test_pretraining_lowers_the_losses_and_the_model_round_trips(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = build_tiny("tiny:sd3", sample_size=8)
    images = torch.zeros(16, 3, 16, 16)
    images[:8, 0], images[8:, 2] = 0.9, 0.9  # red or blue squares filling the frame
    prompts = ["a red square"] * 8 + ["a blue square"] * 8
    g = torch.Generator().manual_seed(0)
    first = pretrain_vae(model, images, steps=1, batch=8, generator=g)
    last = pretrain_vae(model, images, steps=40, batch=8, generator=g)
    assert last < first and model.vae.config.scaling_factor != 1.0
    early = pretrain_denoiser(model, images, prompts, steps=5, batch=8, generator=g)
    late = pretrain_denoiser(model, images, prompts, steps=60, batch=8, generator=g)
    assert late < early
    loaded = load_model(str(save_tiny(model, tmp_path / "tiny")))
    assert loaded.vae.config.scaling_factor == model.vae.config.scaling_factor
    x, t = torch.randn(2, 4, 8, 8), torch.tensor([500.0, 100.0])
    cond = model.encoder(["a red square", "a blue square"])
    torch.testing.assert_close(loaded.predict(x, t, cond), model.predict(x, t, cond))
