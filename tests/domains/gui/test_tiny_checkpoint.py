"""The shipped ``checkpoints/gui-grounding-tiny`` (the ladder that builds it: ``tests/lab/gui/test_release.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from zoo.records import read_record

ROOT = Path(__file__).resolve().parents[3]
CHECKPOINT = ROOT / "checkpoints" / "gui-grounding-tiny"


def test_checkpoint_is_small_safetensors_with_its_training_record():
    files = {p.name for p in CHECKPOINT.iterdir()}
    assert "model.safetensors" in files and not any(n.endswith((".bin", ".pt", ".pth")) for n in files)
    assert (CHECKPOINT / "model.safetensors").stat().st_size < 8e6
    record = read_record(CHECKPOINT / "training.json").to_dict()["measurements"]
    assert read_record(CHECKPOINT / "training.json").entry == "gui-grounding-tiny"
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
