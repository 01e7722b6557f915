"""One job owns a run directory (review-reliability 9.1, 9.2): a second job on it is refused with the holder named,
the lock goes with the process that held it however it ends, and the ranks of a ``torchrun`` job die with their
launcher instead of training on as orphans."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.engines.launch import (
    ROOT,
    TINY_SFT,
    TINY_SFT_SETTINGS,
    TORCHRUN,
    _finish,
    _start,
    kill_job,
    needs_torchrun,
    train_args,
)
from zoo.job import LOCK_FILE, RunDirBusyError, hold_run_dir
from zoo.runs import is_complete

SFT = TINY_SFT
SLOW = [*TINY_SFT_SETTINGS, "training.steps=400"]
DIFFUSION_SMOKE = str(ROOT / "tests/engines/diffusion_smoke.yaml")
TWO_STEPS = ["train", DIFFUSION_SMOKE, "--set", "training.steps=2"]


@pytest.fixture(scope="module")
def two_step_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-step run of the diffusion smoke recipe, trained once for this file's resume tests; each test
    resumes a copy of it (``training.output_dir`` is no setting a resume compares, so the copy resumes as the run)."""
    from zoo.cli import main

    run = tmp_path_factory.mktemp("one-job") / "run"
    assert main([*TWO_STEPS, "--output-dir", str(run)]) == 0
    return run


def test_a_second_job_on_a_held_run_directory_is_refused_with_the_holder_named(tmp_path: Path) -> None:
    hold = ("import sys, time; from pathlib import Path; from zoo.job import hold_run_dir\n"
            "with hold_run_dir(Path(sys.argv[1])):\n print('held', flush=True); time.sleep(600)")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(tmp_path / "run")], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True)  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunDirBusyError, match=rf"being written by another job \(pid {holder.pid} on .*\); wait"):
            with hold_run_dir(tmp_path / "run"):
                pytest.fail("two holders")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with hold_run_dir(tmp_path / "run"):  # the kernel released the dead holder's lock: no stale lock to clear
        assert (tmp_path / "run" / LOCK_FILE).is_file()


def test_a_link_in_place_of_the_lock_is_refused(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / LOCK_FILE).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError), hold_run_dir(tmp_path / "run"):
        pass
    assert not (tmp_path / "elsewhere").exists()


@needs_torchrun
def test_ranks_die_with_a_killed_launcher_and_the_directory_is_free_again(tmp_path: Path) -> None:
    import psutil

    out = tmp_path / "run"
    launcher = _start([str(TORCHRUN), "--standalone", "--nproc_per_node", "2", *train_args(SFT, out, SLOW)], out)
    try:
        deadline = time.monotonic() + 300
        while not is_complete(out / "checkpoint-2"):
            assert launcher.poll() is None and time.monotonic() < deadline, "the job ended before its first checkpoint"
            time.sleep(0.05)
        ranks = [p for p in psutil.Process(launcher.pid).children(recursive=True) if "zoo.cli" in " ".join(p.cmdline())]
        assert len(ranks) == 2
        second = _start([sys.executable, *train_args(SFT, out, SLOW, "--resume")], out)  # while the job runs
        refused = second.communicate(timeout=120)
        assert second.returncode == 1 and "being written by another job" in refused[1], refused[1][-2000:]
        launcher.send_signal(signal.SIGKILL)  # the launcher alone: its ranks live in sessions of their own
        launcher.wait()
        gone, alive = psutil.wait_procs(ranks, timeout=20)
        assert not alive, f"ranks {[p.pid for p in alive]} outlived their launcher"
    finally:
        if launcher.poll() is None:
            kill_job(launcher)
    assert not (out / "final").exists()
    shorter = [*SLOW, "training.steps=4"]  # the run's length: recorded in recipe.yaml as a change
    _finish(_start([sys.executable, *train_args(SFT, out, shorter, "--resume")], out))
    assert (out / "final").is_dir()


def test_a_resume_with_other_settings_is_refused_or_recorded_as_a_change(two_step_run: Path, tmp_path: Path,
                                                                         capsys) -> None:  # fmt: skip
    """review-reliability 10.8: ``--resume`` with another learning rate continued silently and rewrote ``recipe.yaml``
    as if the whole run had used it."""
    import yaml

    from zoo.cli import main

    out = shutil.copytree(two_step_run, tmp_path / "run")
    args = [*TWO_STEPS, "--output-dir", str(out)]
    written = (out / "recipe.yaml").read_text()
    changed = [*args, "--set", "training.lr=5e-2", "--resume"]
    assert main(changed) == 1
    assert "training.lr: 0.001 -> 0.05" in capsys.readouterr().err and (out / "recipe.yaml").read_text() == written
    assert main([*args, "--resume"]) == 0  # the same settings continue (here: nothing left to train)
    assert main([*args, "--set", "training.steps=3", "--resume"]) == 0  # a longer run: recorded without asking
    assert main([*changed, "--set", "training.steps=4", "--resume-changes"]) == 0
    recipe = yaml.safe_load((out / "recipe.yaml").read_text())
    assert recipe["training"]["lr"] == 0.05 and recipe["changes"] == [
        {"step": 2, "before": {"training.steps": 2}},
        {"step": 3, "before": {"training.lr": 0.001, "training.steps": 3}}]  # fmt: skip
    assert main(["train", str(out / "recipe.yaml"), "--resume"]) == 0  # the run's own recipe.yaml reads back


@pytest.mark.parametrize("link", ["reward_curve.png", "final", "checkpoint-2", "."])
def test_a_resume_refuses_a_run_directory_with_links_and_writes_nothing_through_them(link: str, two_step_run: Path,
                                                                                      tmp_path: Path,
                                                                                      capsys) -> None:  # fmt: skip
    """review-reliability 10.1, 10.7: ``--resume`` of a handed run directory wrote through its links (a PNG over
    ``~/.bashrc``, weights into a linked ``final``) and resumed a checkpoint linked in from another run."""
    from zoo.cli import main

    real = shutil.copytree(two_step_run, tmp_path / "real")
    target = tmp_path / "elsewhere"
    if link == ".":  # the run directory itself a link
        shutil.move(real, target)
        real.symlink_to(target)
    else:
        shutil.move(real / link, target)
        (real / link).symlink_to(target)
    before = sorted((p.relative_to(tmp_path), p.stat().st_mtime_ns) for p in target.rglob("*")) or target.read_bytes()
    assert main(["train", DIFFUSION_SMOKE, "--set", "training.steps=3", "--output-dir", str(real), "--resume"]) == 1
    assert "is a link to" in capsys.readouterr().err
    assert (sorted((p.relative_to(tmp_path), p.stat().st_mtime_ns) for p in target.rglob("*")) or
            target.read_bytes()) == before  # fmt: skip


def test_a_resume_refuses_a_pipe_in_the_run_directory_instead_of_hanging(two_step_run: Path, tmp_path: Path,
                                                                         capsys) -> None:  # fmt: skip
    """review-reliability 10.2: a FIFO ``metrics.csv`` hung ``--resume`` forever."""
    import os

    from zoo.cli import main

    run = shutil.copytree(two_step_run, tmp_path / "run")
    (run / "metrics.csv").unlink()
    os.mkfifo(run / "metrics.csv")
    assert main(["train", DIFFUSION_SMOKE, "--set", "training.steps=3", "--output-dir", str(run), "--resume"]) == 1
    assert "is not a regular file (a pipe, socket or device)" in capsys.readouterr().err
