"""Contrastive image-text models (open_clip): zero-shot classification and retrieval embeddings.

``pipe(image, labels)`` returns ``{label: probability}`` (softmax of the model's
``logit_scale`` x cosine similarity, as CLIP's zero-shot classifier); a list of images gives a
list of dicts. ``pipe.embed_images`` / ``pipe.embed_texts`` return L2-normalised embeddings for
retrieval (cosine similarity = dot product).

Zero-shot labels go through caption templates: one (``template="An H&E image of {}."``) or a set,
whose text embeddings are averaged per label (CLIP's prompt ensembling); the default is the
entry's :attr:`~zoo.kinds.ClipSpec.templates`. A template marks the class name with ``{}``,
``{label}`` or ``CLASSNAME`` (the Patho-CLIP authors' placeholder), and a class may have several
names (synonyms): ``labels={"tumor": ["tumor", "carcinoma"], ...}`` embeds every name with every
template and averages them all, as the authors' zero-shot evaluation builds its class weights
(Wenchuan-Zhang/Patho-R1@3494816:clip/val/zero_shot_evaluation.py:77-99).

Two file layouts are accepted in the resolved directory (the zoo never unpickles weights freely):

1. the open_clip Hub layout: ``open_clip_config.json`` (``model_cfg`` + ``preprocess_cfg``) next to
   ``open_clip_model.safetensors`` - what ``open_clip.create_model('hf-hub:org/repo')`` reads;
   it is loaded through open_clip's ``local-dir:`` schema, which prefers safetensors;
2. a bare ``*.safetensors`` state dict of a built-in open_clip architecture (``entry.architecture``,
   e.g. ``ViT-B-16``). The authors of Patho-CLIP publish a pickled ``PathoCLIP-B.pt`` instead
   (``create_model_and_transforms('ViT-B-16', pretrained='PathoCLIP-B.pt')``): for entries whose spec
   names such files (``ClipSpec.pickled_weights``) the file is fetched and converted once to
   safetensors by :func:`zoo.safe_weights.convert_pickled` (tensors only; anything else refused).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from zoo.hub import ResolvedModel, hub_offline
from zoo.images import ImageInput, load_image
from zoo.model_files import CONFIG_FILES
from zoo.registry import ModelEntry
from zoo.safe_weights import convert_pickled

logger = logging.getLogger(__name__)

OPEN_CLIP_CONFIG = CONFIG_FILES["clip"]
OPEN_CLIP_WEIGHTS = "open_clip_model.safetensors"
#: Where a template puts the class name: the zoo's ``{}`` / ``{label}``, or ``CLASSNAME`` as in the
#: Patho-CLIP authors' prompt files (Wenchuan-Zhang/Patho-R1@3494816:clip/val/zero_shot_evaluation.py:86).
PLACEHOLDERS = ("{label}", "{}", "CLASSNAME")

_CONVERT_HINT = (
    "convert a pickled state dict (tensors only, nothing executed) with:\n"
    "  python -c \"from zoo.safe_weights import convert_pickled; print(convert_pickled('MODEL.pt'))\"\n"
    "and put the printed .safetensors file in the model directory"
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
        self.revision = resolved.revision  # as every pipeline: what was loaded, and from where
        self.source = resolved.source

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

    def class_embeddings(self, classes: Sequence[Sequence[str]], templates: Sequence[str]) -> torch.Tensor:
        """``[C, D]`` unit-norm class embeddings, one per class of names (synonyms).

        Per class, every name in every template is embedded and normalised, the lot is averaged and
        re-normalised: the authors' ``build_zeroshot_weights``
        (Wenchuan-Zhang/Patho-R1@3494816:clip/val/zero_shot_evaluation.py:83-95). With one name per
        class this is CLIP's prompt ensembling over the templates.
        """
        for template in templates:
            if not any(mark in template for mark in PLACEHOLDERS):
                raise ValueError(f"template {template!r} has no place for the class name: write {{}}, {{label}} "
                                 "or CLASSNAME")  # fmt: skip
        groups = [list(names) for names in classes]
        if any(not names for names in groups):
            raise ValueError("every class needs at least one name")
        captions = [fill_template(t, name) for names in groups for name in names for t in templates]
        per_caption = self.embed_texts(captions)
        sizes = [len(names) * len(templates) for names in groups]
        means = torch.stack([chunk.mean(dim=0) for chunk in per_caption.split(sizes)])
        return torch.nn.functional.normalize(means, dim=-1)

    def __call__(
        self,
        image: ImageInput | Sequence[ImageInput],
        labels: Sequence[str] | Mapping[str, Sequence[str]],
        template: str | Sequence[str] | None = None,
    ) -> dict[str, float] | list[dict[str, float]]:
        """Zero-shot class probabilities of ``labels`` for one or more images.

        ``labels`` is a list of class names, or a mapping class -> its names (synonyms, averaged
        as :meth:`class_embeddings` does). ``template`` is one caption template or a set of them
        (``{}``, ``{label}`` or ``CLASSNAME`` marks the name); ``None`` uses the entry's
        ``ClipSpec.templates``. The probabilities are the softmax of ``logit_scale`` x cosine
        similarity; their argmax is the authors' zero-shot prediction
        (Wenchuan-Zhang/Patho-R1@3494816:clip/val/zero_shot_evaluation.py:116-118).
        """
        names = list(labels)
        if len(names) < 2 or len(set(names)) != len(names):
            raise ValueError(f"zero-shot classification needs at least two distinct labels, got {labels!r}")
        groups = [list(labels[k]) for k in names] if isinstance(labels, Mapping) else [[k] for k in names]
        templates = [template] if isinstance(template, str) else list(template or self.entry.spec.templates)
        if not templates:
            raise ValueError("give at least one caption template")
        batched = isinstance(image, (list, tuple))
        text_embeds = self.class_embeddings(groups, templates)
        probs = self.logits(self.embed_images(image), text_embeds).softmax(dim=-1)
        results = [dict(zip(names, row.tolist())) for row in probs]
        return results if batched else results[0]


def fill_template(template: str, name: str) -> str:
    """``template`` with the class name in place of each placeholder (:data:`PLACEHOLDERS`)."""
    for mark in PLACEHOLDERS:
        template = template.replace(mark, name)
    return template


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
        weights = sorted(path.glob("*.safetensors")) or _converted_pickles(entry, resolved)
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


def _converted_pickles(entry: ModelEntry, resolved: ResolvedModel) -> list[Path]:
    """Safetensors copies of the pickled weights the entry's spec names (fetched from the Hub when
    the resolved snapshot lacks them: the safetensors-only download skips ``*.pt``)."""
    patterns = getattr(entry.spec, "pickled_weights", ())
    if not patterns:
        return []
    path = Path(resolved.path)
    found = sorted({p for pattern in patterns for p in path.glob(pattern)})
    if not found and entry.repo_id and resolved.source in ("cache", "download"):
        from huggingface_hub import snapshot_download

        fetched = snapshot_download(
            entry.repo_id, revision=resolved.revision, allow_patterns=list(patterns), local_files_only=hub_offline()
        )
        found = sorted({p for pattern in patterns for p in Path(fetched).glob(pattern)})
    return [convert_pickled(p) for p in found]
