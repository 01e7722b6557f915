"""One job owns a run directory: a lock held for the job's life, and ranks that die with their launcher.

Two jobs writing one run directory interleave their ``metrics.csv`` rows and checkpoints and both report success
(review-reliability 9.1, 9.2). Two things prevent it:

* :func:`hold_run_dir`: the job's main process takes an exclusive ``flock`` on ``<run dir>/.zoo-job.lock`` before it
  writes anything and keeps it until it ends; the kernel releases it when the process dies, however it dies, so a
  lock is never stale. A second job on the same directory is refused with one sentence naming the holder.
* :func:`die_with_launcher`: ``torchrun`` starts each rank in a session of its own, so ``kill -9`` of the launcher
  (or of its process group) leaves the ranks training as orphans, writing checkpoints and ``final/``. Each rank asks
  the kernel to kill it when its parent dies (Linux ``PR_SET_PDEATHSIG``); the last complete checkpoint is atomic,
  so nothing of value dies with it.

And a Ctrl-C stops the job: :func:`insistent_interrupts` repeats it until it lands (CPython drops one raised inside a
finalizer).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

logger = logging.getLogger(__name__)

#: The lock file inside a run directory (its content names the holder; its lock is what counts).
LOCK_FILE = ".zoo-job.lock"
#: The most of a lock file read back to name its holder.
_HOLDER_BYTES = 1024


class RunDirBusyError(RuntimeError):
    """Another job holds the run directory."""


@contextlib.contextmanager
def hold_run_dir(run_dir: Path, *, main: bool = True) -> Iterator[None]:
    """Hold ``run_dir`` for the block (created when missing): an exclusive lock the main process (``main``) takes,
    released when the block ends or the process dies. :class:`RunDirBusyError` when another job holds it."""
    if not main:
        yield
        return
    import fcntl

    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)  # a link there is refused
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, _HOLDER_BYTES, 0).decode("utf-8", "replace").strip() or "a process that wrote nothing"
            raise RunDirBusyError(f"{run_dir} is being written by another job ({holder}); wait for it to end or stop "
                                  "it, or choose another --output-dir") from None  # fmt: skip
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}: {' '.join(sys.argv)[:800]}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def die_with_launcher() -> None:
    """Under ``torchrun`` (``TORCHELASTIC_RUN_ID`` set), have the kernel kill this rank when its launcher dies; a
    no-op elsewhere (a plain process keeps running when its shell goes, as ``nohup`` expects) and off Linux."""
    if "TORCHELASTIC_RUN_ID" not in os.environ or not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    parent = os.getppid()
    pr_set_pdeathsig = 1  # <linux/prctl.h>
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0) != 0:
        logger.warning("could not ask to die with the launcher (prctl errno %d)", ctypes.get_errno())
        return
    if os.getppid() != parent:  # the launcher died before the request took effect
        os._exit(1)


#: Seconds between the repeats of a Ctrl-C that has not yet stopped the block (:func:`insistent_interrupts`).
INTERRUPT_REPEAT_S = 5.0


@contextlib.contextmanager
def insistent_interrupts(period: float = INTERRUPT_REPEAT_S) -> Iterator[None]:
    """Within the block, a Ctrl-C raises :class:`KeyboardInterrupt` as Python's own handler does, and again every
    ``period`` seconds until the block ends.

    CPython drops an exception raised inside a finalizer (a ``__del__`` or a weakref callback the garbage collector
    runs: "Exception ignored in ..." on stderr), a KeyboardInterrupt included; a Ctrl-C landing there is lost and the
    run trains on (seen once in the test suite: a diffusion run still training 120 s after its Ctrl-C). The repeat
    is the second Ctrl-C the user would otherwise have to type. A no-op outside the main thread and where SIGINT is
    not Python's (ignored, as for a job started in the background, or handled by someone else)."""
    import _thread
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    # "sent": repeats tripped (the repeater alone writes it); "seen": as many handled; "ended": the block is over (set
    # first in the finally, a plain store that no pending signal can run ahead of)
    state = {"sent": 0, "seen": 0, "ended": False}
    stop = threading.Event()
    repeater: list[threading.Thread] = []

    def repeat() -> None:
        while not stop.wait(period):
            state["sent"] += 1
            _thread.interrupt_main()  # runs on_sigint in the main thread, as a real Ctrl-C would

    def on_sigint(signum: int, frame: object) -> None:
        state["seen"] = state["sent"]  # trips that came close together run the handler once
        if state["ended"]:  # a repeat tripped as the block ended: nothing left to stop
            return
        if not repeater:
            repeater.append(threading.Thread(target=repeat, name="zoo-interrupt-repeat", daemon=True))
            repeater[0].start()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        state["ended"] = True
        stop.set()
        if repeater:
            repeater[0].join()
            while state["seen"] < state["sent"]:  # a repeat still pending runs on_sigint here, not Python's handler
                pass
        signal.signal(signal.SIGINT, signal.default_int_handler)
