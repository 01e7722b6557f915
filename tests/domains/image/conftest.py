"""Tiny image-domain models laid out as their Hub repositories: an SD3 pipeline, PEFT LoRAs on its
transformer, a replacement transformer, a Qwen2.5-VL with an EditScore-style LoRA. Seeded, built offline."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.tiny_pipelines import tiny_clip_tokenizer


def _text_encoder(seed: int):
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection

    torch.manual_seed(seed)
    return CLIPTextModelWithProjection(CLIPTextConfig(
        hidden_size=32, intermediate_size=37, num_attention_heads=4, num_hidden_layers=1, vocab_size=60,
        max_position_embeddings=16, projection_dim=32))  # fmt: skip


def tiny_transformer(seed: int):
    from diffusers import SD3Transformer2DModel

    torch.manual_seed(seed)
    return SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=1, attention_head_dim=8,
                                 num_attention_heads=2, joint_attention_dim=64, caption_projection_dim=16,
                                 pooled_projection_dim=64, out_channels=4, pos_embed_max_size=8)  # fmt: skip


@pytest.fixture(scope="session")
def sd3_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A StableDiffusion3Pipeline directory (the real one's components, tiny) making 16x16 images."""
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, StableDiffusion3Pipeline
    from transformers import T5Config, T5EncoderModel

    folder = tmp_path_factory.mktemp("tiny-sd3")
    torch.manual_seed(0)
    vae = AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                        up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(8, 16), layers_per_block=1,
                        latent_channels=4, norm_num_groups=4, sample_size=16, use_quant_conv=False,
                        use_post_quant_conv=False, shift_factor=0.0, scaling_factor=1.0)  # fmt: skip
    pipe = StableDiffusion3Pipeline(
        transformer=tiny_transformer(0), scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0), vae=vae,
        text_encoder=_text_encoder(1), tokenizer=tiny_clip_tokenizer(folder / "tok1"),
        text_encoder_2=_text_encoder(2), tokenizer_2=tiny_clip_tokenizer(folder / "tok2"),
        text_encoder_3=T5EncoderModel(T5Config(vocab_size=60, d_model=64, d_kv=8, d_ff=32, num_layers=1, num_heads=2)),
        tokenizer_3=tiny_clip_tokenizer(folder / "tok3"),  # the letters tokenizer stands in for T5's
    )  # fmt: skip
    pipe.save_pretrained(folder / "pipeline", safe_serialization=True)
    return folder / "pipeline"


@pytest.fixture(scope="session")
def lora_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PEFT LoRA on the tiny transformer, saved as Flow-GRPO saves theirs (non-zero B, so it changes outputs)."""
    from peft import LoraConfig, get_peft_model

    folder = tmp_path_factory.mktemp("lora")
    model = get_peft_model(tiny_transformer(0), LoraConfig(r=4, lora_alpha=8, init_lora_weights="gaussian",
                                                           target_modules=["attn.to_q", "attn.to_k", "attn.to_v"]))  # fmt: skip
    torch.manual_seed(3)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)
    model.save_pretrained(folder)
    return folder
