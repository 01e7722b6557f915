"""How a run starts: :func:`zoo.runs.prepare_run_dir` (``zoo train``, once) and :func:`zoo.runs.start_run`
(every engine's loop): which directory a fresh run may take, which checkpoint ``--resume`` continues from,
which ``metrics.csv`` rows survive, that only the main process deletes or writes, and that a dry run
writes nothing, whatever the engine."""

from __future__ import annotations

import csv
import importlib.util
import logging
from pathlib import Path

import pytest

from tests.engines.run_dirs import interrupted_copy, metric_rows
from zoo.engines import ENGINES
from zoo.engines.reading import load_recipe
from zoo.run_logging import MetricsLog
from zoo.runs import RESOLVED_RECIPE, RunExistsError, mark_complete, prepare_run_dir, start_run

ROOT = Path(__file__).resolve().parents[2]
STEPS = 3


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    """A run directory as a finished run leaves it: complete ``checkpoint-1..3``, ``final/``, ``metrics.csv`` rows 0-3."""
    run = tmp_path / "finished"
    for step in range(1, STEPS + 1):
        folder = run / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        (folder / "weights.bin").write_bytes(bytes(step))
        mark_complete(folder, step)
    (run / "final").mkdir()
    with (run / "metrics.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, ["step", "reward"])
        writer.writeheader()
        writer.writerows({"step": step, "reward": step / 10} for step in range(STEPS + 1))
    return run


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``folder`` with its size and modification time: what "nothing written" compares."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


def test_a_fresh_run_into_a_directory_holding_a_run_is_refused_and_touches_nothing(finished: Path) -> None:
    recipe = load_recipe(ROOT / "domains/gui/recipes/gui-g1-tiny-sft.yaml")
    before = snapshot(finished)
    with pytest.raises(RunExistsError, match=r"already holds a run \(checkpoint-1, checkpoint-2, checkpoint-3, final\)"):
        prepare_run_dir(recipe, finished)
    assert snapshot(finished) == before
    assert prepare_run_dir(recipe, finished, resume=True) == finished and (finished / RESOLVED_RECIPE).is_file()


def test_resume_starts_at_the_newest_complete_checkpoint_and_removes_a_half_written_one(
    finished: Path, tmp_path: Path
) -> None:
    cut = interrupted_copy(finished, tmp_path / "cut", 1, half_written=2)  # killed while writing checkpoint-2
    start = start_run(cut, resume=True)
    assert (start.checkpoint, start.step) == (cut / "checkpoint-1", 1)
    assert not (cut / "checkpoint-2").exists(), "a resumed run must not write into a half-written checkpoint"
    MetricsLog.for_run(start)
    assert [r["step"] for r in metric_rows(cut)] == ["0", "1"]  # rows past the checkpoint are logged again


def test_a_fresh_start_ignores_the_checkpoints_and_starts_a_fresh_log(finished: Path) -> None:
    start = start_run(finished, resume=False)
    assert (start.checkpoint, start.step) == (None, 0)
    assert sorted(p.name for p in finished.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2", "checkpoint-3"]
    MetricsLog.for_run(start)
    assert metric_rows(finished) == []  # the step-0 row too: it was another run's


def test_resume_without_a_complete_checkpoint_warns_and_starts_fresh(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    half = tmp_path / "run" / "checkpoint-1"
    half.mkdir(parents=True)
    (half / "weights.bin").write_bytes(b"x")
    with caplog.at_level(logging.WARNING):
        start = start_run(tmp_path / "run", resume=True)
    assert start.checkpoint is None and not half.exists()
    assert "no complete checkpoint" in caplog.text and "starting from scratch" in caplog.text
    assert start_run(tmp_path / "new" / "run", resume=True).output_dir.is_dir()  # a first run killed before saving


def test_only_the_main_process_deletes_or_writes(finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cut = interrupted_copy(finished, tmp_path / "cut", 1, half_written=1)
    before = snapshot(cut)
    monkeypatch.setenv("RANK", "1")
    start = start_run(cut, resume=True)
    assert start.checkpoint == cut / "checkpoint-1"  # every rank resumes from the same checkpoint
    log = MetricsLog.for_run(start)
    log.log(2, {"reward": 0.5})
    log.finish()
    assert snapshot(cut) == before, "rank 1 deleted or wrote a file of the run directory"


DRY_RUNS = {
    "vlm-trl": "domains/gui/recipes/gui-g1-tiny-cpu.yaml",
    "vlm-semi-online": "domains/gui/recipes/ui-s1-tiny-cpu.yaml",
    "vlm-sft": "domains/gui/recipes/gui-g1-tiny-sft.yaml",
    "diffusion": "tests/engines/diffusion_smoke.yaml",
    "policy": "domains/robot/recipes/fetch-push-resip-smoke.yaml",
}


@pytest.mark.parametrize("engine", DRY_RUNS)
def test_a_dry_run_writes_nothing_even_with_resume(engine: str, finished: Path, tmp_path: Path) -> None:
    """An engine's dry run returns before :func:`start_run`: a half-written checkpoint stays, no log is opened."""
    if engine == "policy" and importlib.util.find_spec("stable_baselines3") is None:
        pytest.skip("the policy engine needs the `robot` or `driving` extra")
    recipe = load_recipe(ROOT / DRY_RUNS[engine])
    cut = interrupted_copy(finished, tmp_path / "cut", 1, half_written=1)
    before = snapshot(cut)
    assert ENGINES.get(recipe.engine).run(recipe, cut, resume=True, dry_run=True) == cut
    assert snapshot(cut) == before
    missing = tmp_path / "missing"
    ENGINES.get(recipe.engine).run(recipe, missing, dry_run=True)
    assert not missing.exists()


def test_a_marker_whose_step_lies_is_refused(tmp_path):
    """review-reliability 10.4: a marker saying step 6 in ``checkpoint-8`` resumed silently, giving ``final/`` step-6
    weights under an 8-step ``metrics.csv``."""
    from zoo.runs import CorruptCheckpointError, latest_checkpoint, mark_complete

    folder = tmp_path / "checkpoint-8"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"x")
    mark_complete(folder, 6)
    with pytest.raises(CorruptCheckpointError, match="says step 6 for a folder named checkpoint-8"):
        latest_checkpoint(tmp_path)


def test_a_non_finite_loss_stops_the_run_and_leaves_its_last_checkpoint(tmp_path, capsys):
    """review-reliability 10.6: NaN trained on and ``final/`` was written all NaN, exit 0. Here a learning rate of inf
    makes the first step's weights inf: the run stops in one line before saving them (and a NaN loss or gradient stops
    it before the step that would take it: ``zoo.runs.check_finite``)."""
    from zoo.cli import main

    smoke = str(Path(__file__).resolve().parents[2] / "domains/gui/recipes/gui-g1-tiny-sft.yaml")
    args = ["train", smoke, "--output-dir", str(tmp_path / "run"), "--set", "model.tiny.hidden=32", "--set",
            "model.tiny.layers=1", "--set", "model.tiny.vision_hidden=32", "--set", "model.tiny.vocab_size=300",
            "--set", "data.corpus_kwargs.n=16", "--set", "training.batch_size=4", "--set", "training.steps=3",
            "--set", "training.save_steps=1", "--set", "training.lr=inf"]  # fmt: skip
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "NaN or inf" in err and "the run stops before saving them" in err  # lr inf: the first step's weights
    assert not list((tmp_path / "run").glob("checkpoint-*")) and not (tmp_path / "run" / "final").exists()


def test_a_nan_loss_or_gradient_is_named_before_the_step():
    from zoo.runs import NonFiniteError, check_finite

    check_finite("step 3", loss=0.5, grad_norm=1.0)
    with pytest.raises(NonFiniteError, match=r"^step 3: grad_norm nan, not a finite number"):
        check_finite("step 3", loss=0.5, grad_norm=float("nan"))
