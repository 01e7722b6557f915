"""Resume: an interrupted-then-resumed run equals an uninterrupted one step by step; atomic checkpoints."""

from __future__ import annotations

import csv
import json

import pytest
from transformers import TrainerCallback

from zoo.engines.vlm import trl_engine
from rewards.base import REWARDS, RewardResult, register
from zoo.engines.vlm.recipe import VLMRecipe as Recipe
from zoo.engines.vlm.trainer import ZooGRPOTrainer
from zoo.runs import COMPLETE_MARKER, is_complete, latest_checkpoint


class LetterRate:
    """Dense reward (fraction of letters), so every step has non-zero advantages and gradients."""

    name = "test-letter-rate"

    def __call__(self, predictions, samples):
        return [RewardResult(sum(c.isalpha() for c in p) / max(1, len(p))) for p in predictions]


if LetterRate.name not in REWARDS:
    register(LetterRate.name, LetterRate())

STEPS = 4


def recipe(out) -> Recipe:
    return Recipe.from_dict({
        "name": "resume",
        "engine": "vlm-trl",
        "data": {"name": "synthetic-colour", "kwargs": {"n": 16, "seed": 3}},
        "rewards": [{"name": LetterRate.name}],
        "algorithm": {"num_generations": 4, "max_completion_length": 5},
        "training": {"lr": 1e-2, "steps": STEPS, "batch_size": 8, "save_steps": 2, "output_dir": str(out),
                     "lr_scheduler": "linear", "warmup_steps": 1},
    })


class Interrupt(TrainerCallback):
    """Ctrl-C after optimiser step ``at`` (before that step's log and checkpoint)."""

    def __init__(self, at: int) -> None:
        self.at = at

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.at:
            raise KeyboardInterrupt


def interrupted(monkeypatch, at: int) -> None:
    build = trl_engine.build_trainer
    monkeypatch.setattr(trl_engine, "build_trainer", lambda r, o, callbacks=None: build(r, o, [Interrupt(at)]))


def logged(out) -> dict[int, dict[str, str]]:
    with (out / "metrics.csv").open() as f:
        return {int(r["step"]): r for r in csv.DictReader(f) if r.get("reward")}


def test_resumed_run_equals_uninterrupted(tmp_path, monkeypatch):
    straight = tmp_path / "straight"
    trl_engine.train(recipe(straight), straight)

    resumed = tmp_path / "resumed"
    with monkeypatch.context() as patch:
        interrupted(patch, at=3)
        with pytest.raises(KeyboardInterrupt):
            trl_engine.train(recipe(resumed), resumed)
    assert latest_checkpoint(resumed).name == "checkpoint-2"
    trl_engine.train(recipe(resumed), resumed, resume=True)

    a, b = logged(straight), logged(resumed)
    assert sorted(a) == sorted(b) == list(range(1, STEPS + 1))
    for step in a:  # same rollouts (RNG), same data order, same optimiser/scheduler state
        for key in ("reward", "reward_std", "grad_norm", "learning_rate", "loss", "entropy"):
            assert float(a[step][key]) == pytest.approx(float(b[step][key]), rel=1e-5, abs=1e-7), (step, key)


def test_killed_checkpoint_write_is_ignored(tmp_path, monkeypatch):
    out = tmp_path / "run"

    def die_mid_save(self, output_dir):  # the process dies after the weights, before RNG/state files
        raise KeyboardInterrupt

    original = ZooGRPOTrainer._save_rng_state
    calls = {"n": 0}

    def save_rng(self, output_dir):
        calls["n"] += 1
        if calls["n"] == 2:
            die_mid_save(self, output_dir)
        return original(self, output_dir)

    monkeypatch.setattr(ZooGRPOTrainer, "_save_rng_state", save_rng)
    with pytest.raises(KeyboardInterrupt):
        trl_engine.train(recipe(out), out)
    monkeypatch.undo()

    half = out / "checkpoint-4"
    assert (half / "model.safetensors").exists() and not is_complete(half), "a half-written checkpoint exists"
    assert latest_checkpoint(out) == out / "checkpoint-2"
    trl_engine.train(recipe(out), out, resume=True)  # removes the half-written folder, redoes steps 3-4
    assert is_complete(out / f"checkpoint-{STEPS}")
    assert json.loads((out / f"checkpoint-{STEPS}" / COMPLETE_MARKER).read_text())["step"] == STEPS


def test_marker_lists_files(tmp_path):
    folder = tmp_path / "checkpoint-1"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"x")
    from zoo.runs import mark_complete

    mark_complete(folder, 1)
    assert is_complete(folder)
    (folder / "weights.bin").unlink()
    assert not is_complete(folder), "a marker whose files are gone is not a valid checkpoint"
    assert latest_checkpoint(tmp_path) is None
