"""Memory and process caps over a whole job (all its forked processes) with cgroup v2.

Rlimits are per process (``RLIMIT_AS``) or per uid (``RLIMIT_NPROC``): a job that forks ``n``
children may map ``n`` times the address-space cap. A cgroup counts the job's processes
together. It needs a cgroup v2 directory the worker may write to, whose ``memory`` and ``pids``
controllers can be handed down: the one named by ``RenderPool(cgroup=...)`` or the
``ZOO_RENDER_CGROUP`` environment variable (a subtree delegated to the training user, e.g.
``systemd-run --user -p Delegate=yes``), else the worker's own cgroup when that is the root of
the hierarchy (root on a VM or in a privileged container). Each worker creates
``<that>/zoo-render-<pid>`` and one ``job-<n>`` cgroup per job below it, with ``memory.max``
(the job's ``address_space_mb``: memory the job allocates, not what the warm worker shares with
it), ``memory.swap.max`` 0, ``pids.max`` (the job's ``processes``) and ``memory.oom.group`` (an
out-of-memory kill takes the whole job). Without such a directory the rlimits alone apply and
the worker says so (:attr:`rewards.rendering.oslevel.Walls.memory_cap`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass

logger = logging.getLogger(__name__)
ENV_VAR = "ZOO_RENDER_CGROUP"
_NEEDED = ("memory", "pids")


@dataclass
class JobCgroup:
    """One job's cgroup. ``procs_fd`` is opened by the worker, so the forked job can move itself
    in (:meth:`enter`) before it drops its privileges."""

    dir_fd: int
    name: str
    procs_fd: int

    def enter(self) -> None:
        """Move the calling process (and so every process it starts) into this cgroup."""
        os.write(self.procs_fd, b"0")

    def finish(self) -> bool:
        """After the job was reaped: whether the kernel OOM-killed it; then remove the cgroup."""
        os.close(self.procs_fd)
        oom_kills = 0
        with contextlib.suppress(OSError):
            oom_kills = _read_keyed(self.dir_fd, f"{self.name}/memory.events").get("oom_kill", 0)
        for _ in range(100):  # the kernel empties the cgroup a moment after the last exit
            try:
                os.rmdir(self.name, dir_fd=self.dir_fd)
                break
            except FileNotFoundError:
                break
            except OSError as err:
                failure = err
                time.sleep(0.01)
        else:
            logger.warning("render worker: job cgroup %s not removed (%s); the pool removes it later", self.name,
                           failure)
        return oom_kills > 0


class WorkerCgroups:
    """A worker's ``zoo-render-<pid>`` cgroup, making one :class:`JobCgroup` per job.

    Made before the worker walls itself in; afterwards it only uses directory descriptors, so
    the worker can cover the cgroup file system (jobs must not reach it: in a user namespace
    the job's uid owns a delegated subtree and could lift its own limits or leave its cgroup).
    """

    def __init__(self, parent: str, memory_bytes: int, pids: int) -> None:
        self.path = os.path.join(parent, f"zoo-render-{os.getpid()}")
        self._fd: int | None = None
        self._parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.mkdir(os.path.basename(self.path), 0o755, dir_fd=self._parent_fd)
            self._fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            _write_at(self._fd, "cgroup.subtree_control", " ".join(f"+{c}" for c in _NEEDED))
        except OSError:
            self.close()
            raise
        self.memory_bytes, self.pids, self._count = memory_bytes, pids, 0

    def create(self) -> JobCgroup:
        """A fresh cgroup for the next job, its limits set."""
        self._count += 1
        name = f"job-{self._count}"
        os.mkdir(name, 0o755, dir_fd=self._fd)
        limits = {"memory.max": self.memory_bytes, "memory.swap.max": 0, "pids.max": self.pids,
                  "memory.oom.group": 1}
        for key, value in limits.items():
            try:
                _write_at(self._fd, f"{name}/{key}", str(value))
            except FileNotFoundError:
                if key != "memory.swap.max":  # absent on a kernel without swap accounting: no swap
                    raise
        procs = os.open(f"{name}/cgroup.procs", os.O_WRONLY | os.O_CLOEXEC, dir_fd=self._fd)
        return JobCgroup(self._fd, name, procs)

    def close(self) -> None:
        """Remove the worker's cgroup (its job cgroups are gone by then)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        with contextlib.suppress(OSError):
            os.rmdir(os.path.basename(self.path), dir_fd=self._parent_fd)
        os.close(self._parent_fd)


def remove_cgroup(path: str | None) -> None:
    """Remove a worker's cgroup and its (empty) job cgroups, if still there: what a killed
    worker leaves behind. Cgroups that still hold processes stay (the kernel refuses)."""
    if not path or not os.path.isdir(path):
        return
    for name in os.listdir(path):
        if name.startswith("job-"):
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(path, name))
    with contextlib.suppress(OSError):
        os.rmdir(path)


def delegated_parent(explicit: str | None) -> tuple[str | None, str]:
    """The cgroup v2 directory to create worker cgroups in, or ``None`` and why not."""
    mount = _cgroup2_mount()
    if mount is None:
        return None, "no cgroup v2 hierarchy is mounted"
    if explicit:
        path = os.path.realpath(explicit)
        if not (path == mount or path.startswith(mount + os.sep)):
            return None, f"{explicit} is not inside the cgroup v2 hierarchy at {mount}"
    else:
        own = _own_cgroup()
        if own != "/":
            return None, (f"this process's cgroup {own} is not the root of the hierarchy and no delegated "
                          f"subtree was given (RenderPool(cgroup=...) or {ENV_VAR})")
        path = mount
    try:
        available = _read(path, "cgroup.controllers").split()
        enabled = _read(path, "cgroup.subtree_control").split()
    except OSError as err:
        return None, f"cannot read the cgroup {path}: {err}"
    lacking = [c for c in _NEEDED if c not in available]
    if lacking:
        return None, f"the cgroup v2 hierarchy at {path} offers no {', '.join(lacking)} controller"
    if not os.access(path, os.W_OK):
        return None, f"the cgroup {path} is not writable by this user"
    if any(c not in enabled for c in _NEEDED):
        try:
            _write(path, "cgroup.subtree_control", " ".join(f"+{c}" for c in _NEEDED))
        except OSError as err:  # EBUSY: the directory holds processes itself
            return None, f"cannot hand the memory and pids controllers down from {path}: {err}"
    return path, ""


def mount_points() -> list[str]:
    """Where cgroup file systems (v1 and v2) are mounted: what a worker with job cgroups hides."""
    return [target for fstype, target in _mounts() if fstype in ("cgroup", "cgroup2")]


def _cgroup2_mount() -> str | None:
    return next((target for fstype, target in _mounts() if fstype == "cgroup2"), None)


def _mounts() -> list[tuple[str, str]]:
    """(file system type, mount point) of this process's mounts."""
    out = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            left, _, right = line.partition(" - ")
            out.append((right.split()[0], left.split()[4].replace("\\040", " ")))
    return out


def _own_cgroup() -> str:
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            if line.startswith("0::"):
                return line[3:].strip()
    return "?"


def _read(directory: str, name: str) -> str:
    with open(os.path.join(directory, name)) as fh:
        return fh.read()


def _write(directory: str, name: str, value: str) -> None:
    with open(os.path.join(directory, name), "w") as fh:
        fh.write(value)


def _write_at(dir_fd: int, name: str, value: str) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read_keyed(dir_fd: int, name: str) -> dict[str, int]:
    """A flat-keyed cgroup file (``memory.events``) as a dict."""
    fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    with os.fdopen(fd) as fh:
        return {k: int(v) for k, v in (line.split() for line in fh if line.strip())}
