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
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from itertools import count
from pathlib import Path
from typing import Self

from rewards.rendering.batching import BATCHED_KINDS, DEFAULT_MAX_BATCH, chunks
from rewards.rendering.cgroups import ENV_VAR as CGROUP_ENV_VAR
from rewards.rendering.cgroups import remove_cgroup
from rewards.rendering.jobs import python_roots
from rewards.rendering.oslevel import Limits
from rewards.rendering.protocol import ChannelClosed, read_message, write_message
from rewards.rendering.result import INFRA_STATUSES, MODEL_FAILURE_STATUSES, RenderResult
from rewards.rendering.validate import (
    DEFAULT_KINDS,
    KINDS,
    RendererUnavailableError,
    Source,
    check_installed,
    check_request,
    prepare_source,
)

logger = logging.getLogger(__name__)
#: Job uids are ``uid_base + worker index``: an id range no real account uses, so a job can
#: neither read the user's 0600 files nor signal another worker's job.
DEFAULT_UID_BASE = 2_000_000_000
_START_TIMEOUT = 120.0
_CHECKOUT = Path(__file__).resolve().parents[2]
_WORKER_PACKAGES = ("rewards", "zoo_common")  # what `python -m rewards.rendering.worker` imports
_ANSWER_MARGIN = 10.0  # seconds past the job timeout before the worker itself is presumed dead


class _Worker:
    """One worker process and its pipes. Used by one thread at a time (the pool hands it out)."""

    def __init__(self, index: int, config: dict) -> None:
        self.index = index
        root = str(_CHECKOUT)
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
        if not header.get("ready"):
            self.kill()
            missing = str(header.get("error"))
            raise RuntimeError(
                f"render worker {self.index} cannot raise its sandbox walls, missing: {missing}. "
                f"Model-written code will not run without them{_remedy(missing)}; "
                "RenderPool(isolate=False) is only for trusted code in tests.")
        self.ready = header
        return header

    def request(self, header: dict, payload: bytes, wait: float) -> tuple[dict, bytes]:
        deadline = time.monotonic() + wait
        write_message(self.proc.stdin.fileno(), header, payload, deadline)
        return read_message(self.proc.stdout.fileno(), deadline)

    def kill(self) -> None:
        """SIGKILL the worker's session; its server and jobs die with it (PDEATHSIG, PID 1)."""
        if self.proc.returncode is None:  # once reaped, the pid may belong to someone else
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
        remove_cgroup((self.ready or {}).get("cgroup"))  # left behind when the worker was killed


class RenderPool:
    """``workers`` warm render processes; :meth:`render` blocks until one is free.

    Args:
        workers: number of worker processes (default ``min(2, cpu_count)``).
        kinds: renderers each worker preloads (default ``"svg"``, ``"matplotlib"``; any of ``KINDS``).
        limits: per-job rlimits (CPU seconds are derived from each call's timeout).
        max_source_bytes: larger sources are refused before they reach a worker.
        isolate: enter namespaces (user, network, mount, IPC, PID) and refuse to start without
            them; ``False`` (no walls at all) only for trusted code in tests and debugging.
        uid_base: job uid of worker ``i`` is ``uid_base + i`` when running as root.
        tmp_mb: size of each worker's private ``/tmp``.
        audit_hook: install the Python audit hook in jobs (:mod:`rewards.rendering.guard`);
            ``False`` only to test that the OS walls hold on their own.
        preload: extra modules imported once in each worker, so chart code imports them for
            free; by default pandas for pools serving a kind that runs code (it imports ctypes,
            which jobs may not), nothing for SVG-only pools, whose jobs it would only slow down
            (every job forks the worker: a larger worker is a slower fork). A module that is not
            installed is skipped.
        max_batch: most sources of a data kind (SVG) one job renders in :meth:`render_many`
            (:mod:`rewards.rendering.batching`); 1 gives every source a job of its own.
        cgroup: a cgroup v2 directory delegated to this user, under which each job gets a
            cgroup capping its processes' memory and number together (default: the
            ``ZOO_RENDER_CGROUP`` environment variable; see :mod:`rewards.rendering.cgroups`).
            Without one, the rlimits alone apply and the pool logs a warning saying so.
    """

    def __init__(self, workers: int | None = None, *, kinds: Sequence[str] = DEFAULT_KINDS, limits: Limits | None = None,
                 max_source_bytes: int = 2 * 1024 * 1024, isolate: bool = True, uid_base: int = DEFAULT_UID_BASE,
                 tmp_mb: int = 256, preload: Sequence[str] | None = None, audit_hook: bool = True,
                 cgroup: str | None = None, max_batch: int = DEFAULT_MAX_BATCH) -> None:
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown:
            raise ValueError(f"unknown render kinds {unknown}; available: {list(KINDS)}")
        check_installed(kinds)
        self.workers = workers or min(2, os.cpu_count() or 1)
        self.kinds = tuple(kinds)
        self.max_source_bytes = max_source_bytes
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.max_batch = max_batch
        if preload is None:
            preload = () if set(self.kinds) <= BATCHED_KINDS else ("pandas",)
        self._config = {
            "kinds": list(self.kinds), "preload": list(preload), "limits": asdict(limits or Limits()),
            "isolate": isolate, "tmp_mb": tmp_mb, "hide": [str(Path.home()), str(_CHECKOUT)],
            "audit_hook": audit_hook, "cgroup": cgroup or os.environ.get(CGROUP_ENV_VAR),
            # the packages a worker imports, not the checkout around them (which may hold anything)
            "keep_visible": sorted({*(p for p in python_roots() if not _is_within(_CHECKOUT, p)),
                                    *(str(_CHECKOUT / name) for name in _WORKER_PACKAGES)}),
        }
        self._uid_base = uid_base
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._missing: list[int] = []  # worker slots to (re)start on demand
        self._busy = 0  # renders holding a worker, and worker starts under way
        self._all: list[_Worker] = []
        self._closing = False
        self._ids = count()
        self._started = False
        self._unavailable: dict[str, str] = {}  # kinds the workers could not import a renderer for, and why
        self._executor: ThreadPoolExecutor | None = None
        self._counts: Counter[str] = Counter()
        self._owner = os.getpid()
        self._finalizer = weakref.finalize(self, _kill_all, self._all, self._owner)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Self:
        """Start every worker now (in parallel) instead of on the first render.

        Raises ``RuntimeError`` naming what is missing when a worker cannot start or cannot
        raise its walls (see :mod:`rewards.rendering.oslevel`).
        """
        if self._owner != os.getpid():
            self._forget_parent_workers()
        with self._cond:
            if self._started:
                return self
            while self._busy:  # a close() still stopping renders; start after it
                self._cond.wait()
            fresh = [self._spawn(i) for i in range(self.workers)]
            try:
                for worker in fresh:
                    worker.wait_ready(_START_TIMEOUT)
            except BaseException:
                for worker in fresh:
                    worker.kill()
                self._all.clear()
                raise
            self._idle, self._missing, self._closing, self._started = fresh, [], False, True
            self._unavailable = dict(fresh[0].ready.get("unavailable") or {})
            self._log_walls(fresh[0].ready)
        return self

    def close(self, wait: float = _START_TIMEOUT) -> None:
        """Stop all workers, waiting (up to ``wait`` s) for renders in flight; the pool can be
        started again. A render still running after ``wait`` has its worker killed and returns
        ``infra``."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        with self._cond:
            self._cond.wait_for(lambda: self._busy == 0, wait)
            workers, self._idle, self._missing = list(self._all), [], []
            self._all.clear()
            self._started = False
        for worker in workers:
            worker.close()
        self._log_failures()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def isolation(self) -> dict:
        """What the workers really enforce (namespaces, hidden dirs, job uid, problems)."""
        self.start()
        with self._cond:
            ready = next((w.ready for w in self._all if w.ready), None)
        return dict(ready["walls"]) if ready else {}

    @property
    def worker_pids(self) -> list[int]:
        with self._cond:
            return [w.proc.pid for w in self._all]

    @property
    def failure_counts(self) -> dict[str, int]:
        """Renders so far by status, plus ``model_failure`` and ``infra_failure`` totals (the
        two rates a training run should watch apart: see :mod:`rewards.rendering.result`)."""
        with self._cond:
            counts = dict(self._counts)
        counts["model_failure"] = sum(counts.get(s, 0) for s in MODEL_FAILURE_STATUSES)
        counts["infra_failure"] = sum(counts.get(s, 0) for s in INFRA_STATUSES)
        return counts

    # -- rendering ---------------------------------------------------------------------------
    def render(self, kind: str, source: Source, *, size: tuple[int, int] = (256, 256),
               timeout: float = 10.0) -> RenderResult:
        """Render one source; never raises for bad sources, never waits past ``timeout`` + margin
        (plus a worker start when one has to be replaced)."""
        size, timeout = check_request(kind, size, timeout, self.kinds)
        start = time.monotonic()
        payload, problem = prepare_source(kind, source, self.max_source_bytes)
        if problem is not None:
            return self._count(RenderResult(None, problem, "invalid", time.monotonic() - start))
        self._start_for(kind)
        try:
            worker = self._acquire(start + _START_TIMEOUT + timeout)
        except _NoWorker as err:
            return self._count(RenderResult(None, str(err), "infra", time.monotonic() - start))
        healthy = False
        try:
            header = {"id": next(self._ids), "kind": kind, "size": list(size), "timeout": timeout}
            try:
                reply, data = worker.request(header, payload, timeout + _ANSWER_MARGIN)
            except (ChannelClosed, OSError, ValueError) as err:
                logger.warning("render worker %d (pid %d) stopped answering (%s); it will be replaced",
                               worker.index, worker.proc.pid, err)
                return self._count(RenderResult(None, f"render worker failed ({err}); it was replaced", "infra",
                                                time.monotonic() - start))
            healthy = True
        finally:  # an interrupt mid-request leaves the worker's stream unknown: it is replaced too
            self._release(worker, healthy)
        return self._count(_to_result(reply, data, size, time.monotonic() - start))

    def render_many(self, kind: str, sources: Sequence[Source], *, size: tuple[int, int] = (256, 256),
                    timeout: float = 10.0) -> list[RenderResult]:
        """Render in parallel across the workers; results keep the order of ``sources``.

        Data kinds (SVG) go in batches of at most ``max_batch`` per job (:meth:`render_batch`),
        spread over the workers; code kinds get one job per source."""
        self._start_for(kind)
        with self._cond:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="render")
            executor = self._executor
        if kind in BATCHED_KINDS and self.max_batch > 1 and len(sources) > 1:
            parts = [[sources[i] for i in part] for part in chunks(len(sources), self.workers, self.max_batch)]
            futures = [executor.submit(self.render_batch, kind, part, size=size, timeout=timeout) for part in parts]
            return [result for future in futures for result in future.result()]
        futures = [executor.submit(self.render, kind, s, size=size, timeout=timeout) for s in sources]
        return [f.result() for f in futures]

    def render_batch(self, kind: str, sources: Sequence[Source], *, size: tuple[int, int] = (256, 256),
                     timeout: float = 10.0) -> list[RenderResult]:
        """Render the sources of a data kind in one job on one worker, each within ``timeout`` s.

        A job that stops partway keeps what it settled; the sample it stopped at is rendered
        again alone and scored on that render only, the rest go on in a new batch (the rule is
        spelled out in :mod:`rewards.rendering.batching`)."""
        size, timeout = check_request(kind, size, timeout, self.kinds)
        if kind not in BATCHED_KINDS:
            raise ValueError(f"render kind {kind!r} runs code, one job per source; batches take {sorted(BATCHED_KINDS)}")
        self._start_for(kind)
        start = time.monotonic()
        results: list[RenderResult | None] = [None] * len(sources)
        payloads: dict[int, bytes] = {}
        for i, source in enumerate(sources):
            payload, problem = prepare_source(kind, source, self.max_source_bytes)
            if problem is None:
                payloads[i] = payload
            else:
                results[i] = self._count(RenderResult(None, problem, "invalid", time.monotonic() - start))
        pending = list(payloads)
        while len(pending) > 1:
            settled, unsettled = self._batch_job(kind, [payloads[i] for i in pending], size, timeout)
            for i, result in zip(pending, settled):
                results[i] = self._count(result)
            if unsettled is None:
                return results
            logger.info("render batch stopped at %s; rendering that sample alone", unsettled)
            pending = pending[len(settled):]
            results[pending[0]] = self.render(kind, sources[pending[0]], size=size, timeout=timeout)
            pending = pending[1:]
        if pending:
            results[pending[0]] = self.render(kind, sources[pending[0]], size=size, timeout=timeout)
        return results

    # -- internals ---------------------------------------------------------------------------
    def _start_for(self, kind: str) -> None:
        """Start the workers; :class:`RendererUnavailableError` if they could not import ``kind``'s renderer
        (a missing C library is a machine's setup, not a sample's failure: no render of it is attempted)."""
        self.start()
        if kind in self._unavailable:
            raise RendererUnavailableError(kind, self._unavailable[kind])

    def _batch_job(self, kind: str, payloads: list[bytes], size: tuple[int, int],
                   timeout: float) -> tuple[list[RenderResult], str | None]:
        """One batch job: the results it settled (a prefix of ``payloads``) and why it stopped, if it did.
        No worker at all makes every sample ``infra``, as :meth:`render` does."""
        start = time.monotonic()
        self.start()
        try:
            worker = self._acquire(start + _START_TIMEOUT + timeout)
        except _NoWorker as err:
            return [RenderResult(None, str(err), "infra", time.monotonic() - start) for _ in payloads], None
        healthy = False
        try:
            header = {"id": next(self._ids), "kind": kind, "size": list(size), "timeout": timeout,
                      "batch": [len(p) for p in payloads]}
            try:
                reply, data = worker.request(header, b"".join(payloads), timeout * len(payloads) + _ANSWER_MARGIN)
                settled = _batch_results(reply, data, size, len(payloads), time.monotonic() - start)
            except (ChannelClosed, OSError, ValueError) as err:
                logger.warning("render worker %d (pid %d) failed a batch (%s); it will be replaced",
                               worker.index, worker.proc.pid, err)
                return [], f"sample 0: render worker failed ({err})"
            healthy = True
        finally:
            self._release(worker, healthy)
        if len(settled) == len(payloads):
            return settled, None
        return settled, reply.get("unsettled") or f"sample {len(settled)}: the batch answer ended early"

    def _acquire(self, deadline: float) -> _Worker:
        """An idle worker, or a freshly started one in a lost worker's slot."""
        with self._cond:
            while not (self._idle or self._missing or self._closing):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _NoWorker("no render worker became free in time")
                self._cond.wait(left)
            if self._closing:
                raise _NoWorker("the render pool was closed while this render waited")
            self._busy += 1
            if self._idle:
                return self._idle.pop()
            index = self._missing.pop(0)
            worker = self._spawn(index)
        try:
            worker.wait_ready(_START_TIMEOUT)
        except BaseException as err:
            self._release(worker, healthy=False)
            if isinstance(err, RuntimeError):
                raise _NoWorker(f"could not restart render worker {index}: {err}") from err
            raise
        return worker

    def _release(self, worker: _Worker, healthy: bool) -> None:
        """Give a worker back; an unhealthy one is killed and its slot restarted on demand."""
        if not healthy:
            worker.kill()
        with self._cond:
            self._busy -= 1
            owned = worker in self._all  # False when close() gave up waiting and stopped it
            if healthy and owned:
                self._idle.append(worker)
            elif owned:
                self._all.remove(worker)
                if not self._closing:
                    self._missing.append(worker.index)
            self._cond.notify_all()
        if healthy and not owned:
            worker.close()

    def _count(self, result: RenderResult) -> RenderResult:
        with self._cond:
            self._counts[result.status] += 1
        return result

    def _log_failures(self) -> None:
        counts = self.failure_counts
        total = sum(counts.get(s, 0) for s in ("ok", *MODEL_FAILURE_STATUSES, *INFRA_STATUSES))
        if total:
            logger.info("render pool: %d renders, %.1f%% model failures (scored), %.1f%% infrastructure "
                        "failures (masked)", total, 100 * counts["model_failure"] / total,
                        100 * counts["infra_failure"] / total)

    def _forget_parent_workers(self) -> None:
        """In a forked child (a DataLoader worker), the pipes belong to the parent's workers:
        leave them alone and start this process's own workers on demand."""
        self._owner = os.getpid()
        self._cond = threading.Condition()
        self._idle, self._missing, self._busy, self._closing = [], [], 0, False
        self._all = []
        self._executor = None
        self._started = False
        self._counts = Counter()
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _kill_all, self._all, self._owner)

    def _spawn(self, index: int) -> _Worker:
        worker = _Worker(index, {**self._config, "uid": self._uid_base + index})
        self._all.append(worker)
        return worker

    @staticmethod
    def _log_walls(ready: dict | None) -> None:
        walls = (ready or {}).get("walls", {})
        logger.info("render sandbox: %s", walls)
        for fallback in walls.get("fallbacks", []):
            logger.warning("render sandbox: %s", fallback)


class _NoWorker(RuntimeError):
    """No worker could serve a render (all lost and not restartable, or the pool closed)."""


def _to_result(reply: dict, data: bytes, size: tuple[int, int], elapsed: float) -> RenderResult:
    if reply.get("status") != "ok":
        return RenderResult(None, reply.get("error", "unknown render failure"), reply.get("status", "infra"), elapsed)
    from PIL import Image

    return RenderResult(Image.frombytes("RGB", size, data), None, "ok", elapsed)


def _batch_results(reply: dict, data: bytes, size: tuple[int, int], count: int, elapsed: float) -> list[RenderResult]:
    """The settled samples of a batch reply; ``ValueError`` when the reply does not add up."""
    from PIL import Image

    statuses, image_bytes = reply.get("results"), size[0] * size[1] * 3
    if reply.get("status") != "ok" or not isinstance(statuses, list) or len(statuses) > count:
        raise ValueError(f"malformed batch reply {str(reply)[:200]}")
    if sum(r.get("status") == "ok" for r in statuses) * image_bytes != len(data):
        raise ValueError(f"batch reply carries {len(data)} image bytes for {len(statuses)} results")
    out, offset = [], 0
    for r in statuses:
        if r.get("status") == "ok":
            out.append(RenderResult(Image.frombytes("RGB", size, data[offset:offset + image_bytes]), None, "ok", elapsed))
            offset += image_bytes
        else:
            out.append(RenderResult(None, r.get("error", "render failed"), "invalid", elapsed))
    return out


def _remedy(missing: str) -> str:
    """What to do about the missing walls, said only where it applies: the user-namespace sysctl
    helps when namespaces were refused, not when a mount of this layout could not be locked."""
    if "no namespaces" in missing or "user namespace" in missing:
        return (": on Linux, allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or "
                "kernel.apparmor_restrict_unprivileged_userns=0) or run as root")
    return ". Please report this layout (the mounts named above) as a bug of the zoo's sandbox"


def _is_within(path: Path, root: str) -> bool:
    """True when ``path`` is ``root`` or lies inside it."""
    return path == Path(root) or Path(root) in path.parents


def _kill_all(workers: list[_Worker], owner: int) -> None:
    """Finaliser: a pool dropped or left open at exit still takes its workers with it
    (only in the process that started them, never in a forked child)."""
    if os.getpid() != owner:
        return
    while workers:
        workers.pop().kill()
