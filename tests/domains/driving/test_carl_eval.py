"""Driving outcomes over seeded episodes: rates, intervals and route completion from scripted episodes."""

from __future__ import annotations

import numpy as np
import pytest

from domains.driving.carl_eval import drive, mean_interval


class Episodes:
    """Episode ``seed`` lasts two steps and ends as ``script[seed]`` says: (route completion, termination)."""

    def __init__(self, script: dict[int, tuple[float, str | None]]) -> None:
        self.script, self.seed, self.t = script, 0, 0

    def reset(self, seed: int):
        self.seed, self.t = seed, 0
        return np.zeros(2), {}

    def step(self, action):
        self.t += 1
        rc, reason = self.script[self.seed]
        info = {"route_completion": rc * self.t / 2}
        done = self.t == 2
        if done and reason:
            info["termination"] = reason
        if done and not reason:
            info["is_success"] = rc == 100.0
        return np.zeros(2), 1.0, bool(done and reason), bool(done and not reason), info


def test_outcomes_count_each_termination_and_route_completion():
    script = {10: (100.0, None), 11: (40.0, "collision"), 12: (20.0, "off_road"), 13: (100.0, None)}
    resets = []
    out = drive(Episodes(script), lambda obs: np.zeros(2), episodes=4, seed=10, on_reset=lambda: resets.append(1))
    assert out.route_completion == (100.0, 40.0, 20.0, 100.0) and len(resets) == 4
    report = out.to_json()
    assert report["route_completion"] == pytest.approx(65.0)
    assert (report["collision_rate"], report["off_road_rate"], report["blocked_rate"]) == (0.25, 0.25, 0.0)
    assert report["success_rate"] == 0.5 and report["mean_return"] == 2.0
    assert report["terminations"] == {"none": 2, "collision": 1, "off_road": 1}
    low, high = report["collision_rate_ci95"]
    assert 0 < low < 0.25 < high < 1


def test_mean_interval_brackets_the_mean_and_collapses_for_constant_values():
    values = np.array([10.0, 20.0, 30.0, 40.0])
    low, high = mean_interval(values)
    assert 10.0 <= low < 25.0 < high <= 40.0
    assert mean_interval(np.full(5, 7.0)) == [7.0, 7.0]


def test_no_episodes_is_a_named_error():
    with pytest.raises(ValueError, match="episodes"):
        drive(Episodes({}), lambda obs: obs, episodes=0, seed=0)
