"""RLRF's SVG reward (Rendering-Aware RL for Vector Graphics, arXiv 2505.20793), as the zoo reads it.

The paper's code is unreleased. Terms follow the paper's description and the third-party
reimplementation darknoon/prefix-rl ``env/svg/svg_rlrf_reward.py``; everything marked "zoo" is this project's choice:

* image term: both renders z-normalised per image (a constant image becomes all zeros), then
  ``L2 = ||x - y|| / sqrt(numel)``; for z-normalised images ``L2**2 = 2 - 2*corr``, so ``L2`` is in
  [0, 2] and the zoo maps it to ``r_img = 1 - L2 / 2`` in [0, 1];
* edge term: the same on Canny edge maps (OpenCV Canny 100/200, 3x3 dilation, 13-px Gaussian blur:
  the reimplementation's dilation and blur, the paper's Canny);
* perceptual term: the paper uses DreamSim; offline, the zoo uses a DINOv2 tiled similarity
  (:class:`rewards.code_render.DinoEncoder`), or leaves the term out (``encoder=None``);
* length term: ``r_len = 1 - ((1/L_gt) * max(0, L_pred - L_gt/2))**2`` in characters, clipped
  to [-1, 1] (zoo: the clip keeps one very long answer from dominating the group);
* weights (zoo): image 0.4, edge 0.2, perceptual 0.3, length 0.1, summing to 1.

A failed render scores ``FAILURE = -1``, strictly below any rendered answer (the lowest rendered
score is ``0.1 * -1 = -0.1``), so a blank canvas always beats broken code; StarVector's own
rasteriser returns a white image on failure, which would make broken code as good as blank.
A render the job itself broke (past its time limit, crashed, over a limit) is the answer's failure
too, by the sandbox's rule (:mod:`rewards.base`): a well-formed SVG renders in milliseconds, so a
timeout says the document is pathological (huge radii, deep nesting). Only failures outside the
job (a lost worker, a pool that cannot start) are ``None`` (masked).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rewards.base import RewardResult, check_lengths, require, target_of, text_of
from rewards.code_render import DinoEncoder, extract_code, reference_image

FAILURE = -1.0
WEIGHTS = {"image": 0.4, "edge": 0.2, "perceptual": 0.3, "length": 0.1}


def znorm_l2(a: np.ndarray, b: np.ndarray) -> float:
    """``||z(a) - z(b)|| / sqrt(numel)`` with ``z`` = per-image standardisation (0 for a constant image)."""
    def z(x: np.ndarray) -> np.ndarray:
        x = x.astype(np.float64)
        std = x.std()
        return np.zeros_like(x) if std < 1e-12 else (x - x.mean()) / std

    return float(np.linalg.norm(z(a) - z(b)) / math.sqrt(a.size))


def edge_map(image: np.ndarray) -> np.ndarray:
    """Canny edges of an RGB uint8 image, dilated 3x3 and blurred with a 13-px Gaussian, in [0, 1]."""
    import cv2

    edges = cv2.Canny(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY), 100, 200)
    edges = cv2.dilate(edges, np.ones((3, 3), np.uint8))
    return cv2.GaussianBlur(edges.astype(np.float32) / 255.0, (13, 13), 0)


def length_reward(pred_len: int, ref_len: int) -> float:
    """``1 - ((1/L_gt) * max(0, L_pred - L_gt/2))**2``, clipped to [-1, 1]."""
    if ref_len <= 0:
        raise ValueError(f"reference length must be positive, got {ref_len}")
    value = 1.0 - (max(0.0, pred_len - ref_len / 2) / ref_len) ** 2
    return float(min(1.0, max(-1.0, value)))


class RlrfSvgReward:
    """RLRF-style SVG reward (see the module docstring for every term and who chose it).

    Target: ``image`` (reference picture) and ``code`` (reference SVG, for the length term).
    Components: ``image``, ``edge``, ``perceptual`` (NaN when disabled), ``length``, ``rendered``.
    """

    component_names = ("image", "edge", "perceptual", "length", "rendered")

    def __init__(self, kind: str = "svg", encoder: DinoEncoder | Mapping | None = None,
                 weights: Mapping[str, float] | None = None, size: tuple[int, int] = (224, 224),
                 timeout: float = 10.0, name: str = "rlrf-svg") -> None:
        self.kind, self.size, self.timeout, self.name = kind, tuple(size), timeout, name
        self.encoder = encoder if isinstance(encoder, DinoEncoder) or encoder is None else DinoEncoder(**encoder)
        self.weights = {**WEIGHTS, **(weights or {})}
        if self.encoder is None:
            self.weights["perceptual"] = 0.0
        unknown = set(self.weights) - set(WEIGHTS)
        if unknown:
            raise ValueError(f"unknown RLRF weight names {sorted(unknown)}; use {sorted(WEIGHTS)}")

    def with_options(self, **kwargs: Any) -> RlrfSvgReward:
        settings = {"kind": self.kind, "encoder": self.encoder, "weights": self.weights, "size": self.size,
                    "timeout": self.timeout, "name": self.name, **kwargs}
        return type(self)(**settings)

    def score_images(self, rendered: np.ndarray, reference: np.ndarray, pred_len: int, ref_len: int) -> RewardResult:
        """The reward of one rendered answer (both ``HxWx3`` uint8 of the same size)."""
        from PIL import Image

        parts = {
            "image": 1.0 - znorm_l2(rendered, reference) / 2.0,
            "edge": 1.0 - znorm_l2(edge_map(rendered), edge_map(reference)) / 2.0,
            "perceptual": math.nan,
            "length": length_reward(pred_len, ref_len),
        }
        if self.encoder is not None:
            parts["perceptual"] = self.encoder.similarity(Image.fromarray(rendered), Image.fromarray(reference))
        score = sum(w * parts[k] for k, w in self.weights.items() if w)
        return RewardResult(float(score), {**parts, "rendered": 1.0})

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        from rewards.image_similarity import to_array
        from rewards.rendering import render_many

        check_lengths(predictions, samples, self.name)
        targets = [target_of(s) for s in samples]
        references = [to_array(reference_image(require(t, "image", self.name)), self.size) for t in targets]
        ref_lens = [len(require(t, "code", self.name)) for t in targets]
        codes = [getattr(p, "code", None) or extract_code(text_of(p), self.kind) for p in predictions]
        todo = [i for i, c in enumerate(codes) if c]
        rendered = dict(zip(todo, render_many(self.kind, [codes[i] for i in todo], size=self.size,
                                              timeout=self.timeout), strict=True))
        failed = dict.fromkeys(self.component_names, 0.0)
        out = []
        for i in range(len(predictions)):
            result = rendered.get(i)
            if result is None:
                out.append(RewardResult(FAILURE, failed, "no <svg> element in the answer"))
            elif result.infra_failure:
                out.append(RewardResult(None, dict.fromkeys(self.component_names, math.nan),
                                        f"{result.status}: {result.error}"))
            elif not result.ok:
                out.append(RewardResult(FAILURE, failed, f"render failed: {result.error}"))
            else:
                out.append(self.score_images(to_array(result.image), references[i], len(codes[i]), ref_lens[i]))
        return out
