"""The release driver that builds ``checkpoints/driving-vla-tiny`` from its recipes (``lab.driving.release``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from zoo.records import read_record

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_release_stages_run_end_to_end_small(tmp_path):
    """Every training stage of ``python -m lab.driving.release`` at toy scale (minutes, not the release run)."""
    common = ["--run-dir", str(tmp_path), "--eval-n", "4", "--final-eval-n", "2", "--sft-eval-n", "2", "--seed", "0"]
    release = [sys.executable, "-m", "lab.driving.release"]
    subprocess.run([*release, "sft", "--sft-set", "training.steps=4", "--sft-set", "training.save_steps=2",
                    "--sft-set", "training.decay_steps=2", *common],
                   check=True, cwd=ROOT)  # fmt: skip
    subprocess.run([*release, "grpo", "--set", "training.steps=2", "--set", "training.save_steps=1",
                    "--set", "training.batch_size=16", "--set", "algorithm.max_completion_length=16", *common],
                   check=True, cwd=ROOT)  # fmt: skip
    subprocess.run([*release, "sft-continue", *common], check=True, cwd=ROOT)
    for stage in ("sft", "grpo-s0", "sft-continue-s0"):
        record = json.loads((tmp_path / f"{stage}.json").read_text())
        assert 0.0 <= record["final_pdms"] <= 1.0 and record["curve"] and record["train_minutes"] > 0
    grpo = json.loads((tmp_path / "grpo-s0.json").read_text())
    assert [p["step"] for p in grpo["curve"]] == [1, 2]
    checkpoint, card = tmp_path / "checkpoint", tmp_path / "card" / "README.md"
    subprocess.run([*release, "finalize", "--checkpoint", str(checkpoint), "--card", str(card), *common],
                   check=True, cwd=ROOT)  # fmt: skip
    record = read_record(checkpoint / "training.json").to_dict()["measurements"]
    assert record["standard_error"]["n"] == 2 and set(record["paired"]["grpo_minus_control"]) == {"seed0"}
    plans = record["plans_at_answer_precision"]
    # the planner is EP's reference (1 up to the answer's 0.1 m rounding); the logged drive holds its speed
    assert plans["planner"]["ep"] == pytest.approx(1.0, abs=1e-3) and plans["logged"]["ep"] < 0.99
    assert plans["logged"]["nc"] == 1.0
    assert "± is one standard error" in card.read_text()


def test_standard_errors_are_paired_over_the_same_scenes(tmp_path):
    """``finalize``'s standard errors: per arm over scenes, and of per-scene differences (paired)."""
    import numpy as np

    from lab.driving.release import DEFAULTS, scores_file, standard_errors
    from lab.ladder import ReleaseArgs, write_json

    args = ReleaseArgs(tmp_path, tmp_path / "ckpt", tmp_path / "card.md", eval_n=2, final_eval_n=4)
    arms = {"sft": [0.2, 0.4, 0.6, 0.8], "grpo-s0": [0.3, 0.5, 0.7, 0.9], "sft-continue-s0": [0.8, 0.6, 0.4, 0.2]}
    for run, values in arms.items():
        write_json(scores_file(tmp_path / run / "final", 4), {"ids": list("abcd"), "pdms": values})
    errors, paired, _ = standard_errors(args, [0])
    assert errors["sft"] == pytest.approx(np.std(arms["sft"], ddof=1) / 2)
    assert paired["grpo_minus_sft"]["seed0"] == pytest.approx({"diff": 0.1, "se": 0.0})  # a constant shift: no spread
    diff = np.subtract(arms["grpo-s0"], arms["sft-continue-s0"])
    assert paired["grpo_minus_control"]["seed0"]["se"] == pytest.approx(np.std(diff, ddof=1) / 2)
    assert DEFAULTS.final_eval_n >= 100


def test_seed_mean_differences_average_the_seeds_scene_by_scene(tmp_path):
    """Two GRPO seeds that gain on different scenes: each seed's shift is uneven, their scene-wise mean is
    a constant +0.1, so the seed-averaged difference has no spread over scenes (one seed's control)."""
    from lab.driving.release import seed_mean_differences

    sft = [0.2, 0.4, 0.6, 0.8]
    grpo = {0: [0.4, 0.5, 0.6, 0.9], 1: [0.2, 0.5, 0.8, 0.9]}
    out = seed_mean_differences(sft, grpo, {0: [0.2, 0.4, 0.6, 0.8]})
    assert out["grpo_minus_sft"] == pytest.approx({"diff": 0.1, "se": 0.0, "seeds": 2})
    assert out["control_minus_sft"] == pytest.approx({"diff": 0.0, "se": 0.0, "seeds": 1})
    # against the control only the seed that has one counts: seed 0's uneven gain
    assert out["grpo_minus_control"]["diff"] == pytest.approx(0.1) and out["grpo_minus_control"]["se"] > 0
