"""Waypoint parser (malformed output is a parse failure with a reason) and the PDMS-style reward."""

from __future__ import annotations

import numpy as np
import pytest

import rewards
from domains.driving.data import synthetic_driving
from domains.driving.prompts import format_waypoints, parse_waypoints, waypoints_answer
from rewards.base import RewardSample


@pytest.fixture(scope="module")
def samples():
    return synthetic_driving(n=4, seed=11, size=56)


def test_answer_round_trips_through_the_parser(samples):
    for sample in samples:
        parsed = parse_waypoints(waypoints_answer(sample))
        assert np.allclose(parsed["trajectory"], sample.target["waypoints"], atol=0.051)
        assert parse_waypoints(f"<answer>{waypoints_answer(sample)}</answer>")["trajectory"] == parsed["trajectory"]


@pytest.mark.parametrize(("text", "reason"), [
    ("(1,0,0),(2,0,0)", "found 2"),
    ("<answer>(1,0,0)", "never closed"),
    (",".join(["(1e9,0,0)"] * 8), "out of range"),
    ("go straight", "found 0"),
])  # fmt: skip
def test_malformed_answers_say_why(text, reason):
    parsed = parse_waypoints(text)
    assert "trajectory" not in parsed and reason in parsed["parse_error"]


def test_reward_scores_the_logged_drive_high_and_garbage_zero_with_reason(samples):
    reward = rewards.get("driving-pdms")
    texts = [waypoints_answer(s) for s in samples] + ["no idea"]
    results = reward(texts, [RewardSample(s.target) for s in [*samples, samples[0]]])
    assert all(r.score > 0.8 for r in results[:-1])  # the logged drive (rounded): comfortable, safe, EP < 1
    assert results[-1].score == 0.0 and "found 0" in results[-1].error
    assert set(results[0].components) == set(results[-1].components)


def test_reward_punishes_a_collision_course(samples):
    def reachable(sample):  # the stopped lead's rear is within what 4 s at the current speed covers
        scene = sample.target["scene"]
        lead = scene["agents"][0]
        return lead["x"] - lead["length"] / 2 < 3.7 + 4 * scene["ego_speed"] - 2

    stop = next(s for s in synthetic_driving(n=80, seed=0, size=56) if s.meta["kind"] == "stop" and reachable(s))
    v = stop.target["scene"]["ego_speed"]
    keep_going = format_waypoints([(v * 0.5 * (i + 1), 0.0, 0.0) for i in range(8)])
    [result] = rewards.get("driving-epdms")([keep_going], [RewardSample(stop.target)])
    [logged] = rewards.get("driving-epdms")([waypoints_answer(stop)], [RewardSample(stop.target)])
    assert result.components["nc"] < 1.0 and result.score < 0.5 < logged.score


def test_reward_names_missing_target_fields():
    with pytest.raises(KeyError, match="scene"):
        rewards.get("driving-pdms")(["(1,0,0)"], [RewardSample({"answer": "A"})])


@pytest.mark.parametrize("text", ["", "   ", "<answer>", "}{][", "\x00\xff" * 20, "[1, 2, 3", "a" * 10_000, "🙂" * 50,
                                  "(nan,1,1)," * 8, "(1,2)" * 8])  # fmt: skip
def test_parser_reports_garbage_instead_of_raising(text):
    parsed = parse_waypoints(text)
    assert isinstance(parsed["parse_error"], str) and "trajectory" not in parsed
