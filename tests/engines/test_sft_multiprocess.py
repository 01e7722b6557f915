"""The ``vlm-sft`` engine data-parallel over processes (gloo on the CPU), launched as users launch it.

What the maths promises here (:mod:`zoo.distributed`): every rank draws the same global batch and trains on its
half, each half's mean loss weighted by its share of the answer tokens, so two processes with half the batch each
take the one-process step to float rounding (the sums run in another order), and the ranks' weights agree to the
bit (one all-reduce result, the same optimiser step). Nothing else in a step is random, so a checkpoint resumes the
same run with any number of processes.
"""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from tests.engines.launch import (
    TINY_SFT,
    TINY_SFT_SETTINGS,
    in_this_process,
    killed_after,
    needs_torchrun,
    torchrun,
    two_nodes,
)
from tests.engines.run_dirs import assert_same_tensors, logged_digest, metric_rows
from zoo.distributed import weights_digest

pytestmark = needs_torchrun

RECIPE = TINY_SFT
SETTINGS = [*TINY_SFT_SETTINGS, "training.logging_steps=1", "training.steps=8", "training.warmup_steps=2"]
STEPS = [str(step) for step in range(1, 9)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("sft-mp")
    single = root / "single"
    in_this_process(RECIPE, single, SETTINGS)  # the reference run
    double = root / "double"
    done = torchrun(RECIPE, double, SETTINGS)
    return {"single": single, "double": double, "log": done.stderr, "printed": done.stdout}


def final_weights(run) -> dict[str, torch.Tensor]:
    return load_file(run / "final" / "model.safetensors")


def test_two_processes_write_one_row_per_step_and_one_run_directory(runs: dict) -> None:
    rows = metric_rows(runs["double"])
    assert [r["step"] for r in rows] == STEPS
    assert sorted(p.name for p in runs["double"].iterdir()) == sorted(p.name for p in runs["single"].iterdir())
    assert runs["printed"].count("run written to") == 1


def test_the_ranks_end_with_bit_identical_weights(runs: dict) -> None:
    """Each rank hashes its own weights at the end and the hashes are compared over the group
    (:meth:`~zoo.distributed.DataParallel.check_same_weights` raises if they differ); the digest logged is
    that of the weights rank 0 saved."""
    import zoo

    assert "weights identical on all 2 ranks" in runs["log"]
    logged = logged_digest(runs["log"])
    model = zoo.load(str(runs["double"] / "final")).model
    assert weights_digest(model).startswith(logged)


def test_two_processes_with_half_the_batch_each_equal_one_process_with_the_whole_batch(runs: dict) -> None:
    single, double = metric_rows(runs["single"]), metric_rows(runs["double"])
    assert [float(r["loss"]) for r in double] == pytest.approx([float(r["loss"]) for r in single], rel=1e-5)
    a, b = final_weights(runs["single"]), final_weights(runs["double"])
    assert a.keys() == b.keys()
    moved = max(float((b[k] - a[k]).abs().max()) for k in a)
    assert moved < 1e-4, f"two-process weights differ from one-process weights by up to {moved}"
    assert any(not torch.equal(a[k], b[k]) for k in a) or moved == 0.0


def test_a_job_killed_after_a_checkpoint_resumes_with_two_processes_to_the_same_run(runs: dict, tmp_path) -> None:
    killed = tmp_path / "killed"
    killed_after(RECIPE, killed, SETTINGS, 2)
    torchrun(RECIPE, killed, SETTINGS, "--resume")
    assert metric_rows(killed) == metric_rows(runs["double"])
    assert_same_tensors(runs["double"] / "final" / "model.safetensors", killed / "final" / "model.safetensors")


def test_two_single_process_nodes_meet_at_a_rendezvous_and_train_as_one_job(runs: dict, tmp_path) -> None:
    out = tmp_path / "nodes"
    node0, node1 = two_nodes(RECIPE, out, SETTINGS)
    assert "weights identical on all 2 ranks" in node0.stderr + node1.stderr
    assert [r["step"] for r in metric_rows(out)] == STEPS
    assert metric_rows(out) == metric_rows(runs["double"])  # the same job as two processes on one node
    assert_same_tensors(runs["double"] / "final" / "model.safetensors", out / "final" / "model.safetensors")
