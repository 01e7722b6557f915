"""Contrastive image-text models (open_clip): zero-shot classification and retrieval embeddings.

``pipe(image, labels)`` returns ``{label: probability}`` (softmax of the model's
``logit_scale`` x cosine similarity, as CLIP's zero-shot classifier); a list of images gives a
list of dicts. ``pipe.embed_images`` / ``pipe.embed_texts`` return L2-normalised embeddings for
retrieval (cosine similarity = dot product).

Two file layouts are accepted in the resolved directory, safetensors only (the zoo never
unpickles downloaded weights):

1. the open_clip Hub layout: ``open_clip_config.json`` (``model_cfg`` + ``preprocess_cfg``) next to
   ``open_clip_model.safetensors`` - what ``open_clip.create_model('hf-hub:org/repo')`` reads;
   it is loaded through open_clip's ``local-dir:`` schema, which prefers safetensors;
2. a bare ``*.safetensors`` state dict of a built-in open_clip architecture (``entry.architecture``,
   e.g. ``ViT-B-16``) - the authors of Patho-CLIP publish ``create_model_and_transforms('ViT-B-16',
   pretrained='PathoCLIP-B.pt')``, a pickled file; the error below says how to convert it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from zoo.hub import ResolvedModel
from zoo.images import ImageInput, load_image
from zoo.registry import ModelEntry

logger = logging.getLogger(__name__)

OPEN_CLIP_CONFIG = "open_clip_config.json"
OPEN_CLIP_WEIGHTS = "open_clip_model.safetensors"

_CONVERT_HINT = (
    "convert a pickled checkpoint once, where you trust it, with:\n"
    "  python -c \"import torch, safetensors.torch as st; sd = torch.load('MODEL.pt', map_location='cpu', "
    "weights_only=True); sd = sd.get('state_dict', sd); st.save_file({k.removeprefix('module.'): v.contiguous() "
    "for k, v in sd.items()}, 'open_clip_model.safetensors')\"\n"
    "and put open_clip_model.safetensors in the model directory"
)


class ClipPipeline:
    """An open_clip model with its preprocessing and tokenizer.

    Attributes:
        model: the open_clip ``CLIP`` module (eval mode).
        preprocess: the validation image transform that travels with the weights.
        tokenizer: open_clip tokenizer for the text tower.
        entry: the catalog entry it was loaded for.
    """

    def __init__(self, model: Any, preprocess: Any, tokenizer: Any, entry: ModelEntry, resolved: ResolvedModel) -> None:
        self.model = model
        self.preprocess = preprocess
        self.tokenizer = tokenizer
        self.entry = entry
        self.resolved = resolved

    def __repr__(self) -> str:
        return f"ClipPipeline({self.entry.name!r}, revision={self.resolved.revision!r}, device={self.device})"

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    @torch.inference_mode()
    def embed_images(self, images: ImageInput | Sequence[ImageInput], batch_size: int = 32) -> torch.Tensor:
        """``[N, D]`` unit-norm image embeddings (a single image gives ``[1, D]``)."""
        items = list(images) if isinstance(images, (list, tuple)) else [images]
        out = []
        for start in range(0, len(items), batch_size):
            pixels = torch.stack([self.preprocess(load_image(im)) for im in items[start : start + batch_size]])
            feats = self.model.encode_image(pixels.to(self.device, self.dtype))
            out.append(torch.nn.functional.normalize(feats.float(), dim=-1))
        return torch.cat(out)

    @torch.inference_mode()
    def embed_texts(self, texts: str | Sequence[str], batch_size: int = 256) -> torch.Tensor:
        """``[M, D]`` unit-norm text embeddings."""
        items = [texts] if isinstance(texts, str) else list(texts)
        if not items:
            raise ValueError("embed_texts needs at least one text")
        out = []
        for start in range(0, len(items), batch_size):
            tokens = self.tokenizer(items[start : start + batch_size]).to(self.device)
            out.append(torch.nn.functional.normalize(self.model.encode_text(tokens).float(), dim=-1))
        return torch.cat(out)

    @torch.inference_mode()
    def logits(self, image_embeds: torch.Tensor, text_embeds: torch.Tensor) -> torch.Tensor:
        """``[N, M]`` image-text logits: the model's learned temperature times cosine similarity."""
        return self.model.logit_scale.exp().float() * image_embeds @ text_embeds.T

    def __call__(
        self, image: ImageInput | Sequence[ImageInput], labels: Sequence[str], template: str = "{}"
    ) -> dict[str, float] | list[dict[str, float]]:
        """Zero-shot class probabilities of ``labels`` (each put into ``template``) for one or more images."""
        labels = list(labels)
        if len(labels) < 2 or len(set(labels)) != len(labels):
            raise ValueError(f"zero-shot classification needs at least two distinct labels, got {labels!r}")
        if "{}" not in template:
            raise ValueError(f"template must contain '{{}}' where the label goes, got {template!r}")
        batched = isinstance(image, (list, tuple))
        text_embeds = self.embed_texts([template.format(label) for label in labels])
        probs = self.logits(self.embed_images(image), text_embeds).softmax(dim=-1)
        results = [dict(zip(labels, row.tolist())) for row in probs]
        return results if batched else results[0]


def _precision(dtype: torch.dtype) -> str:
    return {torch.float32: "fp32", torch.bfloat16: "pure_bf16", torch.float16: "pure_fp16"}.get(dtype, "fp32")


def load_clip_pipeline(
    entry: ModelEntry, resolved: ResolvedModel, device: str, dtype: str | torch.dtype = torch.float32
) -> ClipPipeline:
    """Build an open_clip model from ``resolved.path`` (layouts in the module docstring)."""
    import open_clip

    path = Path(resolved.path)
    precision = _precision(dtype) if isinstance(dtype, torch.dtype) else "fp32"
    if (path / OPEN_CLIP_CONFIG).is_file():
        if not (path / OPEN_CLIP_WEIGHTS).is_file() and not any(path.glob("*.safetensors")):
            raise FileNotFoundError(f"{path} has {OPEN_CLIP_CONFIG} but no *.safetensors weights; " + _CONVERT_HINT)
        name = f"local-dir:{path}"
        model, _, preprocess = open_clip.create_model_and_transforms(name, device=device, precision=precision)
        tokenizer = open_clip.get_tokenizer(name)
    else:
        weights = sorted(path.glob("*.safetensors"))
        if len(weights) != 1:
            found = ", ".join(p.name for p in path.iterdir()) or "nothing"
            raise FileNotFoundError(
                f"{entry.name}: expected {OPEN_CLIP_CONFIG} + {OPEN_CLIP_WEIGHTS}, or one *.safetensors state dict of "
                f"open_clip {entry.architecture!r}, in {path}; found {found}. To use a pickled checkpoint, "
                + _CONVERT_HINT
            )
        if entry.architecture not in open_clip.list_models():
            raise ValueError(f"{entry.name}: {entry.architecture!r} is not an open_clip architecture name")
        model, _, preprocess = open_clip.create_model_and_transforms(
            entry.architecture, pretrained=str(weights[0]), device=device, precision=precision
        )
        tokenizer = open_clip.get_tokenizer(entry.architecture)
    logger.info("loaded open_clip %s from %s", entry.architecture, path)
    return ClipPipeline(model.eval(), preprocess, tokenizer, entry, resolved)
