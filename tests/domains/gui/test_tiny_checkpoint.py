"""The shipped ``checkpoints/gui-grounding-tiny`` and the release driver that builds it from its recipes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CHECKPOINT = ROOT / "checkpoints" / "gui-grounding-tiny"


def test_checkpoint_is_small_safetensors_with_its_training_record():
    files = {p.name for p in CHECKPOINT.iterdir()}
    assert "model.safetensors" in files and not any(n.endswith((".bin", ".pt", ".pth")) for n in files)
    assert (CHECKPOINT / "model.safetensors").stat().st_size < 8e6
    record = json.loads((CHECKPOINT / "training.json").read_text())
    assert record["entry"] == "gui-grounding-tiny"
    assert record["recipe_grpo"]["algorithm"]["loss_type"] == "gui_g1"
    assert record["sft"]["curve"] and all(g["curve"] for g in record["grpo"])
    assert record["held_out"]["n_final"] >= 400
    summary = record["summary"]
    assert summary["hit_after_sft"] == record["sft"]["final_hit"]
    assert len(summary["hit_after_grpo"]) >= 2  # several seeds


def test_checkpoint_loads_by_name_and_predicts_in_original_pixels():
    import zoo
    from domains.gui.evaluate import click_point, point_in_box
    from domains.gui.synthetic import single_button_screen

    pipe = zoo.load("gui-grounding-tiny")
    assert pipe.source == "checkpoints" and pipe.entry.name == "gui-grounding-tiny"
    example = json.loads((ROOT / "examples" / "screen.json").read_text())
    pred = pipe(str(ROOT / "examples" / "screen.png"), example["instruction"])
    assert pred.extra["model_frame_size"] == [112, 112]
    assert pred.bbox is not None and max(pred.bbox) > 112  # mapped back to the 448-px screenshot
    assert point_in_box(click_point(pred), example["bbox"])
    screen = single_button_screen(example["seed"], size=448)
    assert list(screen.elements[0].bbox) == example["bbox"]


@pytest.mark.slow
def test_release_stages_run_end_to_end_small(tmp_path):
    """Every training stage of ``python -m domains.gui.release`` at toy scale (minutes, not the release run)."""
    common = ["--run-dir", str(tmp_path), "--eval-n", "8", "--final-eval-n", "8", "--seed", "0"]
    release = [sys.executable, "-m", "domains.gui.release"]
    subprocess.run([*release, "sft", "--sft-set", "training.steps=4", *common], check=True, cwd=ROOT)
    subprocess.run([*release, "grpo", "--set", "training.steps=2", "--set", "training.save_steps=1", *common],
                   check=True, cwd=ROOT)  # fmt: skip
    subprocess.run([*release, "sft-continue", *common], check=True, cwd=ROOT)
    for stage in ("sft", "grpo-s0", "sft-continue-s0"):
        record = json.loads((tmp_path / f"{stage}.json").read_text())
        assert 0.0 <= record["final_hit"] <= 1.0 and record["curve"] and record["train_minutes"] > 0
    grpo = json.loads((tmp_path / "grpo-s0.json").read_text())
    assert [p["step"] for p in grpo["curve"]] == [1, 2]
