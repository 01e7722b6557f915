"""Multi-process launches of ``zoo train`` as users type them: ``torchrun`` on one machine, two "nodes" meeting
at a rendezvous on 127.0.0.1, and a whole job killed with SIGKILL once a checkpoint is complete.

Every launch runs on the CPU with gloo, one thread per process (the CI machine has two cores), offline.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from zoo.runs import is_complete

ROOT = Path(__file__).parents[2]
TORCHRUN = Path(sys.executable).with_name("torchrun")
needs_torchrun = pytest.mark.skipif(
    not (torch.distributed.is_available() and torch.distributed.is_gloo_available() and TORCHRUN.is_file()),
    reason="needs torch.distributed with gloo and torchrun",
)
#: The tiny GUI SFT the multi-process tests launch (a 32-wide, one-layer model: seconds a run), and its settings.
TINY_SFT = "domains/gui/recipes/gui-g1-tiny-sft.yaml"
TINY_SFT_SETTINGS = [
    "model.tiny.hidden=32", "model.tiny.layers=1", "model.tiny.vision_hidden=32", "model.tiny.vocab_size=300",
    "data.corpus_kwargs.n=16", "training.batch_size=4", "training.save_steps=2",
]  # fmt: skip
ENV = {"ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "CUDA_VISIBLE_DEVICES": ""}  # fmt: skip


def train_args(recipe: str | Path, output_dir: Path, settings: list[str], *extra: str) -> list[str]:
    """``-m zoo.cli train RECIPE --set ... --output-dir DIR [extra]``."""
    overrides = [arg for s in settings for arg in ("--set", s)]
    return ["-m", "zoo.cli", "train", str(recipe), *overrides, "--output-dir", str(output_dir), *extra]


def _start(command: list[str], output_dir: Path) -> subprocess.Popen:
    """The launch, its temporary files (torchrun's ``torchelastic_*`` folders, which a killed launcher leaves
    behind) beside ``output_dir`` in pytest's own temporary tree rather than in the machine's ``/tmp``."""
    scratch = output_dir.parent / f"{output_dir.name}-tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(command, cwd=ROOT, env={**os.environ, **ENV, "TMPDIR": str(scratch)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip


def _finish(process: subprocess.Popen, timeout: float = 300) -> subprocess.CompletedProcess:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out, err = kill_job(process)
        pytest.fail(f"{process.args} ran past {timeout} s:\n{err[-3000:]}")
    done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def torchrun(recipe: str | Path, output_dir: Path, settings: list[str], *extra: str,
             nproc: int = 2) -> subprocess.CompletedProcess:  # fmt: skip
    """``torchrun --standalone --nproc_per_node N -m zoo.cli train ...`` (a free port each time), checked to exit 0."""
    command = [str(TORCHRUN), "--standalone", "--nproc_per_node", str(nproc),
               *train_args(recipe, output_dir, settings, *extra)]  # fmt: skip
    return _finish(_start(command, output_dir))


def in_this_process(recipe: str | Path, output_dir: Path, settings: list[str], *extra: str) -> None:
    """The same run in the test's own process (:func:`zoo.cli.main`), checked to exit 0: for a reference run, or a
    resumption in one process, whose launch is not what a test checks. A fresh interpreter spends about 8 CPU-seconds
    importing torch and transformers before its first step, which the test process has already paid."""
    from zoo.cli import main

    assert main(train_args(ROOT / recipe, output_dir, settings, *extra)[2:]) == 0


def two_nodes(recipe: str | Path, output_dir: Path, settings: list[str], *extra: str) -> list[subprocess.CompletedProcess]:
    """Two ``torchrun --nnodes 2 --nproc_per_node 1`` launches (node ranks 0 and 1) meeting at a c10d rendezvous on
    127.0.0.1, as two machines of a cluster would; the run directory is shared, as on a cluster's shared disk."""
    port = free_port()
    launches = [_start([str(TORCHRUN), "--nnodes", "2", "--nproc_per_node", "1", "--node_rank", str(node),
                        "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{port}", "--rdzv_id", "zoo-test",
                        *train_args(recipe, output_dir, settings, *extra)], output_dir)
                for node in (0, 1)]  # fmt: skip
    return [_finish(launch) for launch in launches]


def killed_after(recipe: str | Path, output_dir: Path, settings: list[str], checkpoint: int, *, nproc: int = 2) -> None:
    """Start the ``torchrun`` job and SIGKILL its whole process group as soon as ``checkpoint-<checkpoint>`` is
    complete (``kill -9`` of the launcher and every rank: nothing gets to clean up)."""
    command = [str(TORCHRUN), "--standalone", "--nproc_per_node", str(nproc),
               *train_args(recipe, output_dir, settings)]  # fmt: skip
    process = _start(command, output_dir)
    folder = output_dir / f"checkpoint-{checkpoint}"
    deadline = time.monotonic() + 300
    while not is_complete(folder):
        if process.poll() is not None:
            pytest.fail(f"the job ended (rc {process.returncode}) before {folder.name} was complete:\n"
                        f"{process.stderr.read()[-3000:]}")  # fmt: skip
        if time.monotonic() > deadline:
            kill_job(process)
            pytest.fail(f"{folder.name} not complete after 300 s")
        time.sleep(0.02)
    kill_job(process)
    assert process.returncode == -signal.SIGKILL
    assert not (output_dir / "final").exists(), "the job finished before the kill: give it more steps"


def kill_job(process: subprocess.Popen) -> tuple[str, str]:
    """SIGKILL the launcher and every process under it, at once. torchrun starts its workers in process groups
    of their own, so killing the launcher's group alone would leave the ranks training as orphans. Returns what the
    job had printed (stdout, stderr)."""
    import psutil

    launcher = psutil.Process(process.pid)
    for proc in [*launcher.children(recursive=True), launcher]:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.send_signal(signal.SIGKILL)
    return process.communicate()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the rendezvous of :func:`two_nodes` binds it a moment later)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
