"""Qwen2.5-VL / Qwen3-VL inference with the authors' prompt, resize and parser.

``pipe(image, question)`` returns a :class:`~zoo.outputs.Prediction` whose boxes, points and
detected objects are in original-image pixels, whatever frame the model emits: the frame the model saw is
read back from the processor's ``image_grid_thw`` (so it is right even when the processor's own
pixel limits resize the image again) and mapped with :mod:`zoo_common.coords`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

import torch
from PIL import Image

from zoo.hub import ResolvedModel
from zoo.images import ImageInput, load_image
from zoo.load import load_vlm_weights
from zoo.outputs import Prediction
from zoo.registry import ModelEntry
from zoo_common.coords import to_original

logger = logging.getLogger(__name__)


class VLMPipeline:
    """Model + processor + the entry's prompt and parser, callable on images and questions.

    Attributes:
        entry: the catalog entry this pipeline serves.
        revision: the resolved revision (commit hash, or ``local``), recorded for reproducibility.
        source: how the files were found (``checkpoints``, ``cache``, ``download``, ``local``).
    """

    #: Longest question accepted, in characters. The authors' prompts are under 2 kB; the check runs
    #: before tokenisation, so a megabyte of text costs nothing instead of minutes and gigabytes.
    max_question_chars: int = 20_000

    def __init__(self, model: Any, processor: Any, entry: ModelEntry, resolved: ResolvedModel) -> None:
        self.model = model
        self.processor = processor
        self.entry = entry
        self.revision = resolved.revision
        self.source = resolved.source
        self.path = resolved.path
        self.patch_size = int(model.config.vision_config.patch_size)
        self.merge_size = int(getattr(model.config.vision_config, "spatial_merge_size", 2))

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def __repr__(self) -> str:
        return f"VLMPipeline({self.entry.name!r}, revision={self.revision!r}, device={self.device})"

    def messages(self, image: Any, question: str, system: str | None = None, template: str | None = None,
                 ) -> list[dict[str, Any]]:  # fmt: skip
        """The chat messages for one question, laid out as the authors lay them out."""
        spec = self.entry.spec
        system = spec.system_prompt(system)
        content = spec.user_content(question, {"type": "image", "image": image}, template)
        return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": content}]

    def prepare(self, image: ImageInput) -> tuple[Image.Image, Image.Image]:
        """``(original, resized)``: ``image`` read as RGB, and smart-resized with qwen-vl-utils within
        the entry's pixel limits and the processor's (the original's size maps coordinates back).

        Within both, the processor keeps the frame instead of resizing a second time: the model sees one
        smart resize of the original, as in training. A checkpoint saved by a run with
        ``model.min_pixels``/``model.max_pixels`` carries them in its processor, so it is evaluated at
        the resolution it was trained at. When the two ranges do not meet, the processor's wins (it
        would resize to it anyway).
        """
        from qwen_vl_utils import fetch_image

        min_pixels, max_pixels = self.pixel_limits
        original = load_image(image)
        resized = fetch_image(
            {"image": original, "min_pixels": min_pixels, "max_pixels": max_pixels}, image_patch_size=self.patch_size
        )
        return original, resized

    @property
    def pixel_limits(self) -> tuple[int, int]:
        """``(min_pixels, max_pixels)`` :meth:`prepare` resizes within (see there)."""
        spec = self.entry.spec
        size = getattr(getattr(self.processor, "image_processor", None), "size", None) or {}
        low, high = size.get("shortest_edge"), size.get("longest_edge")
        if low is None or high is None:
            return spec.min_pixels, spec.max_pixels
        both = max(spec.min_pixels, low), min(spec.max_pixels, high)
        return both if both[0] <= both[1] else (low, high)

    @torch.inference_mode()
    def __call__(
        self,
        image: ImageInput | Sequence[ImageInput],
        question: str | Sequence[str],
        *,
        system: str | None = None,
        template: str | None = None,
        seed: int | None = None,
        **generation: Any,
    ) -> Prediction | list[Prediction]:
        """Answer ``question`` about ``image``; lists of both give a list of predictions.

        Args:
            image: path, PIL image or array (or a list of them).
            question: the user's text (or one per image; a single string is used for every image).
            system: a named prompt variant of the entry (``"cod"``) or a system prompt of your own.
            template: a named user template of the entry (:attr:`zoo.kinds.VLMSpec.templates`, Curr-ReFT's
                ``"judge"``) for another kind of question than its default.
            seed: seeds torch before generating, so sampled answers are reproducible.
            **generation: passed to ``model.generate`` (``max_new_tokens``, ``do_sample``, ``temperature``...).
                Default: the entry's ``generation`` (the authors' sampling), else greedy decoding, with the
                authors' ``max_new_tokens``.
        """
        batched = isinstance(image, (list, tuple))
        images = list(image) if batched else [image]
        questions = [question] * len(images) if isinstance(question, str) else list(question)
        if len(questions) != len(images):
            raise ValueError(f"got {len(images)} images but {len(questions)} questions; pass one question or one each")
        for q in questions:  # before the image is read or anything tokenised: the cost stays bounded
            if len(q) > self.max_question_chars:
                raise ValueError(
                    f"the question is {len(q)} characters long; {self.entry.name} takes at most "
                    f"{self.max_question_chars} (set pipe.max_question_chars to raise the limit)"
                )
        prepared = [self.prepare(img) for img in images]
        texts = [
            self.processor.apply_chat_template(
                self.messages(resized, q, system, template), add_generation_prompt=True, tokenize=False
            )
            for (_, resized), q in zip(prepared, questions)
        ]
        inputs = self.processor(
            text=texts, images=[resized for _, resized in prepared], padding=True, return_tensors="pt"
        ).to(self.device)
        spec = self.entry.spec  # the authors' sampling when they publish one, else greedy; the caller's wins
        kwargs = {"max_new_tokens": spec.max_new_tokens, **(spec.generation or {"do_sample": False}), **generation}
        self._check_context(inputs["input_ids"].shape[1], kwargs["max_new_tokens"])
        if seed is not None:
            torch.manual_seed(seed)
        output = self.model.generate(**inputs, **kwargs)
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        decoded = self.processor.batch_decode(new_tokens, skip_special_tokens=True)
        grids = inputs["image_grid_thw"].tolist()
        predictions = [
            self._predict(text, q, original.size, grid) for text, q, (original, _), grid in zip(decoded, questions, prepared, grids)
        ]
        return predictions if batched else predictions[0]

    def _check_context(self, prompt_tokens: int, max_new_tokens: int) -> None:
        """Refuse a prompt (image tokens included) that leaves no room for the answer in the model's context."""
        text_config = getattr(self.model.config, "text_config", self.model.config)
        context = getattr(text_config, "max_position_embeddings", None)
        if context is not None and prompt_tokens + max_new_tokens > context:
            raise ValueError(
                f"the prompt is {prompt_tokens} tokens (image included) and {max_new_tokens} new tokens are asked for, "
                f"but {self.entry.name} reads at most {context}; shorten the question or lower max_new_tokens"
            )

    def _predict(self, text: str, question: str, original_size: tuple[int, int], grid: list[int]) -> Prediction:
        """Parse one answer and map its coordinates to original pixels."""
        parser = self.entry.spec.parser
        parsed = parser(text, question) if parser else {"answer": text.strip()}
        prediction = Prediction.from_parsed(text, parsed)
        # image_grid_thw counts patches; the model saw (grid_h * patch) x (grid_w * patch) pixels.
        seen = (grid[2] * self.patch_size, grid[1] * self.patch_size)
        frame = self.entry.spec.coord_frame
        if frame in ("resized", "norm1000"):
            convert = functools.partial(to_original, frame=frame, original_size=original_size, resized_size=seen)
            if prediction.bbox is not None:
                prediction.bbox = convert(prediction.bbox)
            if prediction.point is not None:
                prediction.point = convert(prediction.point)
            if prediction.action is not None:
                prediction.action = _convert_action(prediction.action, convert)
            if prediction.objects:
                prediction.objects = [{**obj, "bbox": convert(obj["bbox"])} for obj in prediction.objects]
        prediction.extra.setdefault("model_frame_size", list(seen))
        if frame in ("resized", "norm1000", "original"):
            prediction.check_geometry(*original_size)
        return prediction


def _convert_action(action: dict[str, Any], convert: Any) -> dict[str, Any]:
    """A copy of a GUI action with its ``coordinate``/``coordinate2`` points in original pixels."""
    out = dict(action)
    for key in ("coordinate", "coordinate2"):
        value = out.get(key)
        if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
            out[key] = convert(value)
    return out


def load_vlm_pipeline(entry: ModelEntry, resolved: ResolvedModel, device: str, dtype: str | torch.dtype) -> VLMPipeline:
    """Build the model (:func:`~zoo.load.load_vlm_weights`) and processor from ``resolved.path`` and wrap them."""
    from transformers import AutoProcessor

    model = load_vlm_weights(resolved.path, dtype=dtype, trust_remote_code=entry.trust_remote_code)
    processor = AutoProcessor.from_pretrained(resolved.path, trust_remote_code=entry.trust_remote_code)
    if getattr(processor, "tokenizer", None) is not None:
        processor.tokenizer.padding_side = "left"  # batched generation appends after the prompt
    return VLMPipeline(model.to(device).eval(), processor, entry, resolved)
