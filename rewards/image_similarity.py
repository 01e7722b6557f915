"""Image similarity: pixel, SSIM, Canny edges, CLIP and DINOv2 embeddings, and a reward that
renders model-written code (SVG, matplotlib) and compares it with the reference image.

Every metric maps two images to [0, 1] (1 = identical) so they can be weighted together, as the
chart/SVG-to-code RL papers do with their own choices (RLRF, arXiv 2505.20793: pixel L2 +
DreamSim/DINO; MSRL, arXiv 2508.13587, judges visual similarity with a VLM evaluator instead). The
SSIM and edge metrics here are this project's cheap, model-free choice (SSIM: Wang et al., 2004),
not a published chart-RL reward. Images are ``PIL.Image`` or ``HxWx3`` uint8 arrays; the second is
resized to the first's size.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rewards.base import RewardResult, check_lengths, require, target_of, text_of
from rewards.parsing import strip_code_fence

if TYPE_CHECKING:
    from rewards.rendering import RenderPool

logger = logging.getLogger(__name__)
ImageLike = Any  # PIL.Image.Image | np.ndarray


def to_array(image: ImageLike, size: tuple[int, int] | None = None) -> np.ndarray:
    """``HxWx3`` uint8 RGB (transparent pixels over white), resized to ``size`` = (w, h) when given.
    A string may be a path or a ``data:image/...;base64,`` URI (how loaders keep targets JSON)."""
    import base64
    import io

    from PIL import Image

    if isinstance(image, str) and image.startswith("data:image/"):
        image = io.BytesIO(base64.b64decode(image.partition(",")[2]))
    if isinstance(image, (str, bytes, io.BytesIO)) or hasattr(image, "__fspath__"):
        image = Image.open(image)
    if isinstance(image, np.ndarray):
        image = Image.fromarray(image.astype(np.uint8))
    if image.mode in ("RGBA", "LA", "P"):
        rgba = image.convert("RGBA")
        image = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
    image = image.convert("RGB")
    if size is not None and image.size != tuple(size):
        image = image.resize(size, Image.Resampling.BILINEAR)
    return np.asarray(image, dtype=np.uint8)


def _pair(a: ImageLike, b: ImageLike) -> tuple[np.ndarray, np.ndarray]:
    x = to_array(a)
    return x, to_array(b, (x.shape[1], x.shape[0]))


def pixel_similarity(a: ImageLike, b: ImageLike) -> float:
    """``1 - RMSE / 255`` over RGB pixels (1 for identical images, 0 for black vs white)."""
    x, y = _pair(a, b)
    return float(1.0 - np.sqrt(np.mean((x.astype(np.float64) - y) ** 2)) / 255.0)


def ssim(a: ImageLike, b: ImageLike) -> float:
    """Mean SSIM on the luminance channel (Wang et al., IEEE TIP 2004): 11x11 Gaussian window,
    sigma 1.5, K1 = 0.01, K2 = 0.03, L = 255, population covariances; the mean runs over the
    pixels whose window fits inside the image, as scikit-image's ``structural_similarity(...,
    gaussian_weights=True, use_sample_covariance=False)`` does. Clipped to [0, 1]."""
    import cv2

    x, y = _pair(a, b)
    gx = cv2.cvtColor(x, cv2.COLOR_RGB2GRAY).astype(np.float64)
    gy = cv2.cvtColor(y, cv2.COLOR_RGB2GRAY).astype(np.float64)
    blur = lambda img: cv2.GaussianBlur(img, (11, 11), 1.5, borderType=cv2.BORDER_REFLECT)
    mx, my = blur(gx), blur(gy)
    vx, vy, cxy = blur(gx * gx) - mx * mx, blur(gy * gy) - my * my, blur(gx * gy) - mx * my
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    smap = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx**2 + my**2 + c1) * (vx + vy + c2))
    pad = 5  # (win_size - 1) // 2 with win_size = 11, skimage's crop
    inner = smap[pad:-pad, pad:-pad] if min(smap.shape) > 2 * pad else smap
    return float(np.clip(inner.mean(), 0.0, 1.0))


def edge_similarity(a: ImageLike, b: ImageLike, low: int = 100, high: int = 200, tolerance: int = 1) -> float:
    """F1 of Canny edge pixels, an edge counting as matched within ``tolerance`` pixels.

    Layout matters more than colour for chart/SVG code; edges ignore fills and palettes.
    Two edge-free images score 1.0; one edge-free image against one with edges scores 0.0.
    """
    import cv2

    x, y = _pair(a, b)
    ex = cv2.Canny(cv2.cvtColor(x, cv2.COLOR_RGB2GRAY), low, high) > 0
    ey = cv2.Canny(cv2.cvtColor(y, cv2.COLOR_RGB2GRAY), low, high) > 0
    if not ex.any() and not ey.any():
        return 1.0
    if not ex.any() or not ey.any():
        return 0.0
    kernel = np.ones((2 * tolerance + 1, 2 * tolerance + 1), np.uint8)
    near_x = cv2.dilate(ex.astype(np.uint8), kernel) > 0
    near_y = cv2.dilate(ey.astype(np.uint8), kernel) > 0
    precision = (ey & near_x).sum() / ey.sum()
    recall = (ex & near_y).sum() / ex.sum()
    return float(0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall))


def foreground_iou(a: ImageLike, b: ImageLike, tolerance: int = 48) -> float:
    """IoU of the drawn pixels of two pictures on a white ground (the zoo's own metric).

    A pixel is drawn when some channel lies more than ``tolerance`` below 255; a pixel of the
    intersection counts only when the two colours also agree within ``tolerance`` in every
    channel. A blank canvas scores 0 against any drawing (1 against a blank one). Correlation,
    pixel and SSIM scores rate a blank canvas above a shape drawn in the wrong place, so a policy
    learns to draw nothing (``svg-scenes-tiny``'s first GRPO run did); this one pays only for overlap.
    """
    x, y = (v.astype(np.int16) for v in _pair(a, b))
    drawn_x, drawn_y = (x < 255 - tolerance).any(-1), (y < 255 - tolerance).any(-1)
    union = int((drawn_x | drawn_y).sum())
    if union == 0:
        return 1.0
    same = (np.abs(x - y) <= tolerance).all(-1)
    return float((drawn_x & drawn_y & same).sum() / union)


METRICS: dict[str, Callable[[ImageLike, ImageLike], float]] = {
    "pixel": pixel_similarity, "ssim": ssim, "edges": edge_similarity, "foreground-iou": foreground_iou,
}


class RenderedImageSimilarity:
    """Reward: render the predicted code, compare the image with ``target["image"]``.

    Args:
        kind: ``"svg"`` or ``"matplotlib"`` (see :func:`rewards.render`); ``None`` when the
            predictions are images already (``prediction.extra["image"]`` or the image itself).
        metric: a name of :data:`METRICS` or a callable ``(rendered, reference) -> [0, 1]``,
            e.g. a :class:`rewards.embedding_similarity.ClipSimilarity` instance.
        size, timeout: render settings; the reference is resized to ``size`` for comparison.

        pool: the :class:`rewards.rendering.RenderPool` to render on (default: the shared pool).

    Code that raises, draws nothing, is refused by the sandbox, runs past its time, exits or
    crashes scores 0 with the reason: the job did it (:mod:`rewards.base`, reward integrity).
    Only an infrastructure failure (a lost worker) gives ``score=None``, masked. Components
    ``render_failed`` and ``render_infra`` (0/1 per sample) make both rates visible in the logs.
    """

    def __init__(self, kind: str | None, metric: str | Callable = "ssim", size: tuple[int, int] = (256, 256),
                 timeout: float = 10.0, name: str | None = None, pool: RenderPool | None = None) -> None:
        if isinstance(metric, str) and metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose one of {sorted(METRICS)} or pass a callable")
        self.kind, self.metric, self.size, self.timeout, self.pool = kind, metric, tuple(size), timeout, pool
        label = metric if isinstance(metric, str) else getattr(metric, "name", type(metric).__name__)
        self.name = name or f"{kind or 'image'}-{label}"

    def with_options(self, **kwargs: Any) -> RenderedImageSimilarity:
        """A copy with some settings changed (a recipe's ``kwargs``: ``size``, ``timeout``, ``kind``)."""
        settings = {"kind": self.kind, "metric": self.metric, "size": self.size, "timeout": self.timeout,
                    "name": self.name, "pool": self.pool, **kwargs}
        return type(self)(**settings)

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        images = self._images(predictions)
        metric = METRICS[self.metric] if isinstance(self.metric, str) else self.metric
        results = []
        for (image, failure), sample in zip(images, samples, strict=True):
            if image is None:
                results.append(failure)
                continue
            reference = require(target_of(sample), "image", self.name)
            value = float(metric(image, to_array(reference, self.size)))
            rendered = {"render_failed": 0.0, "render_infra": 0.0} if self.kind else {}
            results.append(RewardResult(value, {"similarity": value, "rendered": 1.0, **rendered}))
        return results

    def _images(self, predictions: Sequence[Any]) -> list[tuple[Any, RewardResult | None]]:
        if self.kind is None:
            return [self._given_image(p) for p in predictions]
        from rewards.rendering import pool_for

        sources = [getattr(p, "code", None) or strip_code_fence(text_of(p)) for p in predictions]
        pool = self.pool or pool_for(self.kind)  # the shared pool of this kind (svg-skia has its own)
        out = []
        for r in pool.render_many(self.kind, sources, size=self.size, timeout=self.timeout):
            if r.ok:
                out.append((r.image, None))
                continue
            components = {"similarity": 0.0, "rendered": 0.0, "render_failed": float(not r.infra_failure),
                          "render_infra": float(r.infra_failure)}
            out.append((None, RewardResult(None if r.infra_failure else 0.0, components, f"{r.status}: {r.error}")))
        return out

    @staticmethod
    def _given_image(prediction: Any) -> tuple[Any, RewardResult | None]:
        if hasattr(prediction, "size") or isinstance(prediction, np.ndarray):
            return prediction, None
        image = (getattr(prediction, "extra", None) or {}).get("image")
        if image is None:
            return None, RewardResult(0.0, {"similarity": 0.0, "rendered": 0.0}, "the prediction carries no image")
        return image, None
