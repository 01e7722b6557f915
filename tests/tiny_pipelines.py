"""Test helpers: diffusers pipeline parts built tiny from configs (seeded, offline), saved as a Hub repository holds them."""

from __future__ import annotations

import json
import string
from pathlib import Path

import torch


def tiny_clip_tokenizer(folder: Path, max_length: int = 16):
    """A CLIP BPE tokenizer whose vocabulary is the letters (each word becomes its characters)."""
    from transformers import CLIPTokenizer

    letters = list(string.ascii_lowercase)
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1,
             **{t: i + 2 for i, t in enumerate(letters + [c + "</w>" for c in letters])}}  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))
    tokenizer.model_max_length = max_length
    return tokenizer


def tiny_flux_transformer(seed: int):
    """A FluxTransformer2DModel with FLUX.1-dev's shape of config (double and single blocks, rotary axes,
    a guidance embedding) on 4 latent channels packed 2x2 into 16-wide tokens."""
    from diffusers import FluxTransformer2DModel

    torch.manual_seed(seed)
    return FluxTransformer2DModel(patch_size=1, in_channels=16, num_layers=1, num_single_layers=1,
                                  attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
                                  pooled_projection_dim=32, guidance_embeds=True, axes_dims_rope=(4, 4, 8))  # fmt: skip


def save_tiny_flux(folder: Path) -> Path:
    """A FluxPipeline directory (CLIP + T5 text encoders, VAE, FLUX.1-dev's dynamically shifted scheduler)
    making 16x16 images from 8x8 latents; the letters tokenizer stands in for T5's."""
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, FluxPipeline
    from transformers import CLIPTextConfig, CLIPTextModel, T5Config, T5EncoderModel

    torch.manual_seed(0)
    vae = AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                        up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(8, 16), layers_per_block=1,
                        latent_channels=4, norm_num_groups=4, sample_size=16, use_quant_conv=False,
                        use_post_quant_conv=False, shift_factor=0.1159, scaling_factor=0.3611)  # fmt: skip
    text_encoder = CLIPTextModel(CLIPTextConfig(hidden_size=32, intermediate_size=37, num_attention_heads=4,
                                                num_hidden_layers=1, vocab_size=60, max_position_embeddings=16,
                                                bos_token_id=0, eos_token_id=1, pad_token_id=1))  # fmt: skip
    t5 = T5EncoderModel(T5Config(vocab_size=60, d_model=32, d_kv=8, d_ff=32, num_layers=1, num_heads=2))
    scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0, use_dynamic_shifting=True, base_shift=0.5, max_shift=1.15,
                                                base_image_seq_len=256, max_image_seq_len=4096)  # fmt: skip
    pipe = FluxPipeline(scheduler=scheduler, vae=vae, text_encoder=text_encoder,
                        tokenizer=tiny_clip_tokenizer(folder / "tok1"), text_encoder_2=t5,
                        tokenizer_2=tiny_clip_tokenizer(folder / "tok2", max_length=32),
                        transformer=tiny_flux_transformer(0))  # fmt: skip
    pipe.save_pretrained(folder / "pipeline", safe_serialization=True)
    return folder / "pipeline"
