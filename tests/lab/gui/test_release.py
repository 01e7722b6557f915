"""The release driver that builds ``checkpoints/gui-grounding-tiny`` from its recipes (``lab.gui.release``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_release_stages_run_end_to_end_small(tmp_path):
    """Every training stage of ``python -m lab.gui.release`` at toy scale (minutes, not the release run)."""
    common = ["--run-dir", str(tmp_path), "--eval-n", "8", "--final-eval-n", "8", "--seed", "0"]
    release = [sys.executable, "-m", "lab.gui.release"]
    subprocess.run([*release, "sft", "--sft-set", "training.steps=4", *common], check=True, cwd=ROOT)
    subprocess.run([*release, "grpo", "--set", "training.steps=2", "--set", "training.save_steps=1", *common],
                   check=True, cwd=ROOT)  # fmt: skip
    subprocess.run([*release, "sft-continue", *common], check=True, cwd=ROOT)
    for stage in ("sft", "grpo-s0", "sft-continue-s0"):
        record = json.loads((tmp_path / f"{stage}.json").read_text())
        assert 0.0 <= record["final_hit"] <= 1.0 and record["curve"] and record["train_minutes"] > 0
    grpo = json.loads((tmp_path / "grpo-s0.json").read_text())
    assert [p["step"] for p in grpo["curve"]] == [1, 2]
