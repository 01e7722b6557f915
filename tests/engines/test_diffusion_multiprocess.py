"""Two-process diffusion runs (``torchrun --nproc_per_node 2``, gloo on the CPU), as a user launches them.

One writer and whole-run rows: ``metrics.csv`` holds every step once, with values gathered over both ranks.
Resume (review 2.3): a run killed after ``checkpoint-2`` and resumed with two processes equals the
uninterrupted run (every metrics cell but ``cpu_minutes``, ``final/`` bit for bit), and each rank gets its own
sampling generator back, so the ranks still draw different noise. Review 2.4: the killed run left a
half-written ``checkpoint-4`` (of 300 files, to widen the window), which the main process alone deletes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.engines.launch import needs_torchrun
from tests.engines.launch import torchrun as launch
from tests.engines.run_dirs import assert_same_tensors, interrupted_copy, logged_digest, metric_rows
from tests.engines.test_diffusion_engine import SMOKE, TINY
from zoo.distributed import weights_digest
from zoo.engines.diffusion.checkpoint import STATE
from zoo.runs import is_complete, read_state

pytestmark = needs_torchrun
SETTINGS = [*TINY, "training.steps=4", "training.save_steps=2", "training.eval_every=2", "training.num_threads=1"]


def torchrun(output_dir: Path, *extra: str):
    """``torchrun --standalone --nproc_per_node 2 -m zoo.cli train`` of the smoke recipe."""
    return launch(SMOKE, output_dir, SETTINGS, *extra)


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("mp") / "straight"
    return out, torchrun(out).stderr


@pytest.fixture(scope="module")
def straight(launched: tuple[Path, str]) -> Path:
    return launched[0]


def test_the_ranks_end_with_bit_identical_trained_weights(launched: tuple[Path, str]) -> None:
    """Each rank hashes its trained tensors at the end; the hashes are compared over the group (a difference
    raises) and the digest logged is that of the tensors rank 0 saved."""
    out, log = launched
    assert "weights identical on all 2 ranks" in log
    logged = logged_digest(log)
    saved = load_file(str(out / "final" / "trained.safetensors"))
    assert weights_digest(saved).startswith(logged)


def test_two_processes_write_one_row_per_step_with_whole_run_values(straight: Path) -> None:
    rows = metric_rows(straight)
    assert [r["step"] for r in rows] == ["0", "1", "2", "3", "4"]
    per_process = 4 * 3  # group_size x num_steps images' denoiser calls of one process's one prompt
    assert all(int(r["sample_evals"]) == 2 * per_process for r in rows[1:])  # counted over both ranks
    for row in rows[1:]:  # the reward term's mean is averaged over the ranks: the round's reward must cover both
        assert float(row["reward"]) == pytest.approx(float(row["rewards/brightness/mean"]), abs=1e-6)
    grids = sorted(p.name for p in (straight / "samples").iterdir())
    assert grids == ["step-00000.png", "step-00002.png", "step-00004.png"]
    assert (straight / "final" / "trained.safetensors").is_file() and (straight / "reward_curve.png").is_file()


def test_two_process_resume_equals_the_uninterrupted_run_with_distinct_noise(straight: Path, tmp_path: Path) -> None:
    resumed = interrupted_copy(straight, tmp_path / "resumed", 2, half_written=300)
    assert not is_complete(resumed / "checkpoint-4")
    done = torchrun(resumed, "--resume")
    assert "resumed from" in done.stderr and "checkpoint-2 (round 2)" in done.stderr
    assert metric_rows(resumed) == metric_rows(straight)
    assert_same_tensors(straight / "final" / "trained.safetensors", resumed / "final" / "trained.safetensors")
    assert not list((resumed / "checkpoint-4").glob("part-*"))  # the half-written one was replaced

    restored = read_state(resumed / "checkpoint-2" / STATE)["ranks"]
    after = read_state(resumed / "checkpoint-4" / STATE)["ranks"]
    expected = read_state(straight / "checkpoint-4" / STATE)["ranks"]
    assert not torch.equal(restored[0]["generator"], restored[1]["generator"])
    for rank in (0, 1):  # each rank continued its own generator: the draws of the run that never stopped
        assert torch.equal(after[rank]["generator"], expected[rank]["generator"])
    assert not torch.equal(after[0]["generator"], after[1]["generator"])
