"""Flow-GRPO's OCR reward: does the image show the text quoted in the prompt?

As ``flow_grpo/ocr.py: OcrScorer`` (yifan123/flow_grpo, commit ac4c86e): the target is the text between
the prompt's first pair of double quotes; spaces are removed and both texts lower-cased; the distance is
0 when the target is a substring of the recognised text, else their Levenshtein distance, capped at the
target's length::

    reward = 1 - min(dist, len(target)) / len(target)

An OCR engine that raises scores 0 (their maximum penalty). Their engine is PaddleOCR
(``use_angle_cls=False, lang="en"``), keeping lines of positive confidence, concatenated; any
``image -> text`` callable can stand in (tests use a fake one). A prompt without a quoted, non-empty
target cannot be scored: ``None`` with the reason (their code raises on it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rewards.base import RewardResult, check_lengths, require, target_of
from rewards.image_stats import as_rgb_array
from rewards.text import levenshtein

logger = logging.getLogger(__name__)

OcrEngine = Callable[[np.ndarray], str]


def quoted_target(prompt: str) -> str | None:
    """The text between the first two double quotes of ``prompt``, or ``None`` when there is none."""
    parts = prompt.split('"')
    return parts[1] if len(parts) >= 3 else None


def ocr_score(recognised: str, target: str) -> float:
    """``1 - min(lev, len)/len`` on space-free lower-case texts; a substring match scores 1."""
    recognised, target = recognised.replace(" ", "").lower(), target.replace(" ", "").lower()
    if not target:
        raise ValueError("the OCR target is empty after removing spaces")
    dist = 0 if target in recognised else levenshtein(recognised, target)
    return 1 - min(dist, len(target)) / len(target)


def paddle_engine() -> OcrEngine:
    """PaddleOCR 2.x as Flow-GRPO configures it (their README pins paddleocr 2.9.1; 3.x changed the API)."""
    try:
        from paddleocr import PaddleOCR
    except ImportError as err:
        raise ImportError("the OCR reward reads text with PaddleOCR: pip install 'paddleocr==2.9.1' paddlepaddle "
                          "(or pass engine=<callable image -> text>)") from err  # fmt: skip
    ocr = PaddleOCR(use_angle_cls=False, lang="en", show_log=False)

    def read(image: np.ndarray) -> str:
        lines = ocr.ocr(image, cls=False)[0] or []
        return "".join(text for _, (text, confidence) in lines if confidence > 0)

    return read


class OcrReward:
    """Flow-GRPO's OCR reward. Predictions: images; ``sample.target["prompt"]`` holds the quoted text.

    Args:
        engine: ``image (H, W, 3) uint8 -> text``; ``None`` builds PaddleOCR on first use.
    """

    name = "ocr"

    def __init__(self, engine: OcrEngine | None = None) -> None:
        self.engine = engine

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        return [self._one(image, str(require(target_of(s), "prompt", self.name))) for image, s in zip(predictions, samples)]

    def _one(self, image: Any, prompt: str) -> RewardResult:
        target = quoted_target(prompt)
        if not target or not target.replace(" ", ""):
            return RewardResult(None, {"ocr_failed": 0.0}, f"no quoted text to render in the prompt {prompt!r}")
        try:
            pixels = (as_rgb_array(image) * 255).round().astype(np.uint8)
        except (TypeError, ValueError) as err:
            return RewardResult(0.0, {"ocr_failed": 1.0}, f"ocr: {err}")
        if self.engine is None:
            self.engine = paddle_engine()
        try:
            recognised = self.engine(pixels)
        except Exception as err:  # noqa: BLE001  (their rule: any OCR failure is the maximum penalty)
            logger.warning("OCR failed: %s", err)
            return RewardResult(0.0, {"ocr_failed": 1.0}, f"ocr engine failed: {err}")
        return RewardResult(ocr_score(recognised, target), {"ocr_failed": 0.0})

    def __repr__(self) -> str:
        return f"OcrReward(engine={getattr(self.engine, '__name__', self.engine)!r})"
