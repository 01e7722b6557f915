"""Embedding similarity with CLIP (open_clip) and DINOv2 (timm), loaded from local weights.

Both follow their library's own loading path, so a checkpoint file or a hub tag works the same:
``open_clip.create_model_and_transforms(name, pretrained=<file or tag>)`` and
``timm.create_model(name, pretrained=True, pretrained_cfg_overlay={"file": <file>})``
(timm reads safetensors or a ``weights_only`` pickle). Models load on first use, in eval mode,
and embed batches without gradients. Scores are cosine similarities mapped to [0, 1].
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rewards.image_similarity import to_array

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)


def _cosine01(a, b) -> float:
    import torch

    cos = torch.nn.functional.cosine_similarity(a.float(), b.float(), dim=-1)
    return float(((cos + 1) / 2).clamp(0, 1).item())


class _Embedder:
    """Shared lazy loading and ``(a, b) -> similarity`` call for the two backbones."""

    name = "embedding"

    def __init__(self, device: str = "cpu") -> None:
        self.device = device
        self._model = None
        self._transform = None

    def _load(self) -> None:
        raise NotImplementedError

    def _forward(self, batch):
        raise NotImplementedError

    def embed_images(self, images: Sequence[Any]) -> torch.Tensor:
        """``(N, D)`` L2-normalised embeddings of PIL images / arrays."""
        import torch
        from PIL import Image

        if self._model is None:
            self._load()
        batch = torch.stack([self._transform(Image.fromarray(to_array(im))) for im in images]).to(self.device)
        with torch.inference_mode():
            features = self._forward(batch)
        return torch.nn.functional.normalize(features.float(), dim=-1)

    def __call__(self, a: Any, b: Any) -> float:
        """Image-image similarity in [0, 1]: ``(1 + cos) / 2``."""
        emb = self.embed_images([a, b])
        return _cosine01(emb[0], emb[1])

    def __getstate__(self) -> dict:  # pickles without the weights (TRL async rewards)
        return {**self.__dict__, "_model": None, "_transform": None}


class ClipSimilarity(_Embedder):
    """CLIP image-image and image-text similarity.

    Args:
        model_name: an open_clip architecture (``"ViT-B-32"``) or one added with
            ``open_clip.add_model_config``.
        pretrained: a checkpoint path or an open_clip pretrained tag (``"openai"``).
    """

    def __init__(self, model_name: str = "ViT-B-32", pretrained: str | None = "openai", device: str = "cpu") -> None:
        super().__init__(device)
        self.model_name, self.pretrained = model_name, pretrained
        self.name = f"clip-{model_name}"

    def _load(self) -> None:
        import open_clip

        model, _, preprocess = open_clip.create_model_and_transforms(
            self.model_name, pretrained=self.pretrained, device=self.device)
        self._model, self._transform = model.eval(), preprocess
        self._tokenizer = open_clip.get_tokenizer(self.model_name)

    def _forward(self, batch):
        return self._model.encode_image(batch)

    def text_score(self, image: Any, text: str) -> float:
        """CLIPScore of Hessel et al. (EMNLP 2021): ``2.5 * max(cos(image, text), 0)``, in [0, 2.5]."""
        import torch

        image_emb = self.embed_images([image])[0]
        with torch.inference_mode():
            text_emb = self._model.encode_text(self._tokenizer([text]).to(self.device))[0]
        cos = torch.nn.functional.cosine_similarity(image_emb, text_emb.float(), dim=-1)
        return float(2.5 * cos.clamp(min=0).item())


class DinoSimilarity(_Embedder):
    """DINOv2 CLS-token cosine through timm: a generic image-image similarity, no paper's exact metric.

    The feature is timm's pooled output with ``num_classes=0``: the CLS token *after* the final norm.
    It is neither VinciCoder's (the CLS before the final LayerNorm, which ``msrl-chart`` / ``svg-dino``
    take, :class:`rewards.code_render.DinoEncoder`) nor StarVector's DinoScore (the mean of all
    post-LayerNorm tokens of dinov2-base, joanrod/star-vector@0e083c1:starvector/metrics/compute_dino_score.py:38).

    Args:
        model_name: a timm DINOv2 model (``"vit_small_patch14_dinov2.lvd142m"``).
        checkpoint: a local weights file; ``None`` lets timm fetch the pretrained tag.
        model_kwargs: architecture overrides passed to ``timm.create_model`` (tests build tiny ViTs).
    """

    def __init__(self, model_name: str = "vit_small_patch14_dinov2.lvd142m", checkpoint: str | None = None,
                 device: str = "cpu", **model_kwargs: Any) -> None:
        super().__init__(device)
        self.model_name, self.checkpoint, self.model_kwargs = model_name, checkpoint, model_kwargs
        self.name = f"dino-{model_name.split('.')[0]}"

    def _load(self) -> None:
        import timm

        overlay = {"file": str(self.checkpoint)} if self.checkpoint else None
        model = timm.create_model(self.model_name, pretrained=True, pretrained_cfg_overlay=overlay,
                                  num_classes=0, **self.model_kwargs)
        config = timm.data.resolve_data_config({}, model=model)
        img_size = getattr(getattr(model, "patch_embed", None), "img_size", None)
        if img_size is not None and not getattr(model, "dynamic_img_size", False):
            config["input_size"] = (3, *img_size)  # the pretrained tag's 518 px unless the model was resized
        self._model = model.eval().to(self.device)
        self._transform = timm.data.create_transform(**config)

    def _forward(self, batch):
        return self._model(batch)  # num_classes=0: the pooled (CLS) features
