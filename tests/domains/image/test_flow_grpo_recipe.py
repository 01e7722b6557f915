"""Flow-GRPO's SD3.5-M settings the review found missing: LoRA on the ``attn.`` projections only (SD3.5's dual
attention blocks keep their ``attn2`` untouched) and T5 prompts at 128 tokens, as yifan123/flow_grpo@ac4c86e
``scripts/train_sd3.py`` (L417-434, L540) sets them; the GenEval recipe trains on the partial-credit reward."""

from __future__ import annotations

from pathlib import Path

import torch

from zoo.engines.diffusion.models import build_tiny, load_model
from zoo.engines.reading import load_recipe

RECIPES = Path(__file__).resolve().parents[3] / "domains" / "image" / "recipes"
#: yifan123/flow_grpo@ac4c86e:scripts/train_sd3.py:419-428
THEIR_TARGETS = ["attn.add_k_proj", "attn.add_q_proj", "attn.add_v_proj", "attn.to_add_out", "attn.to_k",
                 "attn.to_out.0", "attn.to_q", "attn.to_v"]  # fmt: skip


def test_lora_adapts_their_projections_and_not_the_dual_attention_ones():
    from diffusers import SD3Transformer2DModel
    from peft import LoraConfig

    for task in ("geneval", "ocr", "pickscore"):
        recipe = load_recipe(RECIPES / f"flow-grpo-sd35m-{task}.yaml")
        assert list(recipe.training.lora.target_modules) == THEIR_TARGETS
        assert (recipe.training.lora.r, recipe.training.lora.alpha, recipe.model.max_sequence_length) == (32, 64, 128)
    assert list(build_tiny("tiny:sd3").lora_targets()) == THEIR_TARGETS  # the engine's default is theirs too
    torch.manual_seed(0)
    dual = SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=8,
                                 num_attention_heads=2, joint_attention_dim=16, caption_projection_dim=16,
                                 pooled_projection_dim=16, out_channels=4, pos_embed_max_size=8,
                                 dual_attention_layers=(0,))  # SD3.5's MMDiT-X blocks carry an attn2  # fmt: skip
    dual.add_adapter(LoraConfig(r=2, lora_alpha=4, target_modules=THEIR_TARGETS))
    adapted = {n.rsplit(".lora_", 1)[0] for n, _ in dual.named_parameters() if "lora_" in n}
    assert "transformer_blocks.0.attn.to_q" in adapted and not any(".attn2." in n for n in adapted)


def test_prompts_are_encoded_with_t5_at_128_tokens(sd3_dir):
    default = load_model(str(sd3_dir)).encoder(["a red square"])[0]
    theirs = load_model(str(sd3_dir), max_sequence_length=128).encoder(["a red square"])[0]
    clip_tokens = default.shape[1] - 256  # diffusers' SD3 default: CLIP tokens, then T5 padded to 256
    assert theirs.shape[1] == clip_tokens + 128


def test_the_geneval_recipe_trains_on_partial_credit():
    recipe = load_recipe(RECIPES / "flow-grpo-sd35m-geneval.yaml")
    assert [r.name for r in recipe.rewards] == ["geneval-score"] and recipe.reproduces == "flow-grpo-sd35m-geneval"
