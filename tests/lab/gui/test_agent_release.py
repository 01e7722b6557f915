"""The release driver of ``gui-agent-tiny``: equal-time matching and its stages end to end at toy scale."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lab.gui.agent_release import CONTROL_RECIPE, RL_RECIPE, SFT_RECIPE, first_episodes, matched_checkpoint
from zoo.records import read_record
from zoo.runs import mark_complete

ROOT = Path(__file__).resolve().parents[3]


def test_control_is_read_at_the_first_checkpoint_reaching_rl_time(tmp_path):
    (tmp_path / "metrics.csv").write_text("step,cpu_minutes\n5,0.4\n10,0.9\n15,1.3\n20,1.8\n")
    for step in (5, 10, 15, 20):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"x")
        mark_complete(folder, step)
    (tmp_path / "checkpoint-25").mkdir()  # incomplete: never chosen
    assert matched_checkpoint(tmp_path, 1.0).name == "checkpoint-15"
    assert matched_checkpoint(tmp_path, 0.9).name == "checkpoint-10"
    assert matched_checkpoint(tmp_path, 5.0).name == "final"  # the run never reached RL's time


def test_first_episodes_scores_a_prefix_of_the_evaluated_episodes():
    scores = {"step_hits": [[1, 0], [1, 1, 1], [0]]}
    assert first_episodes(scores, 2) == {"step_success": 0.8, "n_steps": 5, "n_episodes": 2,
                                         "step_hits": [[1, 0], [1, 1, 1]]}  # fmt: skip


def test_the_three_recipes_write_the_answer_in_one_format():
    """RL patches a wrong turn with the expert's and the control teaches the expert's turns: both must write
    them as the SFT start learnt to, location tokens and all, or the start reads a history it never saw."""
    from domains.gui import location_tokens
    from zoo.engines.reading import load_recipe
    from zoo.engines.vlm.policy_model import added_tokens

    sft, rl, control = (load_recipe(path) for path in (SFT_RECIPE, RL_RECIPE, CONTROL_RECIPE))
    assert sft.data.answer_format == control.data.answer_format == rl.multi_turn.expert_format
    tokens = sft.data.answer_format == "ui-s1-location-tokens"
    assert added_tokens(sft.model.added_tokens) == (list(location_tokens.TOKENS) if tokens else [])


def test_card_calls_rl_ahead_of_its_control_only_past_two_standard_errors():
    from lab.gui.agent_card import _over_seeds

    paired = {"rl_minus_control": {"seed0": {"diff": 0.03, "se": 0.01}, "seed1": {"diff": 0.02, "se": 0.008}}}
    shown = _over_seeds(paired, {"rl_minus_control": {"diff": 0.025, "se": 0.005, "seeds": 2}})
    assert "on 2 of 2 seeds" in shown and "RL − control +0.025 ± 0.005" in shown and "edge over more SFT is shown" in shown
    noisy = _over_seeds(paired, {"rl_minus_control": {"diff": 0.025, "se": 0.02, "seeds": 2}})
    assert "edge over more SFT is not shown" in noisy
    paired["rl_minus_control"]["seed1"] = {"diff": 0.01, "se": 0.008}
    assert "on 1 of 2 seeds" in _over_seeds(paired, {}) and "is not shown" in _over_seeds(paired, {})
    assert _over_seeds({"rl_minus_sft": {}}, {}) == ""


@pytest.mark.slow
def test_release_stages_run_end_to_end_small(tmp_path):
    """SFT, UI-S1 RL, the equal-time control and the report at toy scale (minutes, not the release run)."""
    common = ["--run-dir", str(tmp_path), "--eval-n", "2", "--final-eval-n", "2", "--sft-eval-n", "2", "--seed", "0"]
    release = [sys.executable, "-m", "lab.gui.agent_release"]
    subprocess.run([*release, "sft", "--sft-set", "training.steps=2", "--sft-set", "training.save_steps=1",
                    "--sft-set", "training.decay_steps=1", *common], check=True, cwd=ROOT)  # fmt: skip
    subprocess.run([*release, "rl", "--set", "training.steps=2", "--set", "training.save_steps=1",
                    "--set", "multi_turn.episodes_per_step=1", *common], check=True, cwd=ROOT)  # fmt: skip
    control_set = ["--control-set", "training.lr=0.0015"]
    subprocess.run([*release, "sft-continue", *control_set, *common], check=True, cwd=ROOT)
    subprocess.run([*release, "confirm", "--confirm-n", "2", *common], check=True, cwd=ROOT)
    confirm = json.loads((tmp_path / "confirm.json").read_text())
    assert confirm["episodes"] == 2 and set(confirm["step_success_paired"]) == {"rl_minus_sft", "control_minus_sft",
                                                                                "rl_minus_control"}  # fmt: skip
    rl = json.loads((tmp_path / "rl-s0.json").read_text())
    assert [p["step"] for p in rl["curve"]] == [1, 2] and rl["train_minutes"] > 0
    control = json.loads((tmp_path / "sft-continue-s0.json").read_text())
    assert control["matched_minutes"] >= control["rl_minutes"]
    for record in (rl, control, json.loads((tmp_path / "sft.json").read_text())):
        assert 0.0 <= record["final"]["step_success"] <= 1.0
    table = subprocess.run([*release, "report", *common], check=True, cwd=ROOT, capture_output=True, text=True)
    assert "+ UI-S1 RL, seed 0" in table.stdout and "+ SFT continued (equal), seed 0" in table.stdout
    card = tmp_path / "card" / "README.md"
    subprocess.run([*release, "finalize", "--checkpoint", str(tmp_path / "ckpt"), "--card", str(card), *control_set,
                    *common], check=True, cwd=ROOT)  # fmt: skip
    record = read_record(tmp_path / "ckpt" / "training.json").to_dict()["measurements"]
    assert record["summary"]["sft_start"]["step_success"] == record["sft"]["final"]["step_success"]
    assert record["recipe_control"]["training"]["lr"] == 0.0015  # --control-set reached the record
    assert record["confirmation"] == confirm
    paired = record["summary"]["step_success_paired"]["rl_minus_control"]["seed0"]
    assert paired["diff"] == pytest.approx(rl["final"]["step_success"] - control["final"]["step_success"])
    assert (tmp_path / "ckpt" / "sft" / "model.safetensors").is_file() and (card.parent / "curves.png").is_file()
    assert f"{record['rl'][0]['final']['step_success']:.3f}" in card.read_text()
