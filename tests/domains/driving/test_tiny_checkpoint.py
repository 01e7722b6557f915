"""The shipped ``checkpoints/driving-vla-tiny`` (the ladder that builds it and its card: ``tests/lab/driving/``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zoo.records import read_record

ROOT = Path(__file__).resolve().parents[3]
CHECKPOINT = ROOT / "checkpoints" / "driving-vla-tiny"


def test_checkpoint_is_small_safetensors_with_its_training_record():
    files = {p.name for p in CHECKPOINT.iterdir()}
    assert "model.safetensors" in files and not any(n.endswith((".bin", ".pt", ".pth")) for n in files)
    assert (CHECKPOINT / "model.safetensors").stat().st_size < 8e6
    record = read_record(CHECKPOINT / "training.json").to_dict()["measurements"]
    assert read_record(CHECKPOINT / "training.json").entry == "driving-vla-tiny"
    assert record["recipe_grpo"]["rewards"][0]["name"] == "driving-pdms"
    assert record["sft"]["curve"] and all(g["curve"] for g in record["grpo"])
    summary = record["summary"]
    assert summary["pdms_after_sft"] == record["sft"]["final_pdms"]
    assert len(summary["pdms_after_grpo"]) >= 2  # several seeds
    # the control spent (at most a logging interval more than) each GRPO seed's CPU minutes
    for grpo, control in zip(record["grpo"], record["sft_continue_equal_time"], strict=True):
        assert control["seed"] == grpo["seed"]
        assert control["train_minutes"] == pytest.approx(grpo["train_minutes"], rel=0.25)
    metrics = json.loads((CHECKPOINT / "eval" / "metrics.json").read_text())
    assert metrics["overall"]["pdms"] == pytest.approx(record["released_eval"]["pdms"])
    assert (CHECKPOINT / "eval" / "trajectories.png").stat().st_size > 1000


def test_checkpoint_loads_by_name_and_plans_the_example_scene():
    import zoo
    from domains.driving.action_tokens import writes_tokens
    from domains.driving.data import EVAL_SEED, synthetic_driving

    pipe = zoo.load("driving-vla-tiny")
    assert pipe.source == "checkpoints" and pipe.entry.name == "driving-vla-tiny"
    example = json.loads((ROOT / "examples" / "driving-scene.json").read_text())
    [scene] = synthetic_driving(n=1, seed=EVAL_SEED)
    assert example["question"] == scene.question and example["logged"] == scene.target["waypoints"]
    assert example["planner"] == scene.target["reference"]
    pred = pipe(str(ROOT / "examples" / "driving-scene.png"), example["question"])
    assert pred.text  # the answer parses or says why not, never raises
    assert writes_tokens(pred.text), "the shipped model writes the action tokens its card and recipes describe"
    assert "driving-action-tokens" in json.dumps(read_record(CHECKPOINT / "training.json").to_dict()["measurements"]["recipe_sft"])
    assert (pred.trajectory is None) == (pred.parse_error is not None)
    if pred.trajectory is not None:
        assert len(pred.trajectory) == 8 and all(len(p) == 3 for p in pred.trajectory)
