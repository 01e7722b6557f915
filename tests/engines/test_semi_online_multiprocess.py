"""The ``vlm-semi-online`` engine (UI-S1) data-parallel over processes, gloo on the CPU.

Each rank rolls out its share of a step's episodes with its own episode sampler and sampling RNG, so an
episode's copies, its future-reward filter and its UI-S1 advantages stay whole on one rank; each mini-batch's
gradients are summed over the ranks. A two-process run cannot equal a one-process run: the second rank samples
other episodes and other answers (that is the point of seeding it apart). What must hold, and is checked: the
ranks end on bit-identical weights, ``metrics.csv`` has one row per step counting both ranks' turns, and a job
killed with ``kill -9`` after a checkpoint resumes with two processes to the run that never stopped (each rank's
RNG and sampler come back from the checkpoint).
"""

from __future__ import annotations

import pytest

from tests.engines.launch import killed_after, needs_torchrun, torchrun
from tests.engines.run_dirs import assert_same_tensors, metric_rows
from zoo.distributed import weights_digest
from zoo.engines.reading import load_recipe
from zoo.engines.vlm import semi_online_engine
from zoo.recipe import RecipeError
from zoo.runs import read_state

pytestmark = needs_torchrun

RECIPE = "domains/gui/recipes/ui-s1-smoke.yaml"
SETTINGS = ["training.steps=6", "training.save_steps=2", "training.save_total_limit=null"]


@pytest.fixture(scope="module")
def straight(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("ui-s1-mp") / "straight"
    done = torchrun(RECIPE, out, SETTINGS)
    return {"dir": out, "log": done.stderr}


def test_one_row_per_step_over_both_ranks_turns(straight: dict) -> None:
    rows = metric_rows(straight["dir"])
    assert [r["step"] for r in rows] == ["1", "2", "3", "4", "5", "6"]
    # 2 episodes per step (one per rank) x 2 copies x 2-3 steps: more turns than one rank's single episode holds
    assert all(float(r["turns"]) > 2 * 3 for r in rows)


def test_the_ranks_end_with_bit_identical_weights(straight: dict) -> None:
    import zoo

    assert "weights identical on all 2 ranks" in straight["log"]
    logged = straight["log"].split("weights identical on all 2 ranks (sha256 ")[1][:16]
    assert weights_digest(zoo.load(str(straight["dir"] / "final")).model).startswith(logged)
    ranks = read_state(straight["dir"] / "checkpoint-2" / semi_online_engine.STATE_FILE)["ranks"]
    assert len(ranks) == 2 and ranks[0]["sampler"] != ranks[1]["sampler"]  # each rank drew its own episodes


def test_a_job_killed_after_a_checkpoint_resumes_with_two_processes_to_the_same_run(straight: dict, tmp_path) -> None:
    killed = tmp_path / "killed"
    killed_after(RECIPE, killed, SETTINGS, 2)
    torchrun(RECIPE, killed, SETTINGS, "--resume")
    assert metric_rows(killed) == metric_rows(straight["dir"])
    assert_same_tensors(straight["dir"] / "final" / "model.safetensors", killed / "final" / "model.safetensors")


def test_a_two_process_checkpoint_refuses_a_one_process_resume(straight: dict, tmp_path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(straight["dir"], copy)
    shutil.rmtree(copy / "final")
    with pytest.raises(RecipeError, match=r"written by 2 process\(es\).*resume it with 2 \(got 1\)"):
        semi_online_engine.train(load_recipe(RECIPE, [*SETTINGS, "training.steps=8"]), copy, resume=True)
