"""Helpers of the resume tests: a run directory as a kill would have left it, run comparisons, a tampered state."""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from zoo.runs import COMPLETE_MARKER, checkpoint_step


def interrupted_copy(run_dir: Path, dest: Path, step: int, *, half_written: int = 0) -> Path:
    """A copy of the finished ``run_dir`` as it stood when the run was killed just after ``checkpoint-<step>``.

    Later checkpoints and ``final/`` are removed; with ``half_written`` the next checkpoint stays, without its
    marker and with that many extra files (as a kill during its write leaves it, its deletion made slow).
    Later ``metrics.csv`` rows stay: a resumed run drops them itself. The schedule is the finished run's own,
    so a resume from the copy must reproduce the rest of it exactly.
    """
    shutil.copytree(run_dir, dest)
    shutil.rmtree(dest / "final")
    later = sorted((p for p in dest.glob("checkpoint-*") if checkpoint_step(p) > step), key=checkpoint_step)
    for index, folder in enumerate(later):
        if index == 0 and half_written:
            (folder / COMPLETE_MARKER).unlink()
            for n in range(half_written):
                (folder / f"part-{n}").write_bytes(b"x")
        else:
            shutil.rmtree(folder)
    return dest


def metric_rows(run_dir: Path) -> list[dict[str, str]]:
    """``metrics.csv`` rows, every cell but ``cpu_minutes`` (which measures the machine, not the run)."""
    with (run_dir / "metrics.csv").open(newline="") as f:
        return [{k: v for k, v in row.items() if k != "cpu_minutes"} for row in csv.DictReader(f)]


def logged_digest(log: str) -> str:
    """The 16 hex digits of the weights digest a data-parallel job logged once its ranks compared their weights
    (:meth:`~zoo.distributed.DataParallel.check_same_weights`): a prefix of the digest of the weights rank 0 saved."""
    return log.split("weights identical on all 2 ranks (sha256 ")[1][:16]


def assert_same_tensors(a: Path, b: Path) -> None:
    """Two safetensors files hold the same names and bit-equal tensors."""
    first, second = load_file(str(a)), load_file(str(b))
    assert first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first), (a, b)


def assert_same_final(a: Path, b: Path) -> None:
    """Two runs' ``final/`` folders hold the same files (a ``model.safetensors`` among them), byte for byte."""
    files = sorted(p.name for p in (a / "final").iterdir())
    assert files == sorted(p.name for p in (b / "final").iterdir()) and "model.safetensors" in files
    for file in files:
        assert (a / "final" / file).read_bytes() == (b / "final" / file).read_bytes(), file


def rewrite_state(path: Path, state: Any) -> None:
    """Replace a complete checkpoint's state file and record its new size in the marker, so the checkpoint
    still passes the size check (as a tampered handed directory would)."""
    torch.save(state, path)
    marker = path.parent / COMPLETE_MARKER
    record = json.loads(marker.read_text())
    record["sizes"][path.name] = os.path.getsize(path)
    marker.write_text(json.dumps(record))


class Payload:
    """Unpickling this writes ``marker``: what a crafted state file in a handed run directory would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple:
        return exec, (f"open({self.marker!r}, 'w').write('ran during --resume')",)
