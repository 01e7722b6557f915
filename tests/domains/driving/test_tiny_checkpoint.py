"""The shipped ``checkpoints/driving-vla-tiny`` and the release driver that builds it from its recipes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CHECKPOINT = ROOT / "checkpoints" / "driving-vla-tiny"


def test_checkpoint_is_small_safetensors_with_its_training_record():
    files = {p.name for p in CHECKPOINT.iterdir()}
    assert "model.safetensors" in files and not any(n.endswith((".bin", ".pt", ".pth")) for n in files)
    assert (CHECKPOINT / "model.safetensors").stat().st_size < 8e6
    record = json.loads((CHECKPOINT / "training.json").read_text())
    assert record["entry"] == "driving-vla-tiny"
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
    assert "driving-action-tokens" in json.dumps(json.loads((CHECKPOINT / "training.json").read_text())["recipe_sft"])
    assert (pred.trajectory is None) == (pred.parse_error is not None)
    if pred.trajectory is not None:
        assert len(pred.trajectory) == 8 and all(len(p) == 3 for p in pred.trajectory)


def test_card_quotes_grpo_training_reward_trend_only_when_recorded():
    """The card says whether GRPO moved its own objective when the record has the trend, and stays
    silent (rather than inventing one) when it has not."""
    from domains.driving.card import render

    record = json.loads((CHECKPOINT / "training.json").read_text())
    record["summary"].pop("grpo_train_reward", None)
    assert "sampled training reward" not in render(record, 3.6)
    record["summary"]["grpo_train_reward"] = {"seed0": {"first": 0.551, "last": 0.603, "k": 10, "logged_steps": 48},
                                              "seed1": {"first": 0.569, "last": 0.568, "k": 10, "logged_steps": 48}}
    text = render(record, 3.6)
    assert "mean of the first 10 logged steps → the last 10: seed 0 0.551 → 0.603; seed 1 0.569 → 0.568." in text


def test_card_reads_grpo_against_control_with_the_run_as_the_unit():
    """The verdict on GRPO's edge over more SFT needs the seed-level difference (mean ± SE over seeds) and,
    where recorded, the seed-averaged difference's error over the scenes both to clear two errors."""
    from domains.driving.card import render

    record = json.loads((CHECKPOINT / "training.json").read_text())
    record["across_seeds"] = {"grpo_minus_control": {"diff": 0.020, "se": 0.016, "seeds": 3}}
    record["seed_mean_over_scenes"] = {"grpo_minus_control": {"diff": 0.020, "se": 0.012, "seeds": 3}}
    text = render(record, 3.6)
    assert "mean of the 3 seeds' differences" in text and "GRPO − control +0.020 ± 0.016" in text
    assert "over the scenes +0.020 ± 0.012" in text and "edge over more SFT is not shown" in text
    record["across_seeds"]["grpo_minus_control"] = {"diff": 0.020, "se": 0.008, "seeds": 7}
    assert "edge over more SFT is not shown" in render(record, 3.6)  # clears over seeds, not over scenes
    record["seed_mean_over_scenes"]["grpo_minus_control"]["se"] = 0.009
    assert "GRPO's edge over more SFT is beyond two standard errors" in render(record, 3.6)


def test_card_breaks_the_arms_down_by_scene_kind_when_recorded():
    """Where each arm gains and loses (an overall mean can hide a gain on one kind paid on another)."""
    from domains.driving.card import render

    record = json.loads((CHECKPOINT / "training.json").read_text())
    record["by_kind"] = {"sft": {"cruise": 0.857, "follow": 0.86}, "grpo": {"cruise": 0.894, "follow": 0.642},
                         "control": {"cruise": 0.86, "follow": 0.87}}  # fmt: skip
    text = render(record, 3.6)
    assert "By scene kind (SFT start → GRPO → control, each arm averaged over its seeds): cruise 0.857 → 0.894 → " \
           "0.860; follow 0.860 → 0.642 → 0.870." in text
    record.pop("by_kind")
    assert "By scene kind" not in render(record, 3.6)


def test_card_names_the_advantage_the_recipe_used():
    """GRPO's group-normalised advantages and Dr. GRPO's group-centred ones are different recipes; the
    card reads which from the recorded recipe."""
    from domains.driving.card import render

    record = json.loads((CHECKPOINT / "training.json").read_text())
    record["recipe_grpo"]["algorithm"]["normalize_std"] = True
    assert "group-normalised\n  advantages" in render(record, 3.6)
    record["recipe_grpo"]["algorithm"]["normalize_std"] = False
    text = render(record, 3.6)
    assert "group-centred (Dr. GRPO: no division by the group's std)" in text and "group-normalised" not in text


@pytest.mark.slow
def test_release_stages_run_end_to_end_small(tmp_path):
    """Every training stage of ``python -m domains.driving.release`` at toy scale (minutes, not the release run)."""
    common = ["--run-dir", str(tmp_path), "--eval-n", "4", "--final-eval-n", "2", "--sft-eval-n", "2", "--seed", "0"]
    release = [sys.executable, "-m", "domains.driving.release"]
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
    record = json.loads((checkpoint / "training.json").read_text())
    assert record["standard_error"]["n"] == 2 and set(record["paired"]["grpo_minus_control"]) == {"seed0"}
    plans = record["plans_at_answer_precision"]
    # the planner is EP's reference (1 up to the answer's 0.1 m rounding); the logged drive holds its speed
    assert plans["planner"]["ep"] == pytest.approx(1.0, abs=1e-3) and plans["logged"]["ep"] < 0.99
    assert plans["logged"]["nc"] == 1.0
    assert "± is one standard error" in card.read_text()


def test_standard_errors_are_paired_over_the_same_scenes(tmp_path):
    """``finalize``'s standard errors: per arm over scenes, and of per-scene differences (paired)."""
    import numpy as np

    from domains.driving.release import DEFAULTS, scores_file, standard_errors
    from zoo.release import ReleaseArgs, write_json

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
    from domains.driving.release import seed_mean_differences

    sft = [0.2, 0.4, 0.6, 0.8]
    grpo = {0: [0.4, 0.5, 0.6, 0.9], 1: [0.2, 0.5, 0.8, 0.9]}
    out = seed_mean_differences(sft, grpo, {0: [0.2, 0.4, 0.6, 0.8]})
    assert out["grpo_minus_sft"] == pytest.approx({"diff": 0.1, "se": 0.0, "seeds": 2})
    assert out["control_minus_sft"] == pytest.approx({"diff": 0.0, "se": 0.0, "seeds": 1})
    # against the control only the seed that has one counts: seed 0's uneven gain
    assert out["grpo_minus_control"]["diff"] == pytest.approx(0.1) and out["grpo_minus_control"]["se"] > 0
