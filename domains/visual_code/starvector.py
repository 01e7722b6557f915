"""StarVector im2svg inference through the repository's own code (``trust_remote_code``).

Usage follows joanrod/star-vector ``README.md``: ``AutoModelForCausalLM.from_pretrained(repo,
trust_remote_code=True)``, the image through ``model.model.processor``, then
``model.generate_im2svg({"image": pixel_values}, max_length=...)``. The weights cannot be built
from a config offline (its ``__init__`` downloads the StarCoder tokenizer and the image encoder),
so this module is exercised only with the real download.
"""

from __future__ import annotations

import logging
from typing import Any

from domains.visual_code.prompts import parse_svg
from zoo.hub import ResolvedModel
from zoo.images import ImageInput, load_image
from zoo.outputs import Prediction
from zoo.registry import ModelEntry

logger = logging.getLogger(__name__)


class StarVectorPipeline:
    """``pipe(image) -> Prediction`` whose ``code`` is the generated ``<svg>`` (``parse_error`` when incomplete).

    StarVector takes no text: ``question`` is accepted for the common VLM call shape and ignored.
    """

    def __init__(self, model: Any, entry: ModelEntry, resolved: ResolvedModel) -> None:
        self.model, self.entry = model, entry
        self.revision, self.source, self.path = resolved.revision, resolved.source, resolved.path

    def __repr__(self) -> str:
        return f"StarVectorPipeline({self.entry.name!r}, revision={self.revision!r})"

    def __call__(self, image: ImageInput, question: str = "", max_length: int | None = None) -> Prediction:
        import torch

        pil = load_image(image).convert("RGB")
        pixels = self.model.model.processor(pil, return_tensors="pt")["pixel_values"]
        if pixels.dim() == 3:
            pixels = pixels.unsqueeze(0)
        device = next(self.model.parameters()).device
        with torch.inference_mode():
            text = self.model.generate_im2svg({"image": pixels.to(device)},
                                              max_length=max_length or self.entry.spec.max_new_tokens)[0]
        return Prediction.from_parsed(text, parse_svg(text))


def load_starvector_pipeline(entry: ModelEntry, resolved: ResolvedModel, device: str, dtype: Any) -> StarVectorPipeline:
    """Load with the repository's code; :func:`zoo.load` has already checked the caller opted in by name."""
    from transformers import AutoModelForCausalLM

    if not entry.trust_remote_code:
        raise ValueError(f"{entry.name}: StarVector needs its repository's code; the entry must set trust_remote_code")
    model = AutoModelForCausalLM.from_pretrained(resolved.path, dtype=dtype, trust_remote_code=True)
    return StarVectorPipeline(model.to(device).eval(), entry, resolved)
