"""Resume: an interrupted (Ctrl-C, ``kill -9``, full disk) then resumed run equals an uninterrupted one step by
step, with one metrics row per step; atomic checkpoints; a corrupted checkpoint is a named error."""

from __future__ import annotations

import csv
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from transformers import TrainerCallback

from rewards.base import REWARDS, RewardResult, register
from zoo.engines.vlm import trl_engine
from zoo.engines.vlm.recipe import VLMRecipe as Recipe
from zoo.engines.vlm.trainer import ZooGRPOTrainer
from zoo.runs import COMPLETE_MARKER, CorruptCheckpointError, is_complete, latest_checkpoint


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
    monkeypatch.setattr(trl_engine, "build_trainer",
                        lambda r, o, callbacks=None, checked=None: build(r, o, [Interrupt(at)], checked=checked))


def logged(out) -> dict[int, dict[str, str]]:
    """The training rows of ``metrics.csv`` by step; a step logged twice fails the test."""
    with (out / "metrics.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r.get("reward")]
    steps = [int(r["step"]) for r in rows]
    assert len(steps) == len(set(steps)), f"duplicate rows in metrics.csv: steps {steps}"
    return {int(r["step"]): r for r in rows}


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> dict[int, dict[str, str]]:
    """The metrics of an uninterrupted run, which every interrupted-then-resumed run must reproduce."""
    out = tmp_path_factory.mktemp("straight")
    trl_engine.train(recipe(out), out)
    return logged(out)


def assert_same_run(a: dict[int, dict[str, str]], b: dict[int, dict[str, str]]) -> None:
    assert sorted(a) == sorted(b) == list(range(1, STEPS + 1))
    for step in a:  # same rollouts (RNG), same data order, same optimiser/scheduler state
        for key in ("reward", "reward_std", "grad_norm", "learning_rate", "loss", "entropy"):
            assert float(a[step][key]) == pytest.approx(float(b[step][key]), rel=1e-5, abs=1e-7), (step, key)


def test_resumed_run_equals_uninterrupted(tmp_path, monkeypatch, straight):
    resumed = tmp_path / "resumed"
    with monkeypatch.context() as patch:
        interrupted(patch, at=4)  # step 3 is logged, the newest checkpoint is step 2's
        with pytest.raises(KeyboardInterrupt):
            trl_engine.train(recipe(resumed), resumed)
    assert latest_checkpoint(resumed).name == "checkpoint-2"
    assert sorted(logged(resumed)) == [1, 2, 3]
    corrupt = tmp_path / "corrupt"
    shutil.copytree(resumed, corrupt)
    trl_engine.train(recipe(resumed), resumed, resume=True)  # step 3 is redone: its first row must go
    assert_same_run(straight, logged(resumed))

    optimizer = corrupt / "checkpoint-2" / "optimizer.pt"
    data = optimizer.read_bytes()
    optimizer.write_bytes(data[: len(data) // 2])  # truncated by a copy or a failing disk
    with pytest.raises(CorruptCheckpointError, match=r"checkpoint-2/optimizer\.pt is \d+ bytes but was written as"):
        trl_engine.train(recipe(corrupt), corrupt, resume=True)
    optimizer.write_bytes(bytes(len(data)))  # same size, unreadable content
    with pytest.raises(CorruptCheckpointError, match=r"optimizer\.pt, scheduler\.pt\) in .*checkpoint-2"):
        trl_engine.train(recipe(corrupt), corrupt, resume=True)


KILLED_RUN = """
import os, sys, time
from transformers import TrainerCallback
from tests.rl import test_resume as t
from zoo.engines.vlm import trl_engine

class Hang(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 4:  # step 3 logged, checkpoint-2 written: wait here to be killed
            open(sys.argv[2], "w").close()
            time.sleep(600)

build = trl_engine.build_trainer
trl_engine.build_trainer = lambda r, o, callbacks=None: build(r, o, [Hang()])
out = t.Path(sys.argv[1])
trl_engine.train(t.recipe(out), out)
"""


@pytest.mark.slow  # a fresh interpreter imports torch, transformers and TRL: ~45 s on two shared cores
def test_sigkilled_run_resumes_to_the_same_metrics(tmp_path, straight):
    """A real ``kill -9`` (no Python clean-up runs) between a checkpoint and the next one."""
    out, ready = tmp_path / "killed", tmp_path / "ready"
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(out), str(ready)], cwd=root,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not ready.exists():
            assert child.poll() is None, child.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the training run never reached step 4"
            time.sleep(0.2)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    assert latest_checkpoint(out).name == "checkpoint-2" and sorted(logged(out)) == [1, 2, 3]
    trl_engine.train(recipe(out), out, resume=True)
    assert_same_run(straight, logged(out))


def test_disk_full_during_save_keeps_the_previous_checkpoint(tmp_path, monkeypatch, straight):
    out = tmp_path / "run"
    real_save = torch.save

    def save(obj, f, *args, **kwargs):
        if "checkpoint-4" in str(f) and str(f).endswith("optimizer.pt"):
            Path(f).write_bytes(b"partial")  # the disk fills up half way through the file
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(f))
        return real_save(obj, f, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(torch, "save", save)
        with pytest.raises(OSError, match=r"could not write checkpoint-4 \(No space left on device\).*checkpoint-2, "
                                          r"is intact.*--resume") as err:  # fmt: skip
            trl_engine.train(recipe(out), out)
    assert err.value.errno == errno.ENOSPC
    assert not (out / "checkpoint-4").exists(), "the partial folder only takes space: it is removed"
    assert latest_checkpoint(out).name == "checkpoint-2"
    trl_engine.train(recipe(out), out, resume=True)  # space freed: the run finishes as if nothing happened
    assert_same_run(straight, logged(out))


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
