"""Success rate of a policy over seeded episodes, with a Wilson confidence interval.

Base and trained policy are compared on the *same* seeds (episode i resets with ``seed + i``), so
the difference is the policy's, not the draw of starts. Success is ``info["is_success"]`` at the
end of the episode.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np


@dataclass(frozen=True)
class SuccessRate:
    """Outcome of :func:`success_rate`: per-episode successes, the rate and its 95 % Wilson interval."""

    successes: tuple[bool, ...]
    returns: tuple[float, ...]

    @property
    def rate(self) -> float:
        return float(np.mean(self.successes))

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(sum(self.successes), len(self.successes))

    def to_json(self) -> dict[str, Any]:
        low, high = self.interval
        return {"episodes": len(self.successes), "success_rate": self.rate, "ci95": [low, high],
                "mean_return": float(np.mean(self.returns))}  # fmt: skip


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (good at small n and near 0 or 1)."""
    if n < 1:
        raise ValueError("a success rate needs at least one episode")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def run_episodes(env: Any, act: Callable[[np.ndarray], np.ndarray], episodes: int, seed: int,
                 on_reset: Callable[[], None] | None = None) -> Iterator[tuple[float, dict[str, Any]]]:  # fmt: skip
    """Play ``episodes`` episodes of ``act`` in ``env`` (episode i seeded ``seed + i``, ``on_reset`` after
    each reset, e.g. to clear a chunked policy's queue); yields each episode's return and last ``info``."""
    for i in range(episodes):
        obs, _ = env.reset(seed=seed + i)
        if on_reset is not None:
            on_reset()
        done, total, info = False, 0.0, {}
        while not done:
            obs, reward, terminated, truncated, info = env.step(act(obs))
            total += float(reward)
            done = terminated or truncated
        yield total, info


def success_rate(env: Any, act: Callable[[np.ndarray], np.ndarray], episodes: int, seed: int,
                 on_reset: Callable[[], None] | None = None) -> SuccessRate:  # fmt: skip
    """Run ``episodes`` episodes of ``act`` in ``env`` (episode i seeded ``seed + i``)."""
    played = list(run_episodes(env, act, episodes, seed, on_reset))
    return SuccessRate(tuple(bool(info.get("is_success", False)) for _, info in played), tuple(r for r, _ in played))
