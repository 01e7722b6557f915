"""Linux isolation primitives for render workers: namespaces, mounts, rlimits, uid drop.

What is enforced, and what is not (read this before trusting a render with secrets):

* **Process lifetime.** Every job is PID 1 of a fresh PID namespace; when it exits or is
  killed, the kernel kills every process it started, including ``setsid`` / double-fork
  escapees. Without PID namespaces the job's process group is killed, which misses escapees.
* **Network.** Workers live in an empty network namespace (loopback down): no TCP/UDP, not
  even to localhost, and no abstract UNIX sockets. Path-bound UNIX sockets are reachable only
  through the file system, which is hidden or read-only (below).
* **Files.** Workers live in a private mount namespace: every mount is remounted read-only;
  ``/tmp``, ``/var/tmp`` and ``/dev/shm`` get private, size-capped tmpfs mounts (so a job's
  writes there vanish with the worker); ``$HOME``, ``/root``, ``/home`` and ``/run`` are covered
  by an empty read-only tmpfs. The kept paths (the Python installation, this project's checkout,
  matplotlib's data) are bound back read-only at their own paths when they live inside any of
  these covers: ``/root/.pyenv`` keeps working, and so does a CI checkout with its ``.venv``
  under ``/tmp``, while the rest of the real ``/tmp`` stays invisible.
  World-readable system files (``/etc``, ``/usr``) stay readable at this level (the audit hook
  refuses them to Python code); ``/proc`` is the worker's own (below).
* **Identity.** As root, each job drops to an unprivileged uid/gid of its own (no groups,
  ``no_new_privs``), so 0700/0600 files are unreadable even where not hidden. Not as root, the
  worker enters a user namespace first thing (before any preload can start a thread) and each
  job empties every capability set (bounding, ambient, permitted, effective: checked), so it
  cannot unmount a cover or remount ``/`` writable. Workers mount their own ``/proc``: the
  caller's processes (and their ``environ``) are not listed.
* **Nothing kept from one job to the next.** Each job gets an IPC namespace of its own (its
  SysV shared memory, semaphores and message queues die with it), a new anonymous session
  keyring (the trainer's session keys are out of reach) with its uid's user keyrings emptied
  before its code runs, and after each job the worker removes whatever the job left in its
  private ``/tmp``, ``/var/tmp`` and ``/dev/shm`` (:mod:`rewards.rendering.scrub`).
* **Resources.** Hard rlimits (both soft and hard set) on CPU seconds, address space, file
  size, open files, processes and core size. Where a cgroup v2 subtree with the memory and
  pids controllers is delegated (:mod:`rewards.rendering.cgroups`), each job also gets a
  cgroup capping its processes together (``memory.max``, ``pids.max``; an out-of-memory kill
  there is the job's failure) and the cgroup file system is hidden from jobs. Otherwise, the
  stated fallback: memory across a job's forked children is bounded only by ``processes`` x
  ``address_space_mb``; :attr:`Walls.memory_cap` says which applies and why, and the pool logs
  a warning (:attr:`Walls.fallbacks`).
* **Not enforced:** system calls are not filtered (no seccomp: it needs libseccomp or a BPF
  assembler), so kernel bugs are in scope; GPU devices under ``/dev`` stay visible. A machine
  where the namespaces cannot be entered gets no worker at all: :class:`RenderPool` refuses to
  start and names what is missing.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import resource
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MOUNT_FLAG_NAMES = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC}
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 1, 38, 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_CLEAR = 1, 7
KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -4, -5
_WRITABLE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
_HIDDEN_DIRS = ("/root", "/home", "/run")

_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    enc = lambda s: None if s is None else s.encode()
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def forget_libc() -> None:
    """Drop this module's libc handle (called in a job before model code runs)."""
    global _libc
    _libc = None


def set_parent_death_signal(sig: int) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies."""
    _check(_libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0), "prctl(PDEATHSIG)")


def set_no_new_privs() -> None:
    """Setuid binaries can no longer raise this process's privileges (``ping``, ``su``)."""
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")


def enter_job_ipc_namespace() -> None:
    """A new IPC namespace for one job (needs ``CAP_SYS_ADMIN``: call before the uid drop).

    Shared memory segments, semaphores and message queues the job creates die with it (the
    kernel frees a namespace's objects when its last process exits), and the next job of the
    worker starts with none.
    """
    _check(_libc.unshare(CLONE_NEWIPC), "unshare(ipc)")


def renew_job_keyrings() -> None:
    """Give a job kernel keyrings of its own (call after the uid drop, before model code).

    * A new anonymous session keyring replaces the inherited one, so keys the trainer keeps in
      its session keyring (``keyctl add user ... @s``) are neither searchable nor possessed.
    * The user and user-session keyrings of the job's uid are shared by every job of a worker
      (as root, one uid per worker; in a user namespace, one register per worker): they are
      emptied here, so what a previous job stashed there is gone before this job's code runs.
      (A stash outlives the pool until the next job of that uid: it is emptied, not destroyed.)
    """
    keyctl = _SYS_KEYCTL[os.uname().machine]
    if _libc.syscall(keyctl, KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"keyctl(JOIN_SESSION_KEYRING): {os.strerror(err)}")
    for keyring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING):
        _check(_libc.syscall(keyctl, KEYCTL_CLEAR, keyring), f"keyctl(CLEAR, {keyring})")


@dataclass
class Walls:
    """Which isolation layers a worker actually got (reported to the pool, logged, testable)."""

    user_namespace: bool = False
    network_namespace: bool = False
    mount_namespace: bool = False
    pid_namespace: bool = False
    ipc_namespace: bool = False
    private_proc: bool = False
    read_only_mounts: bool = False
    private_tmp: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    not_hidden: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # bound back (read-only) over a tmpfs cover
    job_uid: int | None = None
    memory_cap: str = ""  # how a job's processes are bounded together (cgroup, or the rlimit fallback)
    problems: list[str] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)  # weaker walls in use (logged, not refused)

    def missing(self) -> list[str]:
        """The walls a worker must have and lacks; a pool refuses to start while any is missing.

        A per-job cgroup is not among them (few machines delegate one): without it the worker
        runs with the rlimit fallback, named in :attr:`memory_cap` and :attr:`fallbacks`, which
        the pool logs as a warning."""
        names = ["network_namespace", "mount_namespace", "pid_namespace", "ipc_namespace", "read_only_mounts",
                 "private_proc"]
        out = [name.replace("_", " ") for name in names if not getattr(self, name)]
        if "/tmp" not in self.private_tmp:
            out.append("a private /tmp")
        out += [p for p in self.problems if p.startswith(("could not hide ", "no namespaces", "user namespace",
                                                           "mounts stay shared"))]
        return out


def unshare_namespaces() -> Walls:
    """Move this (worker) process into new user (when not root), mount, network and IPC
    namespaces. Call it first thing, before any import that may start a thread: the kernel
    refuses a user namespace to a multi-threaded process (pandas' pyarrow starts a jemalloc
    thread on import). The PID namespace comes later (:func:`enter_pid_namespace`).
    """
    walls = Walls()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC
    uid, gid = os.geteuid(), os.getegid()
    if uid != 0:
        flags |= CLONE_NEWUSER
    try:
        _check(_libc.unshare(flags), "unshare")
    except OSError as err:
        walls.problems.append(f"no namespaces ({err})")
        return walls
    if uid != 0:
        try:
            _map_self_to_root(uid, gid)
        except OSError as err:
            walls.problems.append(f"user namespace without an id map ({err})")
            return walls
        walls.user_namespace = True
    walls.network_namespace = walls.mount_namespace = walls.ipc_namespace = True
    return walls


def enter_pid_namespace(walls: Walls) -> None:
    """Make the next child PID 1 of a new PID namespace. Separate from :func:`unshare_namespaces`
    because a preload that starts a subprocess would become that namespace's short-lived PID 1."""
    try:
        _check(_libc.unshare(CLONE_NEWPID), "unshare(pid)")
        walls.pid_namespace = True
    except OSError as err:
        walls.problems.append(f"no namespaces ({err})")


def mount_own_proc(walls: Walls) -> None:
    """Mount a ``/proc`` of this PID namespace over the host's: the caller's processes (same uid
    in user-namespace mode, so their ``environ`` would be readable) are no longer listed."""
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        walls.private_proc = True
    except OSError as err:
        walls.problems.append(f"could not hide the host's processes: {err}")


def wall_off_files(walls: Walls, hide: Iterable[str], keep_visible: Iterable[str], tmp_mb: int) -> None:
    """Lock the file-system view of the mount namespace :func:`unshare_namespaces` entered.

    ``hide``: directories to cover with an empty read-only tmpfs (the user's home, the checkout).
    ``keep_visible``: paths jobs need (the Python installation, the worker's packages). Where one
    lies inside a covered directory, a hidden one or a private ``/tmp`` (a CI checkout and its
    ``.venv`` under ``/tmp``), it is bound back at its own path and made read-only with the rest;
    a hidden candidate that lies inside a kept path is left visible. An ancestor of a kept path
    that other users may not enter (a ``mktemp -d`` checkout, mode 0700) is covered the same way,
    so the unprivileged job uid can reach the kept path without the ancestor's other content.
    """
    if not walls.mount_namespace:
        return
    keep_visible = list(keep_visible)
    hide = [*hide, *_closed_ancestors(keep_visible)]  # stat'ed before the view changes
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    except OSError as err:  # without private propagation, mounting would leak to the host
        walls.problems.append(f"mounts stay shared ({err}): no private /tmp, hidden home or read-only view")
        return
    keep = _outermost(os.path.realpath(p) for p in keep_visible if os.path.exists(p))
    for path in _WRITABLE_DIRS:
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                _cover_keeping(walls, path, keep, MS_NOSUID | MS_NODEV, f"size={tmp_mb}m,mode=1777")
                walls.private_tmp.append(path)
            except OSError as err:
                walls.problems.append(str(err))
    _hide_dirs(walls, hide, keep)
    os.chdir("/")  # the cwd we were started in may be a hidden directory; jobs must not inherit it
    _remount_read_only(walls)


def _closed_ancestors(paths: Iterable[str]) -> list[str]:
    """For each path, its outermost ancestor without the others-execute bit (if any)."""
    closed = []
    for path in paths:
        for ancestor in reversed(_ancestors(path)):  # outermost first
            try:
                mode = os.stat(ancestor).st_mode
            except OSError:
                break
            if not mode & stat.S_IXOTH:
                closed.append(ancestor)
                break
    return closed


def _ancestors(path: str) -> list[str]:
    """Proper ancestors of ``path`` (without ``/``), nearest first."""
    out, current = [], os.path.dirname(os.path.realpath(path))
    while current not in ("/", ""):
        out.append(current)
        current = os.path.dirname(current)
    return out


def _map_self_to_root(uid: int, gid: int) -> None:
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)


def _hide_dirs(walls: Walls, hide: Iterable[str], keep: list[str]) -> None:
    """Cover each directory with an empty read-only tmpfs, re-exposing (read-only bind mounts,
    same paths) the kept paths inside it, e.g. a Python installed under ``/root/.pyenv``."""
    for raw in dict.fromkeys([*hide, *_HIDDEN_DIRS]):
        path = os.path.realpath(raw)
        if not os.path.isdir(path) or path == "/" or any(path.startswith(k + os.sep) or path == k for k in keep):
            if os.path.isdir(path) and path != "/":
                walls.not_hidden.append(path)
            continue
        try:
            _cover_keeping(walls, path, keep, MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0755")
            _mount(None, path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
            walls.hidden.append(path)
        except OSError as err:
            walls.problems.append(f"could not hide {path}: {err}")


def _outermost(paths: Iterable[str]) -> list[str]:
    chosen: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == c or path.startswith(c + os.sep) for c in chosen):
            chosen.append(path)
    return chosen


def _cover_keeping(walls: Walls, path: str, keep: list[str], flags: int, options: str) -> None:
    """Mount a fresh tmpfs on ``path``, then bind the kept paths inside it back at their own places.

    Each kept tree is pinned by an ``O_PATH`` descriptor before the tmpfs hides it; binding from
    ``/proc/self/fd/N`` afterwards reaches the original tree, and nothing else of what the tmpfs
    covers (the rest of the real ``/tmp`` stays invisible). No staging directory is needed, so
    this works for ``/tmp`` itself. The binds are made read-only by :func:`_remount_read_only`.
    Raises ``OSError`` only when the tmpfs itself cannot be mounted; a kept path that cannot be
    bound back is recorded in ``walls.problems`` (jobs will miss it, but no wall is lowered).
    """
    pinned = []
    for kept in (k for k in keep if k.startswith(path + os.sep)):
        try:
            pinned.append((kept, os.open(kept, os.O_PATH | os.O_CLOEXEC)))
        except OSError as err:
            walls.problems.append(f"kept path {kept} not reachable inside {path}: {err}")
    for kept in (k for k in keep if path == k or path.startswith(k + os.sep)):
        logger.warning("kept path %s contains %s, which is covered anyway; jobs will not see its content", kept, path)
    try:
        _mount("tmpfs", path, "tmpfs", flags, options)
        for kept, fd in pinned:
            try:
                _rebind(fd, kept)
                walls.kept.append(kept)
            except OSError as err:
                walls.problems.append(f"kept path {kept} is hidden by the cover on {path}: {err}")
    finally:
        for _, fd in pinned:
            os.close(fd)


def _rebind(fd: int, target: str) -> None:
    """Bind the tree pinned by ``fd`` at ``target``, creating the mount point in the new tmpfs."""
    is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
    os.makedirs(target if is_dir else os.path.dirname(target), mode=0o755, exist_ok=True)
    if not is_dir:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o444))
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC, None)


def _remount_read_only(walls: Walls, mountinfo: str = "/proc/self/mountinfo") -> None:
    """Bind-remount every mount a job can reach read-only, keeping the flags the kernel locks.

    A ``mountinfo`` entry is reachable when opening its path lands on that very mount (same mount
    ID). It is not when a cover made earlier hides it: its path is gone, or exists again as a plain
    directory of the cover (a closed parent of the checkout that the caller had covered, a home
    directory that is a mount of its own under the hidden ``/home``), or another mount is stacked
    on top. No job can reach such a mount by path, so it is skipped, not counted as a failure. A
    reachable mount that refuses the remount but is read-only already (a locked read-only mount
    in a user namespace) counts as read-only. Each real failure names the mount and its cause."""
    failures = []
    with open(mountinfo) as fh:
        entries = [line.split() for line in fh]
    for parts in entries:
        mount_id, target, options = int(parts[0]), _unescape(parts[4]), parts[5].split(",")
        if target.startswith(("/proc", "/sys", "/dev")) or target in walls.hidden or target in walls.private_tmp:
            continue
        if _mount_id_at(target) != mount_id:
            continue  # shadowed: unreachable by path (see above)
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for opt in options:
            flags |= _MOUNT_FLAG_NAMES.get(opt, 0)
        try:
            _mount(None, target, None, flags, None)
        except OSError as err:
            if "ro" not in options:
                failures.append(f"{target} ({err.strerror})")
    walls.read_only_mounts = not failures
    if failures:
        walls.problems.append(f"could not make these mounts read-only: {', '.join(failures)}")


def _unescape(field: str) -> str:
    """A ``mountinfo`` path field with its octal escapes (space, tab, newline, backslash) decoded."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _mount_id_at(path: str) -> int | None:
    """The ID of the mount that opening ``path`` reaches (``mnt_id`` of its ``fdinfo``), or ``None``
    when the path does not exist (or cannot be opened) in this mount namespace."""
    try:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with open(f"/proc/self/fdinfo/{fd}") as fh:
            for line in fh:
                if line.startswith("mnt_id:"):
                    return int(line.split()[1])
    finally:
        os.close(fd)
    return None


class PidNamespaceFactory:
    """Gives each forked job a fresh PID namespace (the job becomes its PID 1).

    ``unshare(CLONE_NEWPID)`` works once per parent namespace for children; resetting with
    ``setns`` to our own PID namespace first lets a long-lived worker do it for every job.
    """

    def __init__(self) -> None:
        self._own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    def prepare(self) -> None:
        """Call right before ``os.fork()``; the next child starts a new PID namespace."""
        _check(_libc.setns(self._own, CLONE_NEWPID), "setns(pid)")
        _check(_libc.unshare(CLONE_NEWPID), "unshare(pid)")


@dataclass(frozen=True)
class Limits:
    """Hard resource limits for one job (soft = hard, so the job cannot raise them)."""

    cpu_seconds: int = 12
    address_space_mb: int = 1024
    file_size_mb: int = 32
    open_files: int = 64
    processes: int = 32


def apply_limits(limits: Limits, address_space_base: int) -> None:
    """Set the rlimits. ``address_space_base`` is the worker's own mapped size in bytes:
    the job may map ``address_space_mb`` beyond what the warm interpreter already holds."""
    mb = 1024 * 1024
    cpu = limits.cpu_seconds
    table = [
        (resource.RLIMIT_CPU, cpu, cpu + 1),  # SIGXCPU at cpu, SIGKILL a second later
        (resource.RLIMIT_AS, address_space_base + limits.address_space_mb * mb, None),
        (resource.RLIMIT_FSIZE, limits.file_size_mb * mb, None),
        (resource.RLIMIT_NOFILE, limits.open_files, None),
        (resource.RLIMIT_NPROC, limits.processes, None),
        (resource.RLIMIT_CORE, 0, None),
    ]
    for kind, soft, hard in table:
        resource.setrlimit(kind, (soft, soft if hard is None else hard))


def mapped_bytes() -> int:
    """This process's virtual memory size (``VmSize``), the base for the address-space cap."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def drop_identity(uid: int | None) -> None:
    """Lose every privilege: as real root, become ``uid`` (and gid ``uid``) with no groups; in a
    user namespace (``uid is None``: the job is uid 0 there, with every capability over the
    worker's mounts) empty the bounding, ambient, permitted and effective capability sets.
    Either way the job ends with no capability at all, checked, so this is never a no-op."""
    for cap in range(_last_capability() + 1):
        _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"prctl(CAPBSET_DROP, {cap})")
    _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "prctl(CAP_AMBIENT_CLEAR_ALL)")
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # clears the permitted and effective sets
    else:
        header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
        data = (ctypes.c_uint32 * 6)()  # two empty {effective, permitted, inheritable} triples
        _check(_libc.syscall(_SYS_CAPSET[os.uname().machine], header, data), "capset")
    left = _capabilities()
    if any(left.values()):
        raise PermissionError(f"capabilities left after dropping them all: {left}")


def _capabilities() -> dict[str, int]:
    with open("/proc/self/status") as fh:
        return {k: int(v, 16) for k, v in (line.split(":") for line in fh)
                if k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}


def _last_capability() -> int:
    with open("/proc/sys/kernel/cap_last_cap") as fh:
        return int(fh.read())
