"""The ``policy`` engine's checkpoints: ``--resume`` is the uninterrupted run, and reads no pickle.

Every smoke recipe runs once uninterrupted (three iterations, a checkpoint each, the last two
kept). An interruption after ``checkpoint-2`` is simulated cheaply: a copy of that run directory
without ``checkpoint-3/`` and ``final/`` (nothing else trimmed, as a ``kill -9`` leaves it) is
resumed and compared cell by cell and byte by byte. Handed run directories get payloads planted
where an attacker could put them; ``--resume`` must refuse them without running them.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import pickle
import shutil
import tempfile
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="the policy engine needs the `robot` or `driving` extra")

import torch

from tests.engines.run_dirs import Payload, assert_same_final, interrupted_copy, metric_rows
from zoo.runs import COMPLETE_MARKER, UnsafeStateError
from zoo.train import run

ROOT = Path(__file__).resolve().parents[2]
ROBOT, DRIVING = ROOT / "domains" / "robot" / "recipes", ROOT / "domains" / "driving" / "recipes"
STEPS = 3
RESUME_FROM = 2
CASES = {  # name: (recipe, overrides, the simulator's package)
    "resip": (ROBOT / "fetch-push-resip-smoke.yaml", [], "gymnasium_robotics"),
    # ResiP's fresh episodes every iteration: the resumed run's first rollout resets as the uninterrupted one's
    "resip-reset": (ROBOT / "fetch-push-resip-smoke.yaml", ["algorithm.reset_every_iteration=true"], "gymnasium_robotics"),
    "resfit": (ROBOT / "fetch-push-resfit-smoke.yaml", [], "gymnasium_robotics"),
    # exploration still random after the resume point (32 steps an iteration): the action space's generator counts
    "resfit-warmup": (ROBOT / "fetch-push-resfit-smoke.yaml", ["algorithm.learning_starts=80"], "gymnasium_robotics"),
    "dppo": (ROBOT / "fetch-push-dppo-smoke.yaml", [], "gymnasium_robotics"),
    "carl": (DRIVING / "carl-highway-smoke.yaml", [], "highway_env"),
}


def train(name: str, output_dir: Path, steps: int = STEPS, resume: bool = False) -> Path:
    recipe, overrides, _ = CASES[name]
    return run(str(recipe), [f"training.steps={steps}", *overrides], output_dir=str(output_dir), resume=resume)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """``get(name)``: the uninterrupted run of a smoke recipe (made once) and what it left in the temp dir.

    Each run gets its own ``tempfile.tempdir``, so entries there are this run's, whatever else runs.
    """
    done: dict[str, tuple[Path, list[str]]] = {}

    def get(name: str) -> tuple[Path, list[str]]:
        pytest.importorskip(CASES[name][2])
        if name not in done:
            temp = tmp_path_factory.mktemp(f"{name}-tempdir")
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(tempfile, "tempdir", str(temp))
                out = train(name, tmp_path_factory.mktemp(name) / "run")
            done[name] = out, sorted(p.name for p in temp.iterdir())
        return done[name]

    return get


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_resumed_run_is_the_uninterrupted_run(name, uninterrupted, tmp_path, caplog):
    out, _ = uninterrupted(name)
    cut = interrupted_copy(out, tmp_path / "run", RESUME_FROM)
    assert (cut / f"checkpoint-{RESUME_FROM}").is_dir() and (cut / "metrics.csv").is_file()
    with caplog.at_level(logging.INFO, logger="zoo.engines.policy.engine"):
        train(name, cut, resume=True)
    assert f"resumed from {cut / f'checkpoint-{RESUME_FROM}'} (iteration {RESUME_FROM})" in caplog.text
    expected, resumed = metric_rows(out), metric_rows(cut)
    assert [row["step"] for row in resumed] == [str(s) for s in range(1, STEPS + 1)]
    assert resumed == expected
    assert_same_final(out, cut)


@pytest.mark.parametrize("name", sorted(CASES))
def test_training_leaves_no_sb3_folder_in_the_temp_dir(name, uninterrupted):
    _, temp_entries = uninterrupted(name)
    assert not [entry for entry in temp_entries if entry.startswith("SB3-")]


def test_a_checkpoint_holds_no_pickle_container(uninterrupted):
    out, _ = uninterrupted("resfit")
    names = sorted(p.name for p in (out / f"checkpoint-{STEPS}").iterdir())
    assert names == ["algorithm.json", "algorithm.pt", "policy_state.json", "replay_buffer.npz",
                     "training_state.pt", COMPLETE_MARKER]  # fmt: skip
    with np.load(out / f"checkpoint-{STEPS}" / "replay_buffer.npz", allow_pickle=False) as buffer:
        assert int(buffer["pos"]) == STEPS * 32 and len(buffer["observations"]) == STEPS * 32


def sb3_zip(payload: Payload) -> bytes:
    """A stable-baselines3 model zip whose ``data`` entry carries ``payload`` the way its loader unpickles it."""
    serialized = base64.b64encode(pickle.dumps(payload)).decode()
    data = {"note": {":type:": "<class 'object'>", ":serialized:": serialized}}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("data", json.dumps(data))
    return buffer.getvalue()


def torch_file(payload: Payload) -> bytes:
    buffer = io.BytesIO()
    torch.save({"note": payload}, buffer)
    return buffer.getvalue()


def npz_with_objects(payload: Payload) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, pos=np.int64(0), full=np.bool_(False), observations=np.array([payload], dtype=object))
    return buffer.getvalue()


PLANTS = [  # (method, file in the newest checkpoint, what is written there)
    ("resip", "sb3_model.zip", sb3_zip),  # an older zoo's model file, or one planted beside the new files
    ("resip", "training_state.pt", torch_file),
    ("resip", "algorithm.pt", torch_file),
    ("resfit", "replay_buffer.pkl", pickle.dumps),
    ("resfit", "replay_buffer.npz", npz_with_objects),
    ("dppo", "dppo_state.pt", torch_file),
]


def test_the_payload_runs_when_unpickled(tmp_path):
    """The planted payloads below are live: unpickled, they write their marker."""
    pickle.loads(pickle.dumps(Payload(tmp_path / "probe")))
    assert (tmp_path / "probe").read_text() == "ran during --resume"


@pytest.mark.parametrize(("name", "file", "make"), PLANTS, ids=[f"{n}-{f}" for n, f, _ in PLANTS])
def test_resume_refuses_a_planted_pickle_and_runs_none_of_it(name, file, make, uninterrupted, tmp_path):
    out, _ = uninterrupted(name)
    handed = shutil.copytree(out, tmp_path / "handed")
    newest = handed / f"checkpoint-{STEPS}"
    marker = tmp_path / "PWNED"
    (newest / file).write_bytes(make(Payload(marker)))
    record = json.loads((newest / COMPLETE_MARKER).read_text())  # as an attacker would: sizes made to match
    if file in record["sizes"]:
        record["sizes"][file] = os.path.getsize(newest / file)
        (newest / COMPLETE_MARKER).write_text(json.dumps(record))
    with pytest.raises(UnsafeStateError) as refused:
        train(name, handed, steps=STEPS + 1, resume=True)
    message = str(refused.value)
    assert str(newest / file) in message and "\n" not in message and "nothing of it was run" in message.lower()
    assert not marker.exists()
    assert not (handed / f"checkpoint-{STEPS + 1}").exists()


def test_an_existing_checkpoint_folder_is_replaced_not_written_into(tmp_path):
    from zoo.engines.policy.engine import _save
    from zoo.runs import is_complete

    class Env:
        def get_state(self) -> dict[str, Any]:
            return {"step": 7}

        def set_state(self, state: dict[str, Any]) -> None:
            raise AssertionError("not resumed here")

    class Method:
        def save(self, model: Any, folder: Path) -> None:
            (folder / "algorithm.json").write_text("{}")

    folder = tmp_path / "checkpoint-1"
    folder.mkdir()
    (folder / "stale.bin").write_bytes(b"from an earlier run")
    (folder / COMPLETE_MARKER).write_text(json.dumps({"step": 1, "files": ["stale.bin"], "sizes": {"stale.bin": 19}}))
    envs = SimpleNamespace(env_method=lambda name: [getattr(Env(), name)()])  # a VecEnv of one, as _save asks it
    _save(Method(), SimpleNamespace(num_timesteps=5), envs, folder, 1)
    assert not (folder / "stale.bin").exists() and is_complete(folder)
    assert json.loads((folder / COMPLETE_MARKER).read_text())["files"] == [
        "algorithm.json", "policy_state.json", "training_state.pt"]  # fmt: skip
    assert json.loads((folder / "policy_state.json").read_text()) == {"iteration": 1, "env_steps": 5}


def test_an_environment_without_the_episode_protocol_is_refused_before_training():
    import gymnasium as gym
    from stable_baselines3.common.vec_env import DummyVecEnv

    from zoo.engines.policy.state import require_restorable
    from zoo.recipe import RecipeError

    with pytest.raises(RecipeError, match="TimeLimit has no get_state"):
        require_restorable(DummyVecEnv([lambda: gym.make("CartPole-v1")]), "cart-pole")
