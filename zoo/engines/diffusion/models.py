"""The denoiser the engine trains, with its VAE, scheduler and prompt encoder, behind one small interface.

:class:`DiffusionModel` hides the one architectural difference the methods see: an SD3-style
transformer predicts a flow velocity (``kind="flow"``), a UNet predicts noise (``kind="eps"``).
Tiny models are built from diffusers configs (the sizes the feasibility study timed: a 10-step
image in ~0.04 s on one CPU thread) with a hashed bag-of-words prompt encoder instead of a text
model, so runs need no Hub. Each word maps to a fixed random vector (seeded by its CRC32), so a
held-out prompt made of known words gets a meaningful, compositional embedding.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

TINY_CONFIG = "zoo_tiny_diffusion.json"
# Flow-GRPO's (yifan123/flow_grpo@ac4c86e:scripts/train_sd3.py:417-428): the `attn.` prefix keeps SD3.5's second
# (dual-attention) `attn2` projections out, which the bare names would also match.
_TRANSFORMER_LORA_TARGETS = ("attn.add_k_proj", "attn.add_q_proj", "attn.add_v_proj", "attn.to_add_out", "attn.to_k",
                             "attn.to_out.0", "attn.to_q", "attn.to_v")  # fmt: skip
_UNET_LORA_TARGETS = ("to_q", "to_k", "to_v", "to_out.0")


class HashedPromptEncoder:
    """Prompt -> ``(embeds (L, dim), pooled (pooled_dim,))`` from fixed random per-word vectors.

    Words are lower-cased and split on spaces; the sequence is padded with a learned-free zero
    vector to ``max_tokens``; ``pooled`` is the mean word vector projected by a fixed random matrix.
    """

    def __init__(self, dim: int, pooled_dim: int, max_tokens: int = 8) -> None:
        self.dim, self.pooled_dim, self.max_tokens = dim, pooled_dim, max_tokens
        self.projection = torch.randn(dim, pooled_dim, generator=torch.Generator().manual_seed(0)) / dim**0.5

    def word(self, word: str) -> torch.Tensor:
        seed = zlib.crc32(word.encode("utf-8"))
        return torch.randn(self.dim, generator=torch.Generator().manual_seed(seed))

    def __call__(self, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        embeds = torch.zeros(len(prompts), self.max_tokens, self.dim)
        for i, prompt in enumerate(prompts):
            words = prompt.lower().split()[: self.max_tokens] or [""]
            embeds[i, : len(words)] = torch.stack([self.word(w) for w in words])
        counts = torch.tensor([max(1, min(len(p.split()), self.max_tokens)) for p in prompts]).unsqueeze(1)
        pooled = (embeds.sum(1) / counts) @ self.projection
        return embeds, pooled


@dataclass
class DiffusionModel:
    """A trainable denoiser and the frozen parts a rollout needs.

    Attributes:
        denoiser: the SD3 transformer or UNet (what RL trains, through LoRA or fully).
        vae: decodes latents to images.
        scheduler: ``FlowMatchEulerDiscreteScheduler``, ``DDIMScheduler`` or ``LCMScheduler``.
        encoder: ``prompts -> (embeds, pooled)``.
        kind: ``flow`` (velocity prediction), ``flux`` (velocity on packed tokens) or ``eps`` (noise prediction).
        latent_shape: (C, H, W) of one latent.
        config: what rebuilds it (:func:`save_tiny` / :func:`load_model`).
        embedded_guidance: the guidance value a guidance-distilled denoiser takes as an input: FLUX.1-dev's
            guidance embedding (DanceGRPO feeds 3.5), or a latent consistency model's ``timestep_cond``, the
            embedding of ``w = guidance - 1`` (RLCM: 8, so w = 7); ``None`` for denoisers without one.
    """

    denoiser: torch.nn.Module
    vae: torch.nn.Module
    scheduler: Any
    encoder: HashedPromptEncoder | PipelinePromptEncoder
    kind: str
    latent_shape: tuple[int, int, int]
    config: dict[str, Any]
    embedded_guidance: float | None = None

    @property
    def device(self) -> torch.device:
        return next(self.denoiser.parameters()).device

    def predict(
        self, latents: torch.Tensor, timesteps: torch.Tensor, cond: tuple[torch.Tensor, torch.Tensor]
    ) -> torch.Tensor:
        """The denoiser output for (B, C, H, W) latents at (B,) timesteps: velocity or noise."""
        embeds, pooled = cond
        if self.kind == "flux":
            return self._flux_velocity(latents, timesteps, embeds, pooled)
        if self.kind == "flow":
            return self.denoiser(hidden_states=latents, timestep=timesteps, encoder_hidden_states=embeds,
                                 pooled_projections=pooled, return_dict=False)[0]  # fmt: skip
        timestep_cond = None
        if self.embedded_guidance is not None:  # an LCM UNet (time_cond_proj_dim): its distilled guidance
            w = torch.full((latents.shape[0],), self.embedded_guidance - 1)
            unet = getattr(self.denoiser, "module", self.denoiser)  # under DistributedDataParallel in multi-GPU runs
            timestep_cond = guidance_embedding(w, unet.config.time_cond_proj_dim).to(latents)
        return self.denoiser(latents, timesteps, timestep_cond=timestep_cond, encoder_hidden_states=embeds,
                             return_dict=False)[0]  # fmt: skip

    def _flux_velocity(self, latents: torch.Tensor, timesteps: torch.Tensor, embeds: torch.Tensor,
                       pooled: torch.Tensor) -> torch.Tensor:  # fmt: skip
        """FLUX's forward as FluxPipeline and DanceGRPO call it: 2x2 patches packed into tokens, position ids
        (0, row, column) for the image tokens and zeros for the text, the timestep as a fraction of 1000."""
        b, c, h, w = latents.shape
        tokens = latents.view(b, c, h // 2, 2, w // 2, 2).permute(0, 2, 4, 1, 3, 5).reshape(b, h * w // 4, c * 4)
        img_ids = torch.zeros(h // 2, w // 2, 3, device=latents.device)
        img_ids[..., 1] += torch.arange(h // 2, device=latents.device)[:, None]
        img_ids[..., 2] += torch.arange(w // 2, device=latents.device)[None, :]
        guidance = None
        if self.embedded_guidance is not None:
            guidance = torch.full((b,), self.embedded_guidance, device=latents.device, dtype=latents.dtype)
        out = self.denoiser(hidden_states=tokens, timestep=timesteps / 1000, guidance=guidance,
                            pooled_projections=pooled, encoder_hidden_states=embeds,
                            txt_ids=torch.zeros(embeds.shape[1], 3, device=latents.device),
                            img_ids=img_ids.reshape(-1, 3), return_dict=False)[0]  # fmt: skip
        return out.view(b, h // 2, w // 2, c, 2, 2).permute(0, 3, 1, 4, 2, 5).reshape(b, c, h, w)

    @torch.no_grad()
    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Images (B, 3, H, W) in [0, 1] from latents (the pipelines' scaling and shift undone)."""
        config = self.vae.config
        latents = latents / config.scaling_factor + (config.shift_factor or 0.0)
        images = self.vae.decode(latents.to(next(self.vae.parameters()).dtype), return_dict=False)[0]
        return (images.float() / 2 + 0.5).clamp(0, 1)

    def lora_targets(self) -> tuple[str, ...]:
        """The attention projections LoRA adapts by default for this architecture."""
        return _UNET_LORA_TARGETS if self.kind == "eps" else _TRANSFORMER_LORA_TARGETS


def guidance_embedding(w: torch.Tensor, dim: int) -> torch.Tensor:
    """(B, dim) sinusoidal embedding of (B,) guidance weights ``w``, an LCM UNet's ``timestep_cond``: RLCM feeds
    ``w = guidance_scale - 1`` to every sampling and training call (Owen-Oertell/rlcm@b8330ed:
    lcm_rl_pytorch/diffusers_patch/pipeline.py:422-448 ``get_guidance_scale_embedding``, L695-697 and L713-719;
    core/ppo_training_loop.py:172-177, util/model.py:11-16), as diffusers' LCM pipeline does."""
    w = w.float() * 1000.0
    half = dim // 2
    frequencies = torch.exp(torch.arange(half, dtype=torch.float32) * -(torch.log(torch.tensor(10000.0)) / (half - 1)))
    angles = w[:, None] * frequencies[None, :]
    embedding = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
    return torch.nn.functional.pad(embedding, (0, 1)) if dim % 2 else embedding


def default_guidance(denoiser: torch.nn.Module, value: float | None) -> float | None:
    """The guidance a guidance-distilled denoiser takes as an input (``value`` when given): FLUX.1-dev with a
    guidance embedding 3.5 (XueZeyue/DanceGRPO@15cc71d:fastvideo/train_grpo_flux.py:239-243), an LCM UNet
    (``time_cond_proj_dim``) 8.0 (Owen-Oertell/rlcm@b8330ed:lcm_rl_pytorch/conf/config.yaml:13); ``None`` for
    a denoiser without such an input."""
    config = denoiser.config
    if config.get("guidance_embeds"):
        return 3.5 if value is None else value
    if config.get("time_cond_proj_dim") is not None:
        return 8.0 if value is None else value
    return None


def build_tiny(name: str, *, seed: int = 0, sample_size: int = 16, embedded_guidance: float | None = None) -> DiffusionModel:
    """A tiny random model from configs: ``tiny:sd3`` (flow), ``tiny:unet`` (DDIM) or ``tiny:lcm`` (LCM, with a
    guidance input: ``embedded_guidance``, default RLCM's 8)."""
    from diffusers import (
        AutoencoderKL,
        DDIMScheduler,
        FlowMatchEulerDiscreteScheduler,
        LCMScheduler,
        SD3Transformer2DModel,
        UNet2DConditionModel,
    )

    kinds = {"tiny:sd3": "flow", "tiny:unet": "eps", "tiny:lcm": "eps"}
    if name not in kinds:
        raise ValueError(f"unknown tiny model {name!r}; use one of {sorted(kinds)} or a saved model directory")
    torch.manual_seed(seed)
    vae = AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                        up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(8, 16), layers_per_block=1,
                        latent_channels=4, norm_num_groups=4, sample_size=2 * sample_size, use_quant_conv=False,
                        use_post_quant_conv=False, shift_factor=0.0, scaling_factor=1.0)  # fmt: skip
    if kinds[name] == "flow":
        denoiser = SD3Transformer2DModel(sample_size=sample_size, patch_size=2, in_channels=4, num_layers=2,
                                         attention_head_dim=16, num_attention_heads=4, joint_attention_dim=32,
                                         caption_projection_dim=64, pooled_projection_dim=32, out_channels=4,
                                         pos_embed_max_size=sample_size)  # fmt: skip
        scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0)
    else:
        # an LCM's UNet takes its distilled guidance as timestep_cond (LCM_Dreamshaper_v7: time_cond_proj_dim 256)
        denoiser = UNet2DConditionModel(sample_size=sample_size, in_channels=4, out_channels=4, layers_per_block=1,
                                        block_out_channels=(32, 64), down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=32,
                                        attention_head_dim=8, norm_num_groups=8,
                                        time_cond_proj_dim=32 if name == "tiny:lcm" else None)  # fmt: skip
        common = {"num_train_timesteps": 1000, "beta_schedule": "scaled_linear", "beta_start": 0.00085, "beta_end": 0.012,
                      "set_alpha_to_one": False}  # fmt: skip
        # steps_offset=1 as in SD's scheduler: with 0 the last DDIM step has zero variance (log-prob not finite)
        scheduler = (DDIMScheduler(**common, clip_sample=False, steps_offset=1) if name == "tiny:unet"
                     else LCMScheduler(**common, original_inference_steps=50))  # fmt: skip
    config = {"name": name, "seed": seed, "sample_size": sample_size}
    return DiffusionModel(denoiser, vae, scheduler, HashedPromptEncoder(32, 32), kinds[name],
                          (4, sample_size, sample_size), config, default_guidance(denoiser, embedded_guidance))  # fmt: skip


def save_tiny(model: DiffusionModel, directory: str | Path) -> Path:
    """Write a (possibly pre-trained) tiny model: its config and the denoiser and VAE weights (safetensors)."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: v.contiguous() for k, v in model.denoiser.state_dict().items()}, str(directory / "denoiser.safetensors")
    )
    save_file({k: v.contiguous() for k, v in model.vae.state_dict().items()}, str(directory / "vae.safetensors"))
    (directory / TINY_CONFIG).write_text(
        json.dumps({**model.config, "vae_scaling_factor": model.vae.config.scaling_factor})
    )
    return directory


class PipelinePromptEncoder:
    """A diffusers pipeline's own text encoders: ``encode_prompt`` without classifier-free guidance.

    SD3-style pipelines return ``(embeds, pooled)``, FLUX's ``(T5 embeds, pooled CLIP, text ids)`` (the
    ids are zeros, rebuilt at the forward); UNet pipelines have no pooled embedding, so the token mean
    stands in (the UNet never reads it). ``max_sequence_length`` caps the T5 tokens of SD3 and FLUX
    (``None``: the pipeline's default, SD3 256 and FLUX 512; Flow-GRPO encodes with 128).
    """

    def __init__(self, pipe: Any, max_sequence_length: int | None = None) -> None:
        self.pipe = pipe
        self.t5 = {} if max_sequence_length is None else {"max_sequence_length": max_sequence_length}

    @torch.no_grad()
    def __call__(self, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        device = self.pipe._execution_device
        if "prompt_3" in self.pipe.encode_prompt.__code__.co_varnames:
            embeds, _, pooled, _ = self.pipe.encode_prompt(
                prompts, None, None, device=device, do_classifier_free_guidance=False, **self.t5
            )
            return embeds, pooled
        if "max_sequence_length" in self.pipe.encode_prompt.__code__.co_varnames:
            embeds, pooled, _ = self.pipe.encode_prompt(prompts, None, device=device, num_images_per_prompt=1,
                                                         **self.t5)  # fmt: skip
            return embeds, pooled
        embeds, _ = self.pipe.encode_prompt(prompts, device, 1, False)
        return embeds, embeds.mean(1)


#: Pipeline components the training loop never calls: it decodes with the VAE and scores with the recipe's rewards.
#: zoo: RLCM's authors load LCM_Dreamshaper_v7 whole and move it to the GPU in float16, safety checker included
#: (Owen-Oertell/rlcm@b8330ed:scripts/main.py:61-69), though their loop never calls it; the zoo leaves these out, and
#: the memory plan (:mod:`zoo.workload`) counts only what the engine holds.
NEVER_CALLED = ("safety_checker", "feature_extractor")


def load_pipeline(
    directory: str | Path,
    resolution: int | None = None,
    dtype: torch.dtype = torch.float32,
    embedded_guidance: float | None = None,
    max_sequence_length: int | None = None,
) -> DiffusionModel:
    """A diffusers text-to-image pipeline directory (``model_index.json``; SD3-style or FLUX transformer, or UNet).

    The text encoders and VAE are frozen and loaded in ``dtype`` (the recipe's ``model.dtype``: nothing steps them,
    so a float32 copy would only cost memory, 19 GB for SD3.5's and FLUX's T5-XXL); the denoiser is loaded in
    float32 whatever ``dtype`` says (the trained weights are masters, log-probs float32). ``resolution`` (pixels)
    sets the latent size, by default the denoiser's ``sample_size`` (FLUX: the pipeline's default, 1024 px).
    ``embedded_guidance`` is fed to a denoiser with a guidance input (:func:`default_guidance`);
    ``max_sequence_length`` caps the T5 prompt tokens (``None``: the pipeline's default).
    """
    from diffusers import DiffusionPipeline, FluxTransformer2DModel

    from zoo.pipelines.diffusion import absent_components

    dtypes = {"default": dtype, "transformer": torch.float32, "unet": torch.float32}
    pipe = DiffusionPipeline.from_pretrained(str(directory), dtype=dtypes, use_safetensors=True,
                                             **absent_components(directory, NEVER_CALLED))  # fmt: skip
    pipe.set_progress_bar_config(disable=True)
    denoiser = getattr(pipe, "transformer", None) or getattr(pipe, "unet", None)
    if denoiser is None or getattr(pipe, "vae", None) is None or not hasattr(pipe, "encode_prompt"):
        raise ValueError(f"{directory} holds a {type(pipe).__name__}; the diffusion engine needs a text-to-image "
                         "pipeline with a transformer or UNet, a VAE and encode_prompt (SD3, FLUX, SD 1.x/2.x, LCM)")  # fmt: skip
    for part in ("text_encoder", "text_encoder_2", "text_encoder_3", "vae"):
        if getattr(pipe, part, None) is not None:
            getattr(pipe, part).requires_grad_(False)
    config = {"name": str(directory), "pipeline": type(pipe).__name__}
    if isinstance(denoiser, FluxTransformer2DModel):
        size = (resolution or pipe.default_sample_size * pipe.vae_scale_factor) // pipe.vae_scale_factor
        if size % 2:
            raise ValueError(f"resolution {resolution} gives a {size}-wide latent; FLUX packs 2x2 latent patches, "
                             f"so the resolution must be a multiple of {2 * pipe.vae_scale_factor}")  # fmt: skip
        return DiffusionModel(denoiser, pipe.vae, pipe.scheduler, PipelinePromptEncoder(pipe, max_sequence_length),
                              "flux", (denoiser.config.in_channels // 4, size, size), config,
                              default_guidance(denoiser, embedded_guidance))  # fmt: skip
    size = resolution // pipe.vae_scale_factor if resolution else denoiser.config.sample_size
    kind = "flow" if getattr(pipe, "transformer", None) is not None else "eps"
    return DiffusionModel(denoiser, pipe.vae, pipe.scheduler, PipelinePromptEncoder(pipe, max_sequence_length), kind,
                          (denoiser.config.in_channels, size, size), config,
                          default_guidance(denoiser, embedded_guidance))  # fmt: skip


def load_model(name: str, tiny: dict[str, Any] | None = None, resolution: int | None = None,
               embedded_guidance: float | None = None, revision: str | None = None,
               max_sequence_length: int | None = None, dtype: torch.dtype = torch.float32) -> DiffusionModel:  # fmt: skip
    """``tiny:*`` -> :func:`build_tiny`; a :func:`save_tiny` directory -> that model; a diffusers pipeline
    directory, zoo name (``flux-1-dev``) or Hub id (at ``revision``) -> :func:`load_pipeline`, its frozen parts in
    ``dtype``."""
    from safetensors.torch import load_file

    if name.startswith("tiny:"):
        return build_tiny(name, **(tiny or {}), embedded_guidance=embedded_guidance)
    from zoo.hub import lookup

    directory = lookup(name).files(revision).path
    if (directory / "model_index.json").is_file():
        return load_pipeline(directory, resolution, dtype, embedded_guidance=embedded_guidance,
                             max_sequence_length=max_sequence_length)
    if not (directory / TINY_CONFIG).is_file():
        raise FileNotFoundError(
            f"model.name={name!r} is not tiny:sd3 / tiny:unet / tiny:lcm, a diffusers pipeline (model_index.json: a "
            f"directory, zoo name or Hub id) or a directory written by zoo.engines.diffusion.models.save_tiny "
            f"({TINY_CONFIG})"
        )
    config = json.loads((directory / TINY_CONFIG).read_text())
    scaling = config.pop("vae_scaling_factor", 1.0)
    model = build_tiny(**config, embedded_guidance=embedded_guidance)
    model.vae.register_to_config(scaling_factor=scaling)
    model.denoiser.load_state_dict(load_file(str(directory / "denoiser.safetensors")))
    model.vae.load_state_dict(load_file(str(directory / "vae.safetensors")))
    return model
