"""Convert :class:`zoo.data.Sample`\\ s into the dataset TRL's VLM GRPO path expects.

TRL's ``GRPOTrainer`` wants a ``datasets.Dataset`` with a conversational ``prompt`` column and an
``images`` column; it inserts one ``{"type": "image"}`` block per image before the first user
text (``trl.data_utils.prepare_multimodal_messages``) and passes every *other* column, one value
per completion, to the reward functions as keyword arguments. We therefore keep the sample's
``id``, ``target`` and ``meta`` as columns: ``rewards.to_trl`` rebuilds each reward sample from
the ``target`` column. ``target`` and ``meta`` travel as JSON strings: Arrow would otherwise unify
the per-row dicts into one struct type (filling absent keys with ``None``) and a reward would
see keys its sample never had.

Images are placed before the text of the user turn. A ``Sample`` whose prompt interleaves
several images with text loses that interleaving here (TRL's conversion does the same); the
text order is kept.

Given the policy's processor, a one-image sample's ``target["resized_size"]`` becomes ``[w, h]`` of
the frame that processor resizes the image to (its smart resize within its pixel limits,
``model.min_pixels``/``model.max_pixels``): the frame the policy sees and writes box coordinates in,
which box rewards (VLM-R1, Vision-R1) map back to ``image_size``. Upstream reads the same frame from
``image_grid_thw`` (jefferyZhan/Griffon@9866875:Vision-R1/vision_r1/trainer/qwen_trainer.py:373-374).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from PIL import Image

from zoo.data import Sample
from zoo.images import load_image

if TYPE_CHECKING:
    from datasets import Dataset

ID_COLUMN = "sample_id"
TARGET_COLUMN = "target"  # the column ``rewards.to_trl`` reads by default (JSON object string)
META_COLUMN = "meta"


def _open(image: Image.Image | str | bytes) -> Image.Image:
    return image if isinstance(image, Image.Image) else load_image(image)


def prompt_messages(sample: Sample, system_prompt: str | None = None) -> list[dict[str, str]]:
    """The sample's prompt as string-content chat messages (TRL adds the image blocks)."""
    if isinstance(sample.prompt, str):
        messages = [{"role": "user", "content": sample.prompt}]
    else:
        messages = [{"role": m["role"], "content": _flatten(m.get("content"))} for m in sample.prompt]
    if system_prompt and messages[0]["role"] != "system":
        messages = [{"role": "system", "content": system_prompt}, *messages]
    return messages


def _flatten(content: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "\n".join(part.get("text", "") for part in content if part.get("type") == "text")


def sample_to_row(sample: Sample, system_prompt: str | None = None, processor: Any = None) -> dict[str, Any]:
    """One TRL dataset row: ``prompt``, ``images`` and the columns rewards need back (with the
    processor's ``resized_size`` for a one-image sample, see the module docstring)."""
    images = [_open(image) for image in sample.images]
    target = sample.target
    if processor is not None and len(images) == 1:
        from zoo.engines.vlm.multiturn_policy import model_frame_size

        target = {**target, "resized_size": list(model_frame_size(processor, images[0].size))}
    return {
        "prompt": prompt_messages(sample, system_prompt),
        "images": images,
        ID_COLUMN: sample.id,
        TARGET_COLUMN: json.dumps(target, sort_keys=True),
        META_COLUMN: json.dumps(sample.meta, sort_keys=True, default=str),
    }


def to_trl_dataset(samples: Iterable[Sample], system_prompt: str | None = None, processor: Any = None) -> Dataset:
    """A ``datasets.Dataset`` for ``GRPOTrainer``; raises when ``samples`` is empty. Pass the policy's
    ``processor`` so box rewards map from the frame it resizes each image to."""
    from datasets import Dataset

    rows = [sample_to_row(s, system_prompt, processor) for s in samples]
    if not rows:
        raise ValueError("the dataset yielded no samples; check data.name / data.kwargs in the recipe")
    if any(not row["images"] for row in rows) and any(row["images"] for row in rows):
        raise ValueError("some samples have images and some have none; TRL needs one kind per dataset")
    if not rows[0]["images"]:
        for row in rows:
            del row["images"]
    return Dataset.from_list(rows)
