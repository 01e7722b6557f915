"""How long verl's prompts are, counted as verl counts them, and the data settings that follow from the model.

verl 0.9.1 drops a prompt longer than ``data.max_prompt_length`` (default 512 tokens, image tokens included) when
``filter_overlong_prompts`` is on, without an error: a GUI screenshot alone can exceed it. The export
(:mod:`zoo.engines.vlm.verl_engine`) therefore passes the recipe's own limit, or without one sizes
``max_prompt_length`` from its longest prompt at the recipe's pixel limits (:func:`prompt_limit`,
:func:`prompt_tokens`), turns the silent filter off and passes the model's patch size and pixel limits
(:func:`prompt_data`): the settings below cite the verl==0.9.1 wheel's files.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.recipe import RecipeError

if TYPE_CHECKING:
    from zoo.engines.vlm.recipe import PromptDataConfig, VerlRecipe

logger = logging.getLogger(__name__)

#: qwen-vl-utils resizes to multiples of patch x 2, whatever the merge (qwen_vl_utils 0.0.14: vision_process.py:25)
_QWEN_VL_UTILS_MERGE = 2


@dataclass(frozen=True)
class ImageSettings:
    """How verl sees the export's images: the model's patch and merge sizes and the pixel limits both of verl's
    resizes use (qwen-vl-utils', then the processor's), and the processor that counts prompt tokens, if on this
    machine."""

    patch_size: int
    """The vision tower's patch (14 for Qwen2.5-VL, 16 for Qwen3-VL); verl's dataset reads ``data.image_patch_size``
    (default 14: verl/trainer/config/data/legacy_data.yaml:77) before the processor's (rl_dataset.py:113-114)."""
    merge_size: int
    """Patches merged into one token per side (2 for Qwen-VL)."""
    min_pixels: int
    """Smallest image area: the recipe's or its entry's, else the processor's own, else qwen-vl-utils' 4 tokens."""
    max_pixels: int
    """Largest image area: the recipe's or its entry's, else the processor's own, else qwen-vl-utils' 16384 tokens."""
    processor: Any = None
    """The model's processor when it is on this machine (a ``tiny:`` model, a directory, the Hugging Face cache);
    without it prompt lengths are upper bounds (:func:`prompt_tokens`)."""


def image_settings(recipe: VerlRecipe, model: str) -> ImageSettings:
    """The :class:`ImageSettings` of ``model`` (what :func:`zoo.engines.vlm.verl_engine.model_path` returned) for ``recipe``: from its processor,
    read offline, else from its ``config.json`` or the architecture :data:`zoo.model_size.KNOWN` lists."""
    from transformers import AutoProcessor

    from zoo.engines.vlm.policy_model import pixel_limits
    from zoo.model_size import ModelSizeError, known_row, offline_dir, vlm

    name, revision = recipe.model.name, recipe.model.revision
    folder = Path(model) if Path(model).is_dir() else offline_dir(name, revision, "preprocessor_config.json")[0]
    processor = None
    if folder is not None:
        try:
            processor = AutoProcessor.from_pretrained(str(folder), trust_remote_code=recipe.model.trust_remote_code)
        except OSError as err:  # a partial snapshot: counted as when nothing is here
            logger.info("no processor for %r in %s (%s)", name, folder, err)
    if processor is not None:
        ip = processor.image_processor
        patch, merge, own = int(ip.patch_size), int(ip.merge_size), (ip.size["shortest_edge"], ip.size["longest_edge"])
    else:
        config_dir, repo_id, base = offline_dir(name, revision, "config.json")
        try:
            vision = vlm(config_dir, None if config_dir else known_row(repo_id, base, name)).config.vision_config
        except ModelSizeError:
            raise RecipeError(f"model.name={name!r}: neither its processor nor its config.json is on this machine, and "
                              "it is not an architecture zoo.model_size.KNOWN lists; the export sizes verl's prompts "
                              f"from them: download them first (`hf download {repo_id or name} --include '*.json'`)"
                              ) from None  # fmt: skip
        patch, merge, own = int(vision.patch_size), int(vision.spatial_merge_size), (None, None)
        logger.warning("the processor of %r is not on this machine: data.max_prompt_length is an upper bound (image "
                       "tokens from the image sizes and pixel limits, text at one token per byte)", name)  # fmt: skip
    factor = patch * _QWEN_VL_UTILS_MERGE
    low, high = pixel_limits(recipe)
    return ImageSettings(patch, merge, low or own[0] or 4 * factor**2, high or own[1] or 16384 * factor**2, processor)


def prompt_tokens(row: dict[str, Any], images: ImageSettings) -> int:
    """Tokens of one parquet ``row``'s prompt, image tokens included, as verl's ``RLHFDataset`` counts them when it
    filters (rl_dataset.py:206-244: the chat template over the messages verl builds, the images resized).

    With the processor, the exact count without decoding a pixel: the text through its chat template and tokenizer,
    each image placeholder expanded to :func:`image_tokens`, as Qwen's processors expand it (transformers 5.10.4:
    models/qwen2_5_vl/processing_qwen2_5_vl.py:61-62). Without it, an upper bound: one token per UTF-8 byte of the
    text in Qwen-VL's ChatML (a byte-level BPE token spans at least one byte), its default system prompt included.
    """
    tokens = sum(image_tokens(image.size, images) for image in row["images"])
    messages = row["prompt"]
    if images.processor is None:
        return tokens + len(_chatml(messages, len(row["images"])).encode())
    if row["images"]:  # verl turns string contents into blocks only for a row with images (rl_dataset.py:320-356)
        messages = [{**m, "content": _blocks(m["content"])} for m in messages]
    text = images.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = images.processor.tokenizer(text)["input_ids"]
    return tokens + len(ids) - ids.count(images.processor.image_token_id)


def prompt_limit(data: PromptDataConfig, rows: list[dict[str, Any]], images: ImageSettings) -> int:
    """verl's ``data.max_prompt_length`` for the exported ``rows``: the recipe's ``data.max_prompt_length`` when set,
    else the longest prompt (:func:`prompt_tokens`). Under the recipe's limit, a longer prompt is ``data.truncation:
    error``'s :class:`RecipeError` naming its sample, before verl starts, when the processor counts exactly; counted as
    upper bounds (no processor here), a warning, and verl's rollout stops on a multimodal prompt that is longer."""
    counts = [prompt_tokens(row, images) for row in rows]
    limit = data.max_prompt_length
    if limit is None:
        logger.info("data.max_prompt_length=%d: the longest of the %d prompts, image tokens included", max(counts),
                    len(rows))  # fmt: skip
        return max(counts)
    over = [(row["extra_info"]["sample_id"], n) for row, n in zip(rows, counts) if n > limit]
    if over and images.processor is not None:
        sample, n = max(over, key=lambda item: item[1])
        raise RecipeError(f"sample {sample!r}: its prompt is {n} tokens (image tokens included), above "
                          f"data.max_prompt_length={limit} ({len(over)} prompt(s) are); raise the limit, or lower "
                          "model.max_pixels")  # fmt: skip
    if over:
        logger.warning("%d prompt(s) may exceed data.max_prompt_length=%d (upper bounds: the processor is not on this "
                       "machine); verl's rollout stops on a longer multimodal prompt", len(over), limit)  # fmt: skip
    return limit


def image_tokens(size: tuple[int, int], images: ImageSettings) -> int:
    """Tokens of one ``(width, height)`` image in verl: qwen-vl-utils resizes it first (vision_process.py:100, 131-138,
    reproduced by :func:`zoo_common.coords.resized_size_for`), then the processor, whose image processor counts the
    patches as vLLM asks it to (``get_number_of_image_patches``), or without the processor the same smart-resize rule
    at the model's patch x merge."""
    from zoo_common.coords import resized_size_for

    limits = {"min_pixels": images.min_pixels, "max_pixels": images.max_pixels}
    width, height = resized_size_for(size, images.patch_size * _QWEN_VL_UTILS_MERGE, **limits)
    if images.processor is not None:
        patches = images.processor.image_processor.get_number_of_image_patches(height, width, limits)
    else:
        width, height = resized_size_for((width, height), images.patch_size * images.merge_size, **limits)
        patches = width * height // images.patch_size**2
    return patches // images.merge_size**2


def _blocks(content: str) -> list[dict[str, str]]:
    """``content`` as verl's dataset splits it: each ``<image>`` an image block, the text between text blocks."""
    return [{"type": "image"} if part == "<image>" else {"type": "text", "text": part}
            for part in re.split("(<image>)", content) if part]  # fmt: skip


def _chatml(messages: list[dict[str, str]], n_images: int) -> str:
    """``messages`` as Qwen-VL's ChatML template writes them (a system prompt first when none is given, each image a
    vision block), for :func:`prompt_tokens`' byte bound."""
    system = [] if messages[0]["role"] == "system" else ["<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"]
    turns = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    vision = "<|vision_start|><|image_pad|><|vision_end|>" * n_images
    return "".join([*system, *turns, vision, "<|im_start|>assistant\n"])


def prompt_data(images: ImageSettings, max_prompt_length: int, truncation: str) -> dict[str, Any]:
    """verl's ``data`` keys that depend on the model and the prompts (the verl==0.9.1 wheel's
    verl/trainer/config/data/legacy_data.yaml defaults in brackets).

    * ``max_prompt_length`` [512]: the recipe's ``data.max_prompt_length``, else the longest exported prompt, image
      tokens included (:func:`prompt_limit`); the rollout's ``prompt_length`` follows it
      (trainer/config/rollout/rollout.yaml:35), and a multimodal prompt longer than that stops the rollout with
      verl's own ``ValueError`` (experimental/agent_loop/agent_loop.py:353);
    * ``filter_overlong_prompts: false`` [false, the export used to set true]: the filter drops a prompt longer than
      ``max_prompt_length`` without an error, and one whose counting raises too (utils/dataset/rl_dataset.py:199-270),
      so a prompt the sizing got wrong would vanish instead of stopping the run;
    * ``truncation`` [error]: the recipe's ``data.truncation`` (only ``error`` is accepted). verl reads it
      (rl_dataset.py:118) but nothing in 0.9.1's RL data path acts on it: the agent loop's error above is what stops a
      longer multimodal prompt (and a text-only one is cut from the left with a warning, agent_loop.py:437-445);
    * ``image_patch_size`` [14]: the dataset's first resize reads it before the processor's patch
      (rl_dataset.py:113-114), while the rollout uses the processor's (agent_loop.py:299): 16 for Qwen3-VL;
    * ``mm_processor_kwargs.min_pixels/max_pixels`` [{}]: the processor's resize within the recipe's limits, in the
      dataset (rl_dataset.py:238) and the rollout (agent_loop.py:243-252); the transformers image processor applies
      them when both are given (5.10.4: models/qwen2_vl/image_processing_qwen2_vl.py:132). The parquet carries the
      same limits for the first resize (:func:`zoo.engines.vlm.verl_engine.write_parquet`). ``++``: the keys are new under verl's struct config.
    """
    return {
        "data.max_prompt_length": max_prompt_length,
        "data.filter_overlong_prompts": False,
        "data.truncation": truncation,
        "data.image_patch_size": images.patch_size,
        "++data.mm_processor_kwargs.min_pixels": images.min_pixels,
        "++data.mm_processor_kwargs.max_pixels": images.max_pixels,
    }
