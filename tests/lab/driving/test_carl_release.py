"""``lab.driving.carl_release``: a finished CaRL run shipped as ``checkpoints/carl-highway-tiny``."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("highway_env", reason="the driving RL parts need the `driving` extra: pip install -e '.[driving]'")

import zoo
from tests.domains.driving.test_carl_ppo import carl_run  # noqa: F401  (the smoke run, a module-scoped fixture)
from zoo.cards import CARDS_DIR
from zoo.hub import CHECKPOINTS_DIR
from zoo.records import read_record


def test_release_ships_the_policy_with_its_record(carl_run, tmp_path):  # noqa: F811  (the imported fixture)
    from lab.driving.carl_release import release

    with pytest.raises(FileNotFoundError, match="bench/driving_carl.py"):
        release(carl_run, tmp_path / "ship")
    shipped = read_record(CHECKPOINTS_DIR / "carl-highway-tiny" / "training.json").to_dict()["measurements"]
    evaluation = shipped["evaluation"]  # bench/driving_carl.py's report in full, with this run's numbers:
    report = {**evaluation, "training": {**shipped["training"], "cpu_minutes": 0.1, "iterations": 2},
              "untrained": {**evaluation["untrained"], "route_completion": 50.0},
              "trained": {**evaluation["trained"], "route_completion": 62.5}}  # fmt: skip
    (carl_run / "driving_carl.json").write_text(json.dumps(report))
    committed = (CARDS_DIR / "carl-highway-tiny" / "README.md").read_text()
    target = release(carl_run, tmp_path / "ship")
    record = read_record(target / "training.json")
    measured = record.to_dict()["measurements"]  # the report's numbers, as the release wrote them
    assert measured["training"] == report["training"] and measured["evaluation"]["trained"] == report["trained"]
    assert "carl-ppo" in record.measurements.recipe and zoo.load(str(target)).config.architecture == "beta-mlp"
    assert [c.difference for c in record.comparisons] == [12.5]  # trained - untrained, read off the report
    assert "| CaRL Beta-PPO | `domains/driving/recipes/carl-highway.yaml` |" in (target / "README.md").read_text()
    assert (CARDS_DIR / "carl-highway-tiny" / "README.md").read_text() == committed  # a trial leaves the card alone
