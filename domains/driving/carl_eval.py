"""Driving outcomes of a policy over seeded episodes: route completion, collisions, off-road, success.

Policies are compared on the *same* seeds (episode i resets with ``seed + i``), so traffic and
start are the same for each; the built-in driver (``driver="idm"``) runs the same episodes. Rates
carry a 95 % Wilson interval, mean route completion a 95 % percentile bootstrap interval over
episodes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from zoo.engines.policy.evaluate import run_episodes, wilson_interval


@dataclass(frozen=True)
class DrivingOutcomes:
    """Per-episode route completion (%), the hard constraint that ended it (``None``: none), success, return."""

    route_completion: tuple[float, ...]
    terminations: tuple[str | None, ...]
    successes: tuple[bool, ...]
    returns: tuple[float, ...]

    def rate(self, reason: str) -> float:
        return self.terminations.count(reason) / len(self.terminations)

    def to_json(self) -> dict[str, Any]:
        n = len(self.terminations)
        rc = np.asarray(self.route_completion)
        report: dict[str, Any] = {"episodes": n, "route_completion": float(rc.mean()),
                                  "route_completion_ci95": mean_interval(rc)}  # fmt: skip
        for reason in ("collision", "off_road", "blocked"):
            count = self.terminations.count(reason)
            report[f"{reason}_rate"] = count / n
            report[f"{reason}_rate_ci95"] = list(wilson_interval(count, n))
        report["success_rate"] = float(np.mean(self.successes))
        report["success_rate_ci95"] = list(wilson_interval(sum(self.successes), n))
        report["mean_return"] = float(np.mean(self.returns))
        report["terminations"] = dict(Counter(t or "none" for t in self.terminations))
        return report


def mean_interval(values: np.ndarray, draws: int = 10_000, seed: int = 0) -> list[float]:
    """95 % percentile bootstrap interval of the mean of ``values`` (resampling episodes)."""
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(draws, len(values)))].mean(1)
    return [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))]


def drive(env: Any, act: Callable[[np.ndarray], np.ndarray], episodes: int, seed: int,
          on_reset: Callable[[], None] | None = None) -> DrivingOutcomes:  # fmt: skip
    """Run ``episodes`` episodes of ``act`` in a CaRL environment (episode i seeded ``seed + i``)."""
    if episodes < 1:
        raise ValueError(f"episodes={episodes}: need at least one")
    rc, reasons, successes, returns = [], [], [], []
    for total, info in run_episodes(env, act, episodes, seed, on_reset):
        rc.append(float(info["route_completion"]))
        reasons.append(info.get("termination"))
        successes.append(bool(info.get("is_success", False)))
        returns.append(total)
    return DrivingOutcomes(tuple(rc), tuple(reasons), tuple(successes), tuple(returns))
