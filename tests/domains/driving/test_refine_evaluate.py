"""ReflectDrive-style refinement (the zoo's reading of its README) and ``zoo eval`` on synthetic scenes."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np

from domains.driving import evaluate
from domains.driving.data import EVAL_SEED, synthetic_driving
from domains.driving.metrics import straight_waypoints
from domains.driving.prompts import format_waypoints, parse_waypoints
from domains.driving.refine import refine, safe_anchor, unsafe_waypoints
from domains.driving.scene import Agent, Lane, Scene
from zoo.outputs import Prediction

ROUTE = np.array([[-30.0, 0.0], [150.0, 0.0]])
SCENE = Scene((Lane("ego", ROUTE), Lane("left", ROUTE + [0, 3.5])), (Agent("car", 26.0, 0.0, 0.0),), (), 10.0, ROUTE)


def test_oracle_flags_the_waypoints_inside_the_stopped_car():
    flagged = unsafe_waypoints(SCENE, straight_waypoints(10.0))
    assert flagged and flagged[0] == 3  # 20 m at 2 s: the ego's front (24.05 m) is inside the car (23.75-28.25)
    anchor = safe_anchor(SCENE, 3, straight_waypoints(10.0)[3])
    # one grid step back (0.5 m) clears the car's rear: slowing down wins over swerving at equal distance
    assert anchor == [19.5, 0.0, 0.0]


def test_refine_regenerates_from_the_anchor_until_safe():
    calls = []

    def regenerate(prefix):  # a "model" that stops where the prefix ends
        calls.append(len(prefix))
        last = prefix[-1]
        return [*prefix, *[last] * (8 - len(prefix))]

    out = refine(SCENE, straight_waypoints(10.0).tolist(), regenerate)
    assert out.changed and calls[0] == 4
    assert unsafe_waypoints(SCENE, out.waypoints) == []
    assert out.waypoints[:3] == straight_waypoints(10.0)[:3].tolist()  # safe prefix kept


def test_refine_leaves_a_safe_trajectory_alone():
    out = refine(SCENE, straight_waypoints(4.0).tolist(), lambda prefix: None)
    assert not out.changed and out.flagged == [[]]


class LoggedDrivePipe:
    """Answers each scene with its logged drive (found by the question), or garbage."""

    entry = SimpleNamespace(name="logged-drive-stand-in")

    def __init__(self, samples, garbage_every=0):
        self.by_question = {s.question: format_waypoints(s.target["waypoints"]) for s in samples}
        self.garbage_every, self.calls = garbage_every, 0

    def __call__(self, image, question):
        self.calls += 1
        text = "??" if self.garbage_every and self.calls % self.garbage_every == 0 else self.by_question[question]
        return Prediction.from_parsed(text, parse_waypoints(text))


def test_zoo_eval_scores_writes_rows_and_draws_the_png(tmp_path):
    samples = synthetic_driving(n=4, seed=EVAL_SEED)
    metrics = evaluate.run(LoggedDrivePipe(samples, garbage_every=4), "synthetic-tiny", None, tmp_path, limit=4)
    overall = metrics["overall"]
    assert overall["n"] == 4 and overall["parse_failure_rate"] == 0.25
    rows = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert rows[3]["pdms"] == 0.0 and rows[3]["parse_error"]
    assert overall["pdms"] == np.mean([r["pdms"] for r in rows]) and overall["pdms"] > 0.5
    assert (tmp_path / "trajectories.png").stat().st_size > 1000
    assert json.loads((tmp_path / "metrics.json").read_text())["data"] == "synthetic-tiny"
