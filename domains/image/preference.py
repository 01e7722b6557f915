"""Learned image-preference rewards: the LAION aesthetic predictor and HPS v2.

* ``aesthetic``: the LAION "improved aesthetic predictor" (christophschuhmann/improved-aesthetic-predictor,
  ``simple_inference.py``): an MLP ``768 -> 1024 -> 128 -> 64 -> 16 -> 1`` with dropout 0.2, 0.2, 0.1 after the
  first three layers and *no* activations, on the L2-normalised CLIP ViT-L/14 image embedding. Weights:
  their ``sac+logos+ava1-l14-linearMSE.pth`` (the file DDPO and Flow-GRPO score with), a pickled state dict
  converted once to safetensors (:mod:`zoo.safe_weights`). The score is on their 1-10 rating scale.
* ``hps-v2``: Human Preference Score v2 (Wu et al., arXiv 2306.09341; package ``hpsv2``, ``img_score.py``):
  an open_clip ViT-H-14 fine-tuned on HPD v2, score ``diag(image_features @ text_features.T)`` of the
  model's normalised features (the cosine; no logit scale). Weights ``xswu/HPSv2`` ``HPS_v2.1_compressed.pt``
  (DanceGRPO's reward; ``HPS_v2_compressed.pt`` is v2.0), ``{"state_dict": ...}`` converted the same way.

Weights are fetched on first call (Hugging Face cache first; ``HF_HUB_OFFLINE`` honoured); tests pass
tiny random models of the same classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from domains.image.scorers import (
    ClipTextImageReward,
    clip_features,
    load_clip_model,
    load_clip_processor,
    readable_images,
    to_pil,
)
from rewards.base import RewardResult, check_lengths


def hub_file(repo_id: str, filename: str) -> Path:
    """One file of a Hub repository (cache first), or a named error saying how to get it."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    from zoo.hub import ModelNotAvailableError

    try:
        return Path(hf_hub_download(repo_id, filename))
    except (OSError, HfHubHTTPError, EntryNotFoundError) as err:  # offline, missing or refused
        raise ModelNotAvailableError(
            f"could not get {filename} from {repo_id} ({type(err).__name__}: {err}). On a machine with network "
            f"access run `hf download {repo_id} {filename}` and copy the cache (HF_HOME) here, or pass weights=<path>"
        ) from err


def load_state(path: str | Path) -> dict[str, torch.Tensor]:
    """A state dict from safetensors, or from a pickled file through the zoo's safe converter."""
    from safetensors.torch import load_file

    from zoo.safe_weights import convert_pickled

    path = Path(path)
    return load_file(path if path.suffix == ".safetensors" else convert_pickled(path))


class AestheticMLP(nn.Module):
    """The LAION improved-aesthetic-predictor head (their layer sizes and dropouts; no activations)."""

    def __init__(self, input_size: int = 768) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(input_size, 1024), nn.Dropout(0.2), nn.Linear(1024, 128), nn.Dropout(0.2),
            nn.Linear(128, 64), nn.Dropout(0.1), nn.Linear(64, 16), nn.Linear(16, 1),
        )  # fmt: skip

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        return self.layers(embeddings)


class AestheticScore:
    """The LAION aesthetic score of images (the prompt is not used).

    Args:
        clip_repo: the CLIP ViT-L/14 whose image embedding the MLP reads.
        weights: a weights file, or ``(repo, filename)`` on the Hub.
        model, processor, mlp: already-built parts (tests pass tiny ones).
    """

    name = "aesthetic"
    batch_size = 16

    def __init__(self, clip_repo: str = "openai/clip-vit-large-patch14",
                 weights: str | tuple[str, str] = ("camenduru/improved-aesthetic-predictor",
                                                   "sac+logos+ava1-l14-linearMSE.pth"),
                 *, device: str = "cpu", model: Any = None, processor: Any = None, mlp: AestheticMLP | None = None) -> None:  # fmt: skip
        self.clip_repo, self.weights, self.device = clip_repo, weights, device
        self.model, self.processor, self.mlp = model, processor, mlp

    def _load(self) -> None:
        if self.model is None:
            self.model = load_clip_model(self.clip_repo, self.device)
        if self.processor is None:
            self.processor = load_clip_processor(self.clip_repo)
        if self.mlp is None:
            path = hub_file(*self.weights) if isinstance(self.weights, tuple) else Path(self.weights)
            self.mlp = AestheticMLP(self.model.config.projection_dim)
            self.mlp.load_state_dict(load_state(path))
            self.mlp.to(self.device)
        self.mlp.eval()

    @torch.inference_mode()
    def scores(self, images: Sequence[Any]) -> torch.Tensor:
        """``(N,)`` aesthetic scores."""
        self._load()
        out = []
        for start in range(0, len(images), self.batch_size):
            pil = [to_pil(im) for im in images[start : start + self.batch_size]]
            pixels = self.processor(images=pil, return_tensors="pt")["pixel_values"].to(self.device)
            emb = clip_features(self.model.get_image_features(pixel_values=pixels)).float()
            out.append(self.mlp(emb / emb.norm(dim=-1, keepdim=True).clamp_min(1e-12)).squeeze(-1).cpu())
        return torch.cat(out)

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        """Scores of the readable images; an unreadable one is ``None`` with the reason (models load only if needed)."""
        check_lengths(predictions, samples, self.name)
        usable, unreadable = readable_images(predictions)
        results: list[RewardResult | None] = [None] * len(predictions)
        for i, err in unreadable.items():
            results[i] = RewardResult(None, {}, f"{self.name}: {err}")
        if usable:
            for i, score in zip(usable, self.scores([predictions[i] for i in usable]).tolist()):
                results[i] = RewardResult(float(score))
        return results  # type: ignore[return-value]

    def __getstate__(self) -> dict[str, Any]:
        return {**vars(self), "model": None, "processor": None, "mlp": None}


class HPSv2(ClipTextImageReward):
    """Human Preference Score v2 (v2.1 weights by default) on an open_clip model: the cosine of image and prompt.

    Args:
        weights: ``(repo, filename)`` on the Hub, or a file. arch: the open_clip architecture the weights fill.
        model, preprocess, tokenizer: an already-built open_clip model, its eval transform and tokenizer.
    """

    name = "hps-v2"

    def __init__(self, weights: str | tuple[str, str] = ("xswu/HPSv2", "HPS_v2.1_compressed.pt"), *,
                 arch: str = "ViT-H-14", device: str = "cpu", model: Any = None, preprocess: Any = None,
                 tokenizer: Any = None) -> None:  # fmt: skip
        super().__init__(str(weights), device=device, model=model)
        self.weights, self.arch, self.preprocess, self.tokenizer = weights, arch, preprocess, tokenizer

    def _load(self) -> None:
        import open_clip

        if self.model is None:
            model = open_clip.create_model(self.arch, pretrained=None)
            path = hub_file(*self.weights) if isinstance(self.weights, tuple) else Path(self.weights)
            model.load_state_dict(load_state(path))
            self.model = model.to(self.device).eval()
        if self.preprocess is None:  # the model's eval transform: resize shortest side (bicubic), centre crop, normalise
            self.preprocess = open_clip.image_transform(self.model.visual.image_size, is_train=False)
        if self.tokenizer is None:
            self.tokenizer = open_clip.get_tokenizer(self.arch)

    def cosines(self, images: Sequence[Any], prompts: Sequence[str]) -> torch.Tensor:
        self._load()
        out = []
        with torch.inference_mode():
            for start in range(0, len(images), self.batch_size):
                batch = slice(start, start + self.batch_size)
                pixels = torch.stack([self.preprocess(to_pil(im)) for im in images[batch]]).to(self.device)
                text = self.tokenizer(list(prompts[batch])).to(self.device)
                image_emb = self.model.encode_image(pixels, normalize=True)
                text_emb = self.model.encode_text(text, normalize=True)
                out.append((image_emb * text_emb).sum(-1).float().cpu())  # the diagonal of image @ text.T
        return torch.cat(out)

    def from_cosine(self, cosine: float) -> float:
        return cosine

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "preprocess": None, "tokenizer": None}
