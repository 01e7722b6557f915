"""The models GenEval judges with, on transformers, and the ``geneval`` reward built on them.

* :class:`Mask2FormerDetector`: instance segmentation with ``Mask2FormerForUniversalSegmentation``; boxes are
  the masks' extents, labels renamed to GenEval's object names. Its ``weights`` say which detector scores:

  - GenEval's own, OpenMMLab's ``mask2former_swin-s-p4-w7-224_lsj_8x2_50e_coco`` ``.pth``
    (djghosh13/geneval@af4902f:evaluation/download_models.sh:8), when given its path: converted on load by
    :mod:`domains.image.mmdet_mask2former`;
  - otherwise (the default) ``facebook/mask2former-swin-small-coco-instance``. zoo: a different checkpoint from
    GenEval's, not a port of it: the same Swin-S Mask2Former architecture, but transformers' conversion of
    facebookresearch/Mask2Former's own COCO training, used because OpenMMLab's file is not on the Hub. Its scores,
    and so GenEval's 0.3 / 0.9 cuts (:data:`domains.image.geneval.THRESHOLD`), fall differently.
* :class:`ClipColourClassifier`: GenEval's colour check: CLIP ViT-L/14 zero-shot over its ten colours, each
  colour's text embedding the normalised mean of its three templates' normalised embeddings (as
  ``clip_benchmark.zero_shot_classifier``), on the object pasted by its mask onto grey ``#999`` and
  cropped to its box.
* :class:`GenEvalReward` (``geneval``): 1 when the image passes :func:`domains.image.geneval.judge`, else 0;
  ``sample.target`` is a GenEval metadata row. GenEval's metric: what ``zoo eval --data geneval`` scores.
* :class:`GenEvalScore` (``geneval-score``): the partial credit Flow-GRPO trains on
  (:func:`domains.image.geneval.partial_credit`), on the image JPEG-encoded as Flow-GRPO sends it to its server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from domains.image.geneval import (
    COCO_TO_GENEVAL,
    COLORS,
    ColourClassifier,
    Detection,
    Detector,
    judge,
    keep_objects,
    partial_credit,
)
from domains.image.scorers import clip_features, load_clip_model, load_clip_processor, to_pil
from rewards.base import RewardResult, check_lengths, require, target_of
from rewards.image_stats import as_rgb_array

COLOUR_TEMPLATES = ("a photo of a {c} {name}", "a photo of a {c}-colored {name}", "a photo of a {c} object")
BACKGROUND = (153, 153, 153)  # their bgcolor "#999"


#: The default detector: on the Hub, but not GenEval's checkpoint (see the module docstring).
HF_DETECTOR = "facebook/mask2former-swin-small-coco-instance"


class Mask2FormerDetector:
    """Image -> GenEval :class:`Detection` s, from a transformers Mask2Former instance-segmentation model.

    Args:
        weights: a Hub repository or model folder in transformers' layout (default :data:`HF_DETECTOR`), or the
            path of an mmdetection ``.pth`` (GenEval's own checkpoint), converted on first use.
        device: where the model runs.
        model, processor: an already loaded model and processor (then ``weights`` only names them).
        min_score: the lowest confidence kept; GenEval's tag thresholds are applied later, by ``keep_objects``.
    """

    def __init__(self, weights: str = HF_DETECTOR, *, device: str = "cpu", model: Any = None, processor: Any = None,
                 min_score: float = 0.3) -> None:  # fmt: skip
        self.weights, self.device, self.min_score = weights, device, min_score
        self.model, self.processor = model, processor

    @property
    def is_mmdet_checkpoint(self) -> bool:
        """Whether the weights are an mmdetection ``.pth`` (GenEval's detector is one) rather than transformers'."""
        return str(self.weights).endswith(".pth")

    @property
    def source(self) -> str:
        """Which detector scores, for a run's records (``metrics.json``)."""
        if self.is_mmdet_checkpoint:
            return f"mmdetection Mask2Former {Path(self.weights).name}, converted to transformers (GenEval's detector)"
        difference = " (zoo: not GenEval's mmdetection checkpoint)" if self.weights == HF_DETECTOR else ""
        return f"transformers Mask2Former {self.weights}{difference}"

    def _load(self) -> None:
        if self.model is not None and self.processor is not None:
            return
        if self.is_mmdet_checkpoint:
            from domains.image.mmdet_mask2former import load_mmdet_mask2former

            self.model, self.processor = load_mmdet_mask2former(self.weights, device=self.device)
            return
        from transformers import AutoImageProcessor, Mask2FormerForUniversalSegmentation

        from zoo.hub import resolve_repo

        path = resolve_repo(self.weights).path
        if self.model is None:
            self.model = Mask2FormerForUniversalSegmentation.from_pretrained(path, use_safetensors=True).to(self.device).eval()
        if self.processor is None:
            self.processor = AutoImageProcessor.from_pretrained(path)

    def __call__(self, image: Any) -> list[Detection]:
        import torch

        self._load()
        pil = to_pil(image)
        inputs = self.processor(images=pil, return_tensors="pt").to(self.device)
        with torch.inference_mode():
            outputs = self.model(**inputs)
        # keep everything the lower GenEval threshold could keep; judge() applies the tag's threshold
        result = self.processor.post_process_instance_segmentation(
            outputs, threshold=self.min_score, target_sizes=[pil.size[::-1]], return_binary_maps=True)[0]
        masks = result["segmentation"]
        detections = []
        for index, info in enumerate(result["segments_info"]):
            mask = masks[index].bool().cpu().numpy() if masks is not None and masks.ndim == 3 else None
            if mask is None or not mask.any():
                continue
            ys, xs = np.nonzero(mask)
            name = self.model.config.id2label[int(info["label_id"])]
            detections.append(Detection(COCO_TO_GENEVAL.get(name, name), float(info["score"]),
                                        (float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max())), mask))  # fmt: skip
        return detections


class ClipColourClassifier:
    """GenEval's zero-shot colour classifier on a transformers ``CLIPModel`` (default ``openai/clip-vit-large-patch14``)."""

    def __init__(self, repo: str = "openai/clip-vit-large-patch14", *, device: str = "cpu", model: Any = None,
                 processor: Any = None) -> None:  # fmt: skip
        self.repo, self.device, self.model, self.processor = repo, device, model, processor
        self._weights: dict[str, Any] = {}

    def _classifier(self, name: str) -> Any:
        """(D, 10) normalised colour embeddings for class ``name`` (cached per class, as theirs)."""
        import torch

        if name not in self._weights:
            columns = []
            for colour in COLORS:
                texts = [t.format(c=colour, name=name) for t in COLOUR_TEMPLATES]
                tokens = self.processor(text=texts, padding=True, truncation=True, return_tensors="pt").to(self.device)
                emb = torch.nn.functional.normalize(clip_features(self.model.get_text_features(**tokens)), dim=-1)
                columns.append(torch.nn.functional.normalize(emb.mean(0), dim=-1))
            self._weights[name] = torch.stack(columns, dim=1)
        return self._weights[name]

    def crops(self, image: Any, detections: Sequence[Detection]) -> list[Any]:
        """Each object on grey (where its mask is set) cropped to its box, as their ``ImageCrops``."""
        from PIL import Image

        pil = to_pil(image)
        blank = Image.new("RGB", pil.size, BACKGROUND)
        out = []
        for det in detections:
            shown = pil if det.mask is None else Image.composite(pil, blank, Image.fromarray(det.mask.astype(np.uint8) * 255))
            out.append(shown.crop(tuple(det.box)))
        return out

    def __call__(self, image: Any, detections: Sequence[Detection], name: str) -> list[str]:
        import torch

        if self.model is None:
            self.model = load_clip_model(self.repo, self.device)
        if self.processor is None:
            self.processor = load_clip_processor(self.repo)
        with torch.inference_mode():
            pixels = self.processor(images=self.crops(image, detections), return_tensors="pt")["pixel_values"]
            emb = torch.nn.functional.normalize(clip_features(self.model.get_image_features(pixel_values=pixels.to(self.device))), dim=-1)
            return [COLORS[i] for i in (emb @ self._classifier(name)).argmax(1).tolist()]


class GenEvalReward:
    """GenEval correctness as a reward: 1.0 when the image passes its metadata row's rules, else 0.0.

    Args:
        detector: ``image -> [Detection]``, or the weights of a :class:`Mask2FormerDetector` (GenEval's own
            mmdetection ``.pth``, or a transformers repository); default :data:`HF_DETECTOR`, built on first use.
        colours: the colour classifier (default :class:`ClipColourClassifier`).
        device: where a detector built from weights runs.
    """

    name = "geneval"

    def __init__(self, detector: Detector | str | None = None, colours: ColourClassifier | None = None, *,
                 device: str = "cpu") -> None:  # fmt: skip
        self._settings: dict[str, Any] = {"detector": detector, "colours": colours, "device": device}
        self.detector = Mask2FormerDetector(detector, device=device) if isinstance(detector, str) else detector
        self.colours = colours

    def with_options(self, **kwargs: Any) -> GenEvalReward:
        """A copy with other settings: a recipe's ``kwargs`` (``detector: <GenEval's .pth>``, ``device``)."""
        return type(self)(**{**self._settings, **kwargs})

    @property
    def detector_source(self) -> str:
        """Which detector scores (or will score), as ``metrics.json`` records it."""
        detector = self.detector or Mask2FormerDetector()
        name = getattr(detector, "__name__", type(detector).__name__)
        return getattr(detector, "source", None) or f"{name} (a detector passed in)"

    def prepare(self, image: Any) -> Any:
        """The image the detector sees (GenEval reads the saved PNG: the image itself)."""
        return image

    def verdict(self, image: Any, objects: Mapping[str, list[Detection]], row: Mapping[str, Any]) -> RewardResult:
        """The score of one image from its kept detections."""
        correct, reason = judge(image, objects, row, self.colours)
        return RewardResult(float(correct), {"correct": float(correct)}, reason or None)

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        self.detector = self.detector or Mask2FormerDetector()
        self.colours = self.colours or ClipColourClassifier()
        results = []
        for image, sample in zip(predictions, samples):
            row = target_of(sample)
            tag = str(require(row, "tag", self.name))
            require(row, "include", self.name)
            try:
                as_rgb_array(image)
            except (TypeError, ValueError) as err:
                results.append(RewardResult(0.0, {}, f"{self.name}: {err}"))
                continue
            image = self.prepare(image)
            results.append(self.verdict(image, keep_objects(self.detector(image), tag), row))
        return results

    def __repr__(self) -> str:
        return f"{type(self).__name__}(detector={type(self.detector).__name__}, colours={type(self.colours).__name__})"


class GenEvalScore(GenEvalReward):
    """Flow-GRPO's GenEval training reward: the reward server's partial credit (:func:`partial_credit`) in [0, 1]
    for the usual rows (below 0 when a class is over-drawn: theirs is not clipped).

    The image is JPEG-encoded at PIL's default quality and decoded again, as
    yifan123/flow_grpo@ac4c86e:flow_grpo/rewards.py:177-197 sends it and
    yifan123/reward-server@92ac29f:app_geneval.py:33 reads it. Components: ``score`` and ``strict_correct``
    (every clause with exact counts, their ``strict_rewards``).

    Args:
        detector, colours, device: as :class:`GenEvalReward`.
        jpeg: encode as theirs does; ``False`` scores the decoded image itself.
    """

    name = "geneval-score"

    def __init__(self, detector: Detector | str | None = None, colours: ColourClassifier | None = None, *,
                 device: str = "cpu", jpeg: bool = True) -> None:  # fmt: skip
        super().__init__(detector, colours, device=device)
        self._settings["jpeg"] = self.jpeg = jpeg

    def prepare(self, image: Any) -> Any:
        if not self.jpeg:
            return image
        from io import BytesIO

        from PIL import Image

        buffer = BytesIO()
        to_pil(image).save(buffer, format="JPEG")
        return Image.open(BytesIO(buffer.getvalue()), formats=["jpeg"])

    def verdict(self, image: Any, objects: Mapping[str, list[Detection]], row: Mapping[str, Any]) -> RewardResult:
        strict, score, reason = partial_credit(image, objects, row, self.colours)
        return RewardResult(score, {"score": score, "strict_correct": float(strict)}, reason or None)
