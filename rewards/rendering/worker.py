"""A warm render worker: ``python -m rewards.rendering.worker '<json config>'``.

Started once by :class:`rewards.rendering.pool.RenderPool`. It imports the renderers, walls
itself in (:func:`rewards.rendering.oslevel.enter_worker_namespaces`), then serves jobs read
from stdin: each job is a forked child (fork-server pattern, so the warm imports are shared
and nothing leaks from one job to the next) that becomes PID 1 of its own PID namespace,
drops to the job uid, takes hard rlimits and the audit hook, and writes raw RGB bytes or an
error message to a pipe. The worker kills the child at the deadline, whatever it is doing.

Being PID 1 of its namespace, a job ignores signals it sends itself with a default action
(``signal.raise_signal(SIGSEGV)`` is a no-op); real faults (a NULL read) still kill it, and the
worker's kill comes from the parent namespace, so it always lands.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from typing import Any

from rewards.rendering import batching, cgroups, guard, jobs, oslevel, scrub
from rewards.rendering.protocol import ChannelClosed, read_message, write_message

logger = logging.getLogger(__name__)
_ERROR_BYTES = batching.ERROR_BYTES
_EXIT_GRACE = 0.5  # seconds a job that closed its pipe gets to exit before it counts as lingering


@dataclass
class _Context:
    scratch_root: str
    uid: int | None
    limits: oslevel.Limits
    address_space_base: int
    read_roots: list[str]
    pid_namespaces: oslevel.PidNamespaceFactory | None
    audit_hook: bool
    isolated: bool
    private_dirs: list[str]  # the worker's own tmpfs mounts, restored after each job
    baseline: dict[str, scrub.Identity]
    cgroups: cgroups.WorkerCgroups | None


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    proto_in, proto_out = 0, os.dup(1)
    os.dup2(2, 1)  # a stray print() must never corrupt the protocol stream
    # namespaces first: a preload may start a thread (pyarrow), and then a user namespace is refused
    walls = oslevel.unshare_namespaces() if config["isolate"] else oslevel.Walls(
        problems=["isolation disabled by the caller (isolate=False)"])
    unavailable = {}  # kinds whose renderer cannot be imported here: the pool refuses them, the others still serve
    for kind in config["kinds"]:
        try:
            jobs.PRELOADERS[kind]()
        except (ImportError, OSError) as err:  # a missing C library (libcairo) surfaces as OSError at import
            first_line = (str(err).strip().splitlines() or [""])[0]
            unavailable[kind] = f"{type(err).__name__}: {first_line}"
    for name in config.get("preload", []):
        try:
            __import__(name)
        except ImportError as err:
            logger.info("render worker: %s not preloaded: %s", name, err)
    job_cgroups = _job_cgroups(config, walls) if config["isolate"] else None
    # resolved while the whole file system is still in view: behind the walls a symlinked .venv
    # (or a prefix reached through the hidden checkout) no longer resolves to the real paths the
    # kept binds and matplotlib's font cache use
    read_roots = sorted({os.path.realpath(root) for root in jobs.read_roots()})
    _isolate(config, walls, hide_cgroups=job_cgroups is not None)
    missing = walls.missing() if config["isolate"] else []
    if missing:
        if job_cgroups is not None:
            job_cgroups.close()
        write_message(proto_out, {"ready": False, "error": "; ".join(missing), "walls": asdict(walls)})
        return 1
    real_root = os.geteuid() == 0 and not walls.user_namespace
    walls.job_uid = config["uid"] if real_root else None
    scratch_root = tempfile.mkdtemp(prefix="zoo-render-")
    os.chmod(scratch_root, 0o711)
    ctx = _Context(
        scratch_root=scratch_root,
        uid=walls.job_uid,
        limits=oslevel.Limits(**config["limits"]),
        address_space_base=oslevel.mapped_bytes(),
        read_roots=read_roots,
        pid_namespaces=oslevel.PidNamespaceFactory() if walls.pid_namespace else None,
        audit_hook=config["audit_hook"],
        isolated=config["isolate"],
        private_dirs=walls.private_tmp,
        baseline=scrub.snapshot(walls.private_tmp),
        cgroups=job_cgroups,
    )
    ready = {"ready": True, "walls": asdict(walls), "scratch_root": scratch_root, "pid": os.getpid(),
             "cgroup": job_cgroups.path if job_cgroups is not None else None, "unavailable": unavailable}
    write_message(proto_out, ready)
    try:
        _serve(proto_in, proto_out, ctx)
    finally:
        scrub.remove_tree(scratch_root)
        if job_cgroups is not None:
            job_cgroups.close()
    return 0


def _job_cgroups(config: dict[str, Any], walls: oslevel.Walls) -> cgroups.WorkerCgroups | None:
    """A cgroup per job where a delegated cgroup v2 subtree allows it; else say what bounds a
    job's processes instead (see :mod:`rewards.rendering.cgroups`)."""
    limits = oslevel.Limits(**config["limits"])
    parent, reason = cgroups.delegated_parent(config.get("cgroup"))
    if parent is not None:
        try:
            made = cgroups.WorkerCgroups(parent, limits.address_space_mb * 1024 * 1024, limits.processes)
            walls.memory_cap = (f"cgroup v2 per job under {made.path}: memory.max {limits.address_space_mb} MiB "
                                f"and pids.max {limits.processes} for all the job's processes together")
            return made
        except OSError as err:
            reason = f"cannot create a cgroup under {parent}: {err}"
    walls.memory_cap = (f"rlimits only: RLIMIT_AS {limits.address_space_mb} MiB per process, RLIMIT_NPROC "
                        f"{limits.processes} processes per job uid ({reason})")
    walls.fallbacks.append(f"no per-job cgroup, so a job's processes may together use up to {limits.processes} x "
                           f"{limits.address_space_mb} MiB: {reason}")
    return None


def _isolate(config: dict[str, Any], walls: oslevel.Walls, hide_cgroups: bool) -> None:
    """Lock the file-system view; with a PID namespace, fork once and serve from its PID 1.
    With job cgroups, the cgroup file system is covered too (the worker keeps descriptors)."""
    if not config["isolate"]:
        return
    hide = [*config["hide"], *(cgroups.mount_points() if hide_cgroups else [])]
    oslevel.wall_off_files(walls, hide, [*config["keep_visible"], *jobs.data_roots()], config["tmp_mb"])
    oslevel.enter_pid_namespace(walls)
    if walls.pid_namespace:
        pid = os.fork()
        if pid:  # the outer process only mirrors the server's fate
            _, status = os.waitpid(pid, 0)
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
        oslevel.set_parent_death_signal(signal.SIGKILL)
        oslevel.mount_own_proc(walls)  # the trainer's /proc/<pid>/environ is out of sight
    for problem in walls.problems:
        logger.warning("render worker isolation: %s", problem)


def _serve(proto_in: int, proto_out: int, ctx: _Context) -> None:
    while True:
        try:
            header, payload = read_message(proto_in)
        except ChannelClosed:
            return  # the pool closed our stdin, or its process died
        reply, data = run_job(header, payload, ctx)
        reply["id"] = header.get("id")
        write_message(proto_out, reply, data)


def run_job(header: dict[str, Any], payload: bytes, ctx: _Context) -> tuple[dict[str, Any], bytes]:
    """Fork one sandboxed job, wait for its answer until the deadline, kill it, clean up.

    A header with ``batch`` (the byte length of each source in ``payload``) is a batch job of a
    data kind (:mod:`rewards.rendering.batching`): one frame per sample, each within ``timeout``.
    """
    kind, size, timeout = header["kind"], tuple(header["size"]), float(header["timeout"])
    lengths = header.get("batch")
    if lengths is not None and kind not in batching.BATCHED_KINDS:
        return {"status": "infra", "error": f"render kind {kind!r} runs code and cannot be batched"}, b""
    sources = batching.split(payload, lengths) if lengths is not None else [payload]
    scratch = tempfile.mkdtemp(prefix="job-", dir=ctx.scratch_root)
    if ctx.uid is not None:
        os.chown(scratch, ctx.uid, ctx.uid)
    try:
        cgroup = ctx.cgroups.create() if ctx.cgroups is not None else None
    except OSError as err:
        scrub.remove_tree(scratch)
        return {"status": "infra", "error": f"could not create the job's cgroup: {err}"}, b""
    read_fd, write_fd = os.pipe()
    if ctx.pid_namespaces is not None:
        ctx.pid_namespaces.prepare()
    cpu_limit = (int(timeout) + 2) * len(sources)
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _job_child(write_fd, kind, sources, size, scratch, ctx, cpu_limit, cgroup, framed=lengths is not None)
    os.close(write_fd)
    image_bytes = size[0] * size[1] * 3
    if lengths is None:
        data, timed_out = _collect(read_fd, time.monotonic() + timeout, 1 + image_bytes)
    else:
        frames, unsettled = batching.read_frames(read_fd, len(sources), timeout, image_bytes, time.monotonic)
    os.close(read_fd)
    reaped = _kill_and_reap(pid)
    out_of_memory = cgroup.finish() if cgroup is not None else False
    scrub.remove_tree(scratch)
    scrub.restore(ctx.baseline, ctx.private_dirs)  # what the job left in /tmp, /var/tmp, /dev/shm
    if lengths is not None:
        return _batch_reply(frames, unsettled)
    return _verdict(data, timed_out, reaped, 1 + image_bytes, timeout, cpu_limit, out_of_memory)


def _batch_reply(frames: list[tuple[bytes, bytes]], unsettled: str | None) -> tuple[dict[str, Any], bytes]:
    """Per-sample statuses of the settled samples, their images end to end, and why the rest are not settled."""
    results = [{"status": "ok"} if code == batching.OK else
               {"status": "invalid", "error": body.decode("utf-8", "replace")} for code, body in frames]
    images = b"".join(body for code, body in frames if code == batching.OK)
    return {"status": "ok", "results": results, "unsettled": unsettled}, images


def _job_child(out_fd: int, kind: str, sources: list[bytes], size: tuple[int, int], scratch: str,
               ctx: _Context, cpu_seconds: int, cgroup: cgroups.JobCgroup | None, framed: bool) -> None:
    """Inside the fork: wall in, render, write ``K``+RGB or ``E``+message (one frame per source when
    ``framed``), ``_exit``. Never returns, even when model code broke what the error path uses (then
    it exits without an answer)."""
    try:
        try:
            if cgroup is not None:
                cgroup.enter()  # first: every process the job starts is counted with it
            _wall_in(scratch, ctx, cpu_seconds, out_fd, runs_model_code=kind in jobs.RUNS_MODEL_CODE)
        except BaseException as exc:  # noqa: BLE001
            _answer(out_fd, b"I" + f"sandbox setup failed: {exc!r}".encode()[:_ERROR_BYTES])
        if framed:
            for source in sources:
                _write_all(out_fd, _render_frame(kind, source, size))
            _answer(out_fd, b"")
        try:
            message = b"K" + jobs.RENDERERS[kind](sources[0], size)
        except BaseException as exc:  # noqa: BLE001  (SystemExit and MemoryError are answers too)
            message = b"E" + _describe(exc).encode("utf-8", "replace")[:_ERROR_BYTES]
        _answer(out_fd, message)
    finally:
        os._exit(1)


def _render_frame(kind: str, source: bytes, size: tuple[int, int]) -> bytes:
    """One sample of a batch job. A ``MemoryError`` asks for the sample to be rendered alone: in a
    batch, an earlier sample may have used the memory."""
    try:
        return batching.frame(batching.OK, jobs.RENDERERS[kind](source, size))
    except MemoryError:
        return batching.frame(batching.RETRY_ALONE, b"out of memory inside a batch")
    except Exception as exc:  # noqa: BLE001  (the renderer's verdict on this input)
        return batching.frame(batching.ERROR, _describe(exc).encode("utf-8", "replace")[:batching.ERROR_BYTES])


def _wall_in(scratch: str, ctx: _Context, cpu_seconds: int, out_fd: int, runs_model_code: bool) -> None:
    """Own session, no inherited fds, scrubbed env, rlimits, own IPC namespace, job uid, fresh
    keyrings, audit hook (in this order: rlimits, the IPC namespace and the uid change need
    privileges the uid drop takes away; the keyrings must belong to the job's uid)."""
    os.setsid()
    oslevel.set_parent_death_signal(signal.SIGKILL)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, out_fd)
    os.closerange(out_fd + 1, 1 << 16)
    os.chdir(scratch)
    os.environ.clear()
    os.environ.update(HOME=scratch, TMPDIR=scratch, MPLCONFIGDIR=scratch, MPLBACKEND="Agg",
                      PATH="/usr/bin:/bin", LANG="C.UTF-8")
    tempfile.tempdir = scratch
    oslevel.set_no_new_privs()
    limits = oslevel.Limits(**{**asdict(ctx.limits), "cpu_seconds": cpu_seconds})
    oslevel.apply_limits(limits, ctx.address_space_base)
    if ctx.isolated:
        oslevel.enter_job_ipc_namespace()
    oslevel.drop_identity(ctx.uid)
    if ctx.isolated:
        oslevel.renew_job_keyrings()
    oslevel.forget_libc()  # model code must not find a ready ctypes handle to libc in our modules
    if ctx.audit_hook:
        guard.install(scratch, ctx.read_roots, guard.BLOCKED_MODULES if runs_model_code else ())


def _answer(out_fd: int, message: bytes) -> None:
    """Write the whole answer to the worker, then leave without running any cleanup."""
    try:
        _write_all(out_fd, message)
    finally:
        os._exit(0)


def _write_all(out_fd: int, message: bytes) -> None:
    view = memoryview(message)
    while view:
        view = view[os.write(out_fd, view):]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"the code called sys.exit({exc.code!r}); chart code must not exit"
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<model-code>"]
    where = f" (line {lines[-1]} of the code)" if lines else ""
    if isinstance(exc, SyntaxError) and exc.filename == "<model-code>":
        where = f" (line {exc.lineno} of the code)"
    detail = str(exc) or ("the code went over the render memory limit" if isinstance(exc, MemoryError) else "")
    return f"{type(exc).__name__}: {detail}{where}"


def _collect(fd: int, deadline: float, expected: int) -> tuple[bytes, bool]:
    """Read the child's answer until EOF, the deadline, or more bytes than any valid answer."""
    buf = bytearray()
    while len(buf) <= expected:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return bytes(buf), True
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        buf += chunk
    return bytes(buf), False


def _kill_and_reap(pid: int) -> tuple[int, float, bool]:
    """SIGKILL the job's group (and, as PID 1 of its namespace, all its descendants); reap it.

    Returns the wait status, the CPU seconds the job used, and whether the job was still alive
    when the worker killed it (then a SIGKILL in the status is the worker's own).
    """
    _await_exit(pid, _EXIT_GRACE)  # its pipe closes a moment before its exit status exists
    done, status, usage = os.wait4(pid, os.WNOHANG)
    alive = done == 0
    if alive:
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill(pid, signal.SIGKILL)
        _, status, usage = os.wait4(pid, 0)
    return status, usage.ru_utime + usage.ru_stime, alive


def _await_exit(pid: int, seconds: float) -> None:
    """Return once child ``pid`` has exited, or after ``seconds``. A pidfd wakes us the moment it
    exits (a sleep-and-poll loop cost up to 5 ms a job); kernels before 5.3 get the poll loop."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        deadline = time.monotonic() + seconds
        while not _exited(pid) and time.monotonic() < deadline:
            time.sleep(0.005)
        return
    try:
        select.select([fd], [], [], seconds)
    finally:
        os.close(fd)


def _exited(pid: int) -> bool:
    """True once ``pid`` is a zombie (its status is waiting), without reaping it."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _verdict(data: bytes, timed_out: bool, reaped: tuple[int, float, bool], expected: int,
             timeout: float, cpu_limit: int, out_of_memory: bool = False) -> tuple[dict, bytes]:
    """Classify the job's answer and exit; the order matters (a late SIGKILL is ours).

    Everything the job can cause (an exception, a timeout, a crash, an exit or a closed pipe
    without an answer) is a job failure; ``infra`` is kept for a failed sandbox setup and for a
    job killed from outside its limits (the host's OOM killer), see :mod:`rewards.rendering.result`.
    """
    status, cpu_used, killed_by_us = reaped
    kind = data[:1]
    if kind == b"K" and len(data) == expected:
        return {"status": "ok"}, data[1:]
    if kind == b"I":
        return {"status": "infra", "error": data[1:].decode("utf-8", "replace")}, b""
    if kind == b"E" and not timed_out:
        return {"status": "invalid", "error": data[1:].decode("utf-8", "replace")}, b""
    if timed_out:
        return {"status": "timeout", "error": f"render exceeded its {timeout:g} s wall-clock limit and was killed"}, b""
    if len(data) > expected:
        return {"status": "invalid", "error": "render process wrote more output than an image"}, b""
    if killed_by_us:
        return {"status": "crashed", "error": "render process closed its answer pipe without answering"}, b""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_used >= cpu_limit):
            return {"status": "timeout", "error": "render ran out of CPU time (RLIMIT_CPU) and was killed"}, b""
        if sig == signal.SIGKILL and out_of_memory:  # the job's own cgroup limit, not the host's
            return {"status": "invalid", "error": "render went over its memory limit (all its processes "
                                                  "together) and was killed"}, b""
        if sig == signal.SIGKILL:  # a PID 1 cannot SIGKILL itself, and the job's limits did not
            return {"status": "infra", "error": "render process was killed from outside (out of host memory?)"}, b""
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        return {"status": "crashed", "error": f"render process died from signal {name}"}, b""
    code = os.waitstatus_to_exitcode(status)
    return {"status": "crashed", "error": f"render process exited with status {code} before answering (os._exit?)"}, b""


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    sys.exit(main(sys.argv))
