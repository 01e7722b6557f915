"""Text-image preference rewards on transformers CLIP models: PickScore and CLIPScore.

Both embed the image and ``sample.target["prompt"]`` with a ``CLIPModel`` and score the cosine
similarity of the L2-normalised embeddings:

* ``pickscore``: ``logit_scale.exp() * cos / 26`` with ``yuvalkirstain/PickScore_v1`` and the processor of
  ``laion/CLIP-ViT-H-14-laion2B-s32B-b79K`` (``flow_grpo/pickscore_scorer.py``, yifan123/flow_grpo ac4c86e;
  the division by 26 is theirs, to bring the score near [0, 1]);
* ``clip-score``: CLIPScore, ``2.5 * max(cos, 0)`` (Hessel et al., arXiv 2104.08718) with
  ``openai/clip-vit-large-patch14``.

Weights are found as every zoo model is (local directory, Hugging Face cache, download, safetensors
only) on first use; a model can also be passed in (tests pass tiny random CLIPs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rewards.base import RewardResult, check_lengths, require, target_of
from rewards.image_stats import as_rgb_array


class ClipTextImageReward:
    """Base: cosine of CLIP image and prompt embeddings, mapped by :meth:`from_cosine`.

    Args:
        model_repo: Hub id (or directory) of the ``CLIPModel`` weights.
        processor_repo: Hub id (or directory) of its processor (defaults to ``model_repo``).
        device: where the model runs.
        model, processor: already-built objects (skip loading).
    """

    name = "clip-text-image"
    batch_size = 16

    def __init__(self, model_repo: str, processor_repo: str | None = None, *, device: str = "cpu",
                 model: Any = None, processor: Any = None) -> None:  # fmt: skip
        self.model_repo, self.processor_repo, self.device = model_repo, processor_repo or model_repo, device
        self.model, self.processor = model, processor

    def from_cosine(self, cosine: Any) -> Any:
        raise NotImplementedError

    def _load(self) -> None:
        if self.model is None:
            self.model = load_clip_model(self.model_repo, self.device)
        if self.processor is None:
            self.processor = load_clip_processor(self.processor_repo)

    def cosines(self, images: Sequence[Any], prompts: Sequence[str]) -> Any:
        """``(N,)`` cosine similarities of each image with its prompt."""
        import torch

        self._load()
        pil = [to_pil(im) for im in images]
        out = []
        with torch.inference_mode():
            for start in range(0, len(pil), self.batch_size):
                batch = slice(start, start + self.batch_size)
                pixels = self.processor(images=pil[batch], return_tensors="pt")["pixel_values"].to(self.device)
                text = self.processor(text=list(prompts[batch]), padding=True, truncation=True, max_length=77,
                                      return_tensors="pt").to(self.device)  # fmt: skip
                image_emb = torch.nn.functional.normalize(clip_features(self.model.get_image_features(pixel_values=pixels)), dim=-1)
                text_emb = torch.nn.functional.normalize(clip_features(self.model.get_text_features(**text)), dim=-1)
                out.append((image_emb * text_emb).sum(-1).float().cpu())
        return torch.cat(out)

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        prompts = [str(require(target_of(s), "prompt", self.name)) for s in samples]
        usable, unreadable = readable_images(predictions)
        results: list[RewardResult | None] = [None] * len(predictions)
        for i, err in unreadable.items():
            results[i] = RewardResult(0.0, {"cosine": 0.0}, f"{self.name}: {err}")
        if usable:
            cos = self.cosines([predictions[i] for i in usable], [prompts[i] for i in usable])
            for i, c in zip(usable, cos.tolist()):
                results[i] = RewardResult(float(self.from_cosine(c)), {"cosine": c})
        return results  # type: ignore[return-value]

    def __getstate__(self) -> dict[str, Any]:  # pickles without the model: reloaded where it lands
        return {**vars(self), "model": None, "processor": None}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_repo!r})"


def readable_images(predictions: Sequence[Any]) -> tuple[list[int], dict[int, str]]:
    """``(indices of the readable images, {index: why the others are not})``, checked before any model
    loads, so one broken image is that sample's result and the rest are scored in one batch."""
    usable, unreadable = [], {}
    for i, image in enumerate(predictions):
        try:
            as_rgb_array(image)
            usable.append(i)
        except (TypeError, ValueError) as err:
            unreadable[i] = str(err)
    return usable, unreadable


def load_clip_model(repo: str, device: str = "cpu") -> Any:
    """A transformers ``CLIPModel`` found as every zoo model is (directory, cache, download; safetensors only)."""
    from transformers import CLIPModel

    from zoo.hub import resolve_repo

    return CLIPModel.from_pretrained(resolve_repo(repo).path, use_safetensors=True).to(device).eval()


def load_clip_processor(repo: str) -> Any:
    from transformers import AutoProcessor

    from zoo.hub import resolve_repo

    return AutoProcessor.from_pretrained(resolve_repo(repo).path)


def to_pil(image: Any) -> Any:
    """Any image the rewards accept (PIL, array, tensor) as an RGB PIL image."""
    from PIL import Image

    return Image.fromarray((as_rgb_array(image) * 255).round().astype("uint8"))


def clip_features(output: Any) -> Any:
    """transformers 5 returns a model output from ``get_*_features``; 4.x a tensor."""
    return output if hasattr(output, "norm") else output.pooler_output


class PickScore(ClipTextImageReward):
    """PickScore as Flow-GRPO uses it: ``exp(logit_scale) * cos / 26``."""

    name = "pickscore"

    def __init__(self, model_repo: str = "yuvalkirstain/PickScore_v1",
                 processor_repo: str = "laion/CLIP-ViT-H-14-laion2B-s32B-b79K", **kwargs: Any) -> None:  # fmt: skip
        super().__init__(model_repo, processor_repo, **kwargs)

    def from_cosine(self, cosine: float) -> float:
        return float(self.model.logit_scale.detach().exp()) * cosine / 26


class ClipScore(ClipTextImageReward):
    """CLIPScore (Hessel et al. 2021): ``2.5 * max(cos, 0)``."""

    name = "clip-score"

    def __init__(self, model_repo: str = "openai/clip-vit-large-patch14", **kwargs: Any) -> None:
        super().__init__(model_repo, **kwargs)

    def from_cosine(self, cosine: float) -> float:
        return 2.5 * max(cosine, 0.0)
