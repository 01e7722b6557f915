"""The ``vlm-trl`` engine data-parallel over processes (TRL's ``GRPOTrainer`` under DDP, gloo on the CPU).

``training.batch_size`` is TRL's ``per_device_train_batch_size``: two processes train twice the completions
of one. TRL deals the prompts of a step out to the processes and gathers every completion's reward before the
advantages, so a group's mean and std are over the whole group (``trl/trainer/grpo_trainer.py``,
``_generate_and_score_completions``: ``gather(rewards_per_func)`` then the group view), and the logged reward is
the mean over all ranks' completions. A two-process run cannot equal a one-process run with the same global
batch: TRL seeds each process's sampling differently on purpose (``set_seed(args.seed, device_specific=True)``
in ``GRPOTrainer.__init__``, so that two ranks never draw the same completions), so the completions differ.
What must hold, and is checked: the ranks end on bit-identical weights (DDP's averaged gradients, one
optimiser step each), one ``metrics.csv`` row per step, and a job killed with ``kill -9`` after a checkpoint
resumes with two processes to the run that never stopped (each rank's RNG comes back from the checkpoint).
"""

from __future__ import annotations

import csv
import json

import pytest

from tests.engines.launch import killed_after, needs_torchrun, torchrun
from tests.engines.run_dirs import assert_same_tensors, logged_digest, metric_rows
from zoo.distributed import weights_digest
from zoo.runs import COMPLETE_MARKER

pytestmark = needs_torchrun

RECIPE = "domains/gui/recipes/gui-g1-tiny-cpu.yaml"  # the shipped SFT warm start: rewards vary, weights move
SETTINGS = [
    "data.kwargs.n=16", "algorithm.num_generations=4", "training.batch_size=4", "training.steps=6",
    "training.save_steps=2", "training.logging_steps=1", "training.save_total_limit=null",
]  # fmt: skip


@pytest.fixture(scope="module")
def straight(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("trl-mp") / "straight"
    done = torchrun(RECIPE, out, SETTINGS)
    return {"dir": out, "log": done.stderr, "printed": done.stdout}


#: Cells that measure the machine or the process, not the run: wall-clock times, and the closing summary's mean loss
#: (over the steps this process trained, so a resumed run's is its second part's), which joins the last step's row.
NOT_THE_RUN = {"step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss"}


def training_rows(run) -> list[dict[str, str]]:
    """The per-step rows, every cell that describes the run (:data:`NOT_THE_RUN` left out)."""
    return [{k: v for k, v in row.items() if k not in NOT_THE_RUN} for row in metric_rows(run) if row.get("reward")]


def test_two_processes_write_one_row_per_step(straight: dict) -> None:
    assert [r["step"] for r in training_rows(straight["dir"])] == ["1", "2", "3", "4", "5", "6"]
    assert straight["printed"].count("run written to") == 1
    with (straight["dir"] / "metrics.csv").open() as f:
        header = next(csv.reader(f))
    assert len(header) == len(set(header))


def test_a_checkpoint_is_complete_only_with_every_ranks_rng_state(straight: dict) -> None:
    """Each process writes its own ``rng_state_<rank>.pth``; the completion marker (written by rank 0) comes after
    all of them, so it lists both: a checkpoint marked complete always resumes every rank's sampling."""
    for step in (2, 4, 6):
        listed = json.loads((straight["dir"] / f"checkpoint-{step}" / COMPLETE_MARKER).read_text())["files"]
        assert {"rng_state_0.pth", "rng_state_1.pth"} <= set(listed), (step, listed)


def test_the_ranks_end_with_bit_identical_weights_that_moved(straight: dict) -> None:
    import zoo

    rows = training_rows(straight["dir"])
    assert any(float(r["grad_norm"]) > 0 for r in rows), "no step had a gradient: the check would be vacuous"
    assert "weights identical on all 2 ranks" in straight["log"]
    logged = logged_digest(straight["log"])
    assert weights_digest(zoo.load(str(straight["dir"] / "final")).model).startswith(logged)


def test_a_job_killed_after_a_checkpoint_resumes_with_two_processes_to_the_same_run(straight: dict, tmp_path) -> None:
    killed = tmp_path / "killed"
    killed_after(RECIPE, killed, SETTINGS, 2)
    torchrun(RECIPE, killed, SETTINGS, "--resume")
    assert training_rows(killed) == training_rows(straight["dir"])
    assert_same_tensors(straight["dir"] / "final" / "model.safetensors", killed / "final" / "model.safetensors")
