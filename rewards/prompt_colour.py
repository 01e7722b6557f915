"""Does the object have the colour the prompt names? A prompt-conditioned image reward with no model.

Unlike brightness or colourfulness, which any prompt-blind change can raise, this reward rises only
when the image follows its own prompt: "a green circle" scores the share of the object's pixels
that are green. It is the colour half of a GenEval-style check ("is the object present, is it the
named colour"), written for the synthetic coloured-shape images the tiny diffusion models learn.

Per image, with a dark background (max channel < 0.2) and the named palette colour ``c``:

* object weight of a pixel ``w = clip((max(rgb) - 0.2) / 0.2, 0, 1)`` (soft, so the score is smooth);
* colour posterior ``p_c = softmax_k(-||rgb - palette_k||^2 / tau)[c]`` over the palette, ``tau = 0.02``;
* ``colour_match = sum(w p_c) / sum(w)``; ``presence = min(1, sum(w) / (0.05 H W))`` (an object of at
  least 5 % of the image counts fully; an empty canvas scores near 0);
* score ``= presence * colour_match`` in [0, 1].

What it does not check: shape and size. A canvas flooded with the named colour scores as high as a
correct shape; ``foreground_fraction`` is reported so that such drift shows. The palette, the
thresholds and the score are this project's own choice (no paper defines them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rewards.base import RewardResult, check_lengths
from rewards.image_stats import as_rgb_array

PALETTE: Mapping[str, tuple[float, float, float]] = {
    "red": (0.9, 0.1, 0.1), "green": (0.1, 0.8, 0.2), "blue": (0.15, 0.25, 0.9), "yellow": (0.9, 0.85, 0.1),
    "magenta": (0.85, 0.1, 0.8), "cyan": (0.1, 0.8, 0.85), "orange": (0.95, 0.5, 0.05), "grey": (0.5, 0.5, 0.5),
}  # fmt: skip
_BACKGROUND_MAX, _RAMP, _TAU, _MIN_AREA = 0.2, 0.2, 0.02, 0.05


def named_colour(prompt: str) -> str | None:
    """The first palette colour word in ``prompt`` (lower-cased, split on spaces), or ``None``."""
    return next((w for w in prompt.lower().replace(",", " ").split() if w in PALETTE), None)


class PromptColour:
    """The prompt's colour on the object's pixels (see the module docstring); ``samples[i].target["prompt"]``."""

    name = "prompt-colour"

    def __init__(self) -> None:
        self.palette = np.asarray(list(PALETTE.values()), dtype=np.float64)  # (K, 3)
        self.names = list(PALETTE)

    def score_image(self, rgb: np.ndarray, colour: str) -> RewardResult:
        weight = np.clip((rgb.max(axis=-1) - _BACKGROUND_MAX) / _RAMP, 0.0, 1.0)  # (H, W)
        logits = -((rgb[..., None, :] - self.palette) ** 2).sum(-1) / _TAU  # (H, W, K)
        logits -= logits.max(axis=-1, keepdims=True)
        posterior = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
        mass = float(weight.sum())
        match = float((weight * posterior[..., self.names.index(colour)]).sum() / mass) if mass > 0 else 0.0
        presence = min(1.0, mass / (_MIN_AREA * weight.size))
        return RewardResult(presence * match, {"colour_match": match, "presence": presence,
                                               "foreground_fraction": mass / weight.size})  # fmt: skip

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        results = []
        for image, sample in zip(predictions, samples, strict=True):
            prompt = str((getattr(sample, "target", None) or {}).get("prompt", ""))
            colour = named_colour(prompt)
            if colour is None:
                results.append(RewardResult(None, error=f"{self.name}: the prompt {prompt!r} names none of "
                                                        f"{', '.join(PALETTE)}"))  # fmt: skip
                continue
            try:
                results.append(self.score_image(as_rgb_array(image), colour))
            except (TypeError, ValueError) as err:
                results.append(RewardResult(0.0, error=f"{self.name}: {err}"))
        return results

    def __repr__(self) -> str:
        return "PromptColour()"
