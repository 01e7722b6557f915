"""Tiny, randomly initialised Qwen-VL models built offline from a config.

Tests, the untrained demo checkpoint, benchmarks and the CPU training recipes all need a
model with the *real* architecture (so ``transformers`` code paths, processors, chat
templates and ``image_grid_thw`` behave as they do for a 7B checkpoint) but small enough
to train on two CPU cores. Everything here is built locally: a byte-level BPE tokenizer is
trained on a small corpus, the processor is assembled from its parts, and the model is
initialised from a config — nothing is downloaded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import torch

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedTokenizerFast, ProcessorMixin

Arch = Literal["qwen2_5_vl", "qwen3_vl"]

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<|vision_pad|>",
]

# Qwen's chat layout (system / user / assistant turns, images as vision_start+pad+vision_end),
# written here for the tiny tokenizer; real checkpoints ship their own template.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or 'image' in part %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

DEFAULT_CORPUS = (
    "system user assistant The answer is A B C D E. <think> </think> <answer> </answer> "
    '```json [{"bbox_2d": [12, 34, 56, 78], "label": "button"}] ``` {"point_2d": [5, 9]} '
    '{"action": "click", "coordinate": [100, 200]} Grounding instruction is: click the Settings '
    "button. Report the bbox coordinates in JSON format. What feature is shown? /n A. necrosis "
    "/n B. fibrosis /n C. mitosis /n D. inflammation Which lesion, upper left, lower right, center."
)


def build_tokenizer(
    corpus: Iterable[str] = (DEFAULT_CORPUS,), vocab_size: int = 512, split_digits: bool = True,
    added_tokens: Sequence[str] = (),
) -> PreTrainedTokenizerFast:  # fmt: skip
    """A byte-level BPE fast tokenizer with Qwen's special tokens and chat template.

    ``split_digits`` makes every digit its own token, which small models need to learn
    coordinates (whole-number tokens each need their own embedding to be learned).
    ``added_tokens`` (an action vocabulary) become whole tokens after the ``vocab_size`` BPE ones,
    as ``tokenizer.add_tokens`` adds them to a real checkpoint; they are cut out of the corpus first
    so that BPE spends no merges on their pieces.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if added_tokens:
        whole = re.compile("|".join(re.escape(t) for t in sorted(added_tokens, key=len, reverse=True)))
        corpus = [whole.sub(" ", text) for text in corpus]

    tok = Tokenizer(models.BPE())
    parts = [pre_tokenizers.Digits(individual_digits=True)] if split_digits else []
    tok.pre_tokenizer = pre_tokenizers.Sequence([*parts, pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(corpus), trainer=trainer)
    tok.add_tokens(list(added_tokens))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left"
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_processor(
    tokenizer: PreTrainedTokenizerFast,
    arch: Arch = "qwen2_5_vl",
    min_pixels: int = 56 * 56,
    max_pixels: int = 112 * 112,
) -> ProcessorMixin:
    """The Qwen processor for ``arch`` around ``tokenizer`` (patch 14 for Qwen2.5-VL, 16 for Qwen3-VL)."""
    from transformers import (
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    patch = 14 if arch == "qwen2_5_vl" else 16
    image_processor = Qwen2VLImageProcessor(
        size={"shortest_edge": min_pixels, "longest_edge": max_pixels},
        patch_size=patch,
        merge_size=2,
        temporal_patch_size=2,
    )
    if arch == "qwen2_5_vl":
        video = Qwen2VLVideoProcessor(patch_size=patch, merge_size=2, temporal_patch_size=2)
        return Qwen2_5_VLProcessor(
            image_processor=image_processor, tokenizer=tokenizer, video_processor=video, chat_template=CHAT_TEMPLATE
        )
    video = Qwen3VLVideoProcessor(patch_size=patch, merge_size=2, temporal_patch_size=2)
    return Qwen3VLProcessor(
        image_processor=image_processor, tokenizer=tokenizer, video_processor=video, chat_template=CHAT_TEMPLATE
    )


def build_config(
    tokenizer: PreTrainedTokenizerFast, arch: Arch = "qwen2_5_vl", hidden: int = 64, layers: int = 2,
    vision_hidden: int = 32, mrope_section: Sequence[int] | None = None,
) -> PretrainedConfig:
    """A tiny config of the real architecture, with token ids taken from ``tokenizer``.

    ``mrope_section`` splits each head's rotary frequencies, highest first, into chunks that go to the
    time, row and column position in turn (transformers' Qwen2.5-VL cycles t, h, w over the chunks).
    The default is Qwen2.5-VL's own three contiguous chunks scaled down. At this size that leaves the
    columns only the lowest frequencies (head_dim 32, theta 1e6: below 2e-4 rad per column), so the
    model can barely tell an image's columns apart; ``[1] * (head_dim // 2)`` interleaves the three
    axes, as Qwen3-VL does, and gives rows and columns frequencies of 0.4 and 0.2 rad per token.
    """
    ids = {
        "image_token_id": tokenizer.convert_tokens_to_ids("<|image_pad|>"),
        "video_token_id": tokenizer.convert_tokens_to_ids("<|video_pad|>"),
        "vision_start_token_id": tokenizer.convert_tokens_to_ids("<|vision_start|>"),
        "vision_end_token_id": tokenizer.convert_tokens_to_ids("<|vision_end|>"),
    }
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": hidden,
        "intermediate_size": hidden * 2,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": True,
        "bos_token_id": tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    head_dim = hidden // 4
    section = [head_dim // 8, (head_dim // 2 - head_dim // 8) // 2, 0]
    section[2] = head_dim // 2 - section[0] - section[1]
    if mrope_section is not None:
        if arch != "qwen2_5_vl" or sum(mrope_section) != head_dim // 2 or min(mrope_section) < 1:
            raise ValueError(f"mrope_section {list(mrope_section)} must be positive chunks summing to head_dim // 2 = "
                             f"{head_dim // 2} (hidden {hidden}, 4 heads), for qwen2_5_vl")
        section = list(mrope_section)
    vision: dict[str, Any] = {
        "depth": 2,
        "hidden_size": vision_hidden,
        "intermediate_size": vision_hidden * 2,
        "num_heads": 2,
        "out_hidden_size": hidden,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    }
    if arch == "qwen2_5_vl":
        from transformers import Qwen2_5_VLConfig

        text["rope_scaling"] = {"type": "mrope", "mrope_section": section}
        vision.update(patch_size=14, window_size=56, fullatt_block_indexes=[0, 1])
        return Qwen2_5_VLConfig(text_config=text, vision_config=vision, **ids)
    from transformers import Qwen3VLConfig

    text.update(
        head_dim=head_dim,
        rope_scaling={"rope_type": "default", "mrope_section": section, "mrope_interleaved": True},
    )
    vision.update(patch_size=16, num_position_embeddings=64, deepstack_visual_indexes=[1])
    return Qwen3VLConfig(text_config=text, vision_config=vision, **ids)


def build_tiny_vlm(
    arch: Arch = "qwen2_5_vl",
    corpus: Iterable[str] = (DEFAULT_CORPUS,),
    *,
    seed: int = 0,
    hidden: int = 64,
    layers: int = 2,
    vision_hidden: int = 32,
    min_pixels: int = 56 * 56,
    max_pixels: int = 112 * 112,
    vocab_size: int = 512,
    added_tokens: Sequence[str] = (),
    mrope_section: Sequence[int] | None = None,
) -> tuple[Any, ProcessorMixin]:
    """``(model, processor)``: a randomly initialised Qwen2.5-VL or Qwen3-VL of a few hundred K parameters.

    Seeded, so two calls with the same arguments give identical weights.
    """
    from transformers import AutoModelForImageTextToText

    tokenizer = build_tokenizer(corpus, vocab_size=vocab_size, added_tokens=added_tokens)
    processor = build_processor(tokenizer, arch, min_pixels=min_pixels, max_pixels=max_pixels)
    config = build_config(
        tokenizer, arch, hidden=hidden, layers=layers, vision_hidden=vision_hidden, mrope_section=mrope_section
    )
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model.eval(), processor
