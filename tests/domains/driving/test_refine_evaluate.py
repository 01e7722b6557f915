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



def test_refinement_writes_the_anchor_in_the_answer_s_own_format(monkeypatch):
    """A model answering in action tokens continues from the anchor written as tokens; one answering in
    triples, from triples."""
    import re

    from domains.driving.action_tokens import decode, encode

    stop = next(s for s in synthetic_driving(n=12, seed=EVAL_SEED) if s.meta["kind"] == "stop")
    crash = [[8.0 * (i + 1), 0.0, 0.0] for i in range(8)]  # 16 m/s into the stopped obstacle
    prefixes = []

    def continue_answer(pipe, image, question, prefix):  # a model that completes the plan with zeros
        prefixes.append(prefix)
        if prefix.startswith("<d"):
            return prefix + "<d0><c0>" * (8 - prefix.count("<d"))
        return prefix + ",".join(["(0,0,0)"] * (8 - prefix.count("(")))

    monkeypatch.setattr(evaluate, "continue_answer", continue_answer)
    for text in (encode(crash), format_waypoints(crash)):
        pipe = lambda image, question, text=text: Prediction.from_parsed(text, parse_waypoints(text))
        out = evaluate.plan(pipe, stop, refine=True)
        assert out["flagged"][0] and out["refined"], "driving on at 16 m/s into a stopped obstacle is flagged"
    first = min(len(p) for p in prefixes if p.startswith("<d"))
    tokens_prefix = next(p for p in prefixes if p.startswith("<d") and len(p) == first)
    assert re.fullmatch(r"(<d\d+><c-?\d+>)+", tokens_prefix)
    n = tokens_prefix.count("<d")
    kept = np.asarray(decode(tokens_prefix + "<d0><c0>" * (8 - n))[:n])
    assert np.abs(kept[: n - 1, :2] - np.asarray(crash)[: n - 1, :2]).max() < 0.1  # the safe poses, as tokens
    assert any(p.startswith("(") and p.endswith(",") for p in prefixes)
