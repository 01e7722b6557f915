"""``RenderPool``: warm, walled-in render workers shared by every render reward.

A fresh Python per sample pays the interpreter and matplotlib import (0.7 s a chart on this
project's machine, stack-scout.md §5) for a 50 ms render; a pool pays it once per worker.
The pool is safe to use from a training process: it installs no signal handlers, starts
workers with ``subprocess`` (never forks the trainer), talks to them over pipes with JSON
headers, and bounds every wait, so a wedged worker costs one ``infra`` result and a restart.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from itertools import count
from pathlib import Path

from rewards.rendering.jobs import python_roots
from rewards.rendering.oslevel import Limits
from rewards.rendering.protocol import ChannelClosed, read_message, write_message
from rewards.rendering.result import RenderResult
from rewards.rendering.validate import DEFAULT_KINDS, KINDS, Source, check_request, prepare_source

logger = logging.getLogger(__name__)
#: Job uids are ``uid_base + worker index``: an id range no real account uses, so a job can
#: neither read the user's 0600 files nor signal another worker's job.
DEFAULT_UID_BASE = 2_000_000_000
_START_TIMEOUT = 120.0
_ANSWER_MARGIN = 10.0  # seconds past the job timeout before the worker itself is presumed dead


class _Worker:
    """One worker process and its pipes. Used by one thread at a time (the pool's queue)."""

    def __init__(self, index: int, config: dict) -> None:
        self.index = index
        root = str(Path(__file__).resolve().parents[2])
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "MPLCONFIGDIR")}
        env.update(PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
                   MPLBACKEND="Agg", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   PYTHONDONTWRITEBYTECODE="1",
                   ARROW_DEFAULT_MEMORY_POOL="system")  # jemalloc/mimalloc reserve GBs of address space
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "rewards.rendering.worker", json.dumps(config)],  # -P: no cwd on sys.path
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, start_new_session=True, close_fds=True,
        )
        os.set_blocking(self.proc.stdin.fileno(), False)  # writes are bounded by a deadline
        self.ready: dict | None = None

    def wait_ready(self, timeout: float) -> dict:
        try:
            header, _ = read_message(self.proc.stdout.fileno(), time.monotonic() + timeout)
        except ChannelClosed as err:
            self.kill()
            raise RuntimeError(f"render worker {self.index} did not start: {err}; see its stderr above") from err
        self.ready = header
        return header

    def request(self, header: dict, payload: bytes, wait: float) -> tuple[dict, bytes]:
        deadline = time.monotonic() + wait
        write_message(self.proc.stdin.fileno(), header, payload, deadline)
        return read_message(self.proc.stdout.fileno(), deadline)

    def kill(self) -> None:
        """SIGKILL the worker's session; its server and jobs die with it (PDEATHSIG, PID 1)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._reap()

    def close(self, grace: float = 2.0) -> None:
        """Close stdin (the worker exits after its current job), then kill what is left."""
        try:
            self.proc.stdin.close()
            self.proc.wait(grace)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def _reap(self) -> None:
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            logger.error("render worker %d (pid %d) did not die after SIGKILL", self.index, self.proc.pid)
        self.proc.stdout.close()
        walls = (self.ready or {}).get("walls", {})
        scratch = (self.ready or {}).get("scratch_root")
        if scratch and not walls.get("private_tmp"):  # otherwise it lived in the worker's own tmpfs
            shutil.rmtree(scratch, ignore_errors=True)


class RenderPool:
    """``workers`` warm render processes; :meth:`render` blocks until one is free.

    Args:
        workers: number of worker processes (default ``min(2, cpu_count)``).
        kinds: renderers each worker preloads (default ``"svg"``, ``"matplotlib"``; any of ``KINDS``).
        limits: per-job rlimits (CPU seconds are derived from each call's timeout).
        max_source_bytes: larger sources are refused before they reach a worker.
        isolate: enter namespaces (network, mount, PID); ``False`` only for debugging.
        uid_base: job uid of worker ``i`` is ``uid_base + i`` when running as root.
        tmp_mb: size of each worker's private ``/tmp``.
        audit_hook: install the Python audit hook in jobs (:mod:`rewards.rendering.guard`);
            ``False`` only to test that the OS walls hold on their own.
        preload: extra modules imported once in each worker, so chart code imports them for
            free; pandas is there by default because it imports ctypes, which jobs may not
            (a module that is not installed is skipped).
    """

    def __init__(self, workers: int | None = None, *, kinds: Sequence[str] = DEFAULT_KINDS,
                 limits: Limits | None = None, max_source_bytes: int = 2 * 1024 * 1024, isolate: bool = True,
                 uid_base: int = DEFAULT_UID_BASE, tmp_mb: int = 256, preload: Sequence[str] = ("pandas",),
                 audit_hook: bool = True) -> None:
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown:
            raise ValueError(f"unknown render kinds {unknown}; available: {list(KINDS)}")
        self.workers = workers or min(2, os.cpu_count() or 1)
        self.kinds = tuple(kinds)
        self.max_source_bytes = max_source_bytes
        self._config = {
            "kinds": list(self.kinds), "preload": list(preload), "limits": asdict(limits or Limits()),
            "isolate": isolate, "tmp_mb": tmp_mb, "hide": [str(Path.home())], "audit_hook": audit_hook,
            # the `rewards` package itself, not the checkout around it (which may hold anything)
            "keep_visible": sorted({*python_roots(), str(Path(__file__).resolve().parents[1])}),
        }
        self._uid_base = uid_base
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._ids = count()
        self._started = False
        self._executor: ThreadPoolExecutor | None = None
        self._owner = os.getpid()
        self._finalizer = weakref.finalize(self, _kill_all, self._all, self._owner)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> RenderPool:
        """Start every worker now (in parallel) instead of on the first render."""
        if self._owner != os.getpid():
            self._forget_parent_workers()
        with self._lock:
            if self._started:
                return self
            fresh = [self._spawn(i) for i in range(self.workers)]
            for worker in fresh:
                worker.wait_ready(_START_TIMEOUT)
                self._idle.put(worker)
            self._started = True
            self._log_walls(fresh[0].ready)
        return self

    def close(self) -> None:
        """Stop all workers; the pool can be started again."""
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None
            while self._all:
                self._all.pop().close()
            self._idle = queue.Queue()
            self._started = False

    def __enter__(self) -> RenderPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def isolation(self) -> dict:
        """What the workers really enforce (namespaces, hidden dirs, job uid, problems)."""
        self.start()
        worker = self._all[0]
        return dict(worker.ready["walls"]) if worker.ready else {}

    @property
    def worker_pids(self) -> list[int]:
        return [w.proc.pid for w in self._all]

    # -- rendering ---------------------------------------------------------------------------
    def render(self, kind: str, source: Source, *, size: tuple[int, int] = (256, 256),
               timeout: float = 10.0) -> RenderResult:
        """Render one source; never raises for bad sources, never waits past ``timeout`` + margin."""
        size, timeout = check_request(kind, size, timeout, self.kinds)
        start = time.monotonic()
        payload, problem = prepare_source(kind, source, self.max_source_bytes)
        if problem is not None:
            return RenderResult(None, problem, "invalid", time.monotonic() - start)
        self.start()
        try:
            worker = self._idle.get(timeout=_START_TIMEOUT + timeout)
        except queue.Empty:
            return RenderResult(None, "no render worker is alive (restarts failed; see the log)", "infra",
                                time.monotonic() - start)
        header = {"id": next(self._ids), "kind": kind, "size": list(size), "timeout": timeout}
        try:
            reply, data = worker.request(header, payload, timeout + _ANSWER_MARGIN)
        except (ChannelClosed, OSError, ValueError) as err:
            self._replace(worker)
            return RenderResult(None, f"render worker failed ({err}); it was replaced", "infra",
                                time.monotonic() - start)
        self._idle.put(worker)
        return _to_result(reply, data, size, time.monotonic() - start)

    def render_many(self, kind: str, sources: Sequence[Source], *, size: tuple[int, int] = (256, 256),
                    timeout: float = 10.0) -> list[RenderResult]:
        """Render in parallel across the workers; results keep the order of ``sources``."""
        self.start()
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="render")
            executor = self._executor
        futures = [executor.submit(self.render, kind, s, size=size, timeout=timeout) for s in sources]
        return [f.result() for f in futures]

    # -- internals ---------------------------------------------------------------------------
    def _forget_parent_workers(self) -> None:
        """In a forked child (a DataLoader worker), the pipes belong to the parent's workers:
        leave them alone and start this process's own workers on demand."""
        self._owner = os.getpid()
        self._lock = threading.Lock()
        self._idle = queue.Queue()
        self._all = []
        self._executor = None
        self._started = False
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _kill_all, self._all, self._owner)

    def _spawn(self, index: int) -> _Worker:
        worker = _Worker(index, {**self._config, "uid": self._uid_base + index})
        self._all.append(worker)
        return worker

    def _replace(self, dead: _Worker) -> None:
        logger.warning("render worker %d (pid %d) stopped answering; replacing it", dead.index, dead.proc.pid)
        dead.kill()
        with self._lock:
            if dead in self._all:
                self._all.remove(dead)
            fresh = self._spawn(dead.index)
        try:
            fresh.wait_ready(_START_TIMEOUT)
        except RuntimeError:
            logger.exception("could not restart render worker %d", dead.index)
            with self._lock:
                self._all.remove(fresh)
            return
        self._idle.put(fresh)

    @staticmethod
    def _log_walls(ready: dict | None) -> None:
        walls = (ready or {}).get("walls", {})
        for problem in walls.get("problems", []):
            logger.warning("render sandbox is weaker than intended: %s", problem)
        logger.info("render sandbox: %s", walls)


def _to_result(reply: dict, data: bytes, size: tuple[int, int], elapsed: float) -> RenderResult:
    if reply.get("status") != "ok":
        return RenderResult(None, reply.get("error", "unknown render failure"), reply.get("status", "infra"), elapsed)
    from PIL import Image

    return RenderResult(Image.frombytes("RGB", size, data), None, "ok", elapsed)


def _kill_all(workers: list[_Worker], owner: int) -> None:
    """Finaliser: a pool dropped or left open at exit still takes its workers with it
    (only in the process that started them, never in a forked child)."""
    if os.getpid() != owner:
        return
    while workers:
        workers.pop().kill()
