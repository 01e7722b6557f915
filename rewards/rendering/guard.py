"""An audit hook (PEP 578) installed in each job before model-written code runs.

This is the *second* wall. The first is the OS (see :mod:`rewards.rendering.oslevel`): a job
that bypasses this hook through C code still meets a read-only file system, an empty network
namespace, another uid and rlimits. The hook exists to turn the common hostile moves (a
socket, ``subprocess``, ``os.system``, ``ctypes``, reading ``~/.ssh``, writing outside the
scratch directory) into a clear Python error message instead of an opaque OS failure, and
to stop reads of world-readable files (``/etc/passwd``) that the OS walls allow.

Known limits: audit hooks are not a sandbox on their own (CPython's docs say so); C
extensions already loaded in the worker can act without raising events.
"""

from __future__ import annotations

import os
import stat
import subprocess  # noqa: F401  loaded before _posixsubprocess is blocked, so lazy imports of it work
import sys
from collections.abc import Callable, Iterable

_BLOCKED_PREFIXES = ("socket.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn", "ctypes.", "pty.")
_BLOCKED_EVENTS = frozenset({
    "os.system", "os.fork", "os.forkpty", "os.kill", "os.killpg", "os.setuid", "os.chroot",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.setprofile", "sys.settrace",
    "webbrowser.open", "sqlite3.enable_load_extension", "sqlite3.load_extension", "sys.remote_exec",
})
#: Events whose first argument (and second, for rename-like events) is a path to be modified.
_WRITE_EVENTS = frozenset({
    "os.remove", "os.rmdir", "os.mkdir", "os.rename", "os.chmod", "os.chown", "os.symlink",
    "os.link", "os.truncate", "os.utime", "shutil.rmtree", "shutil.move", "shutil.copyfile",
    "shutil.copytree", "os.chdir", "sqlite3.connect",
})
_READ_EVENTS = frozenset({"os.listdir", "os.scandir", "glob.glob"})
#: Modules model code may not import, because using them raises no audit event on Python 3.11:
#: ``ctypes.memmove`` and cffi calls write memory silently (they could unhook this guard).
#: ``subprocess`` and ``socket`` stay importable (libraries import them lazily); ``Popen`` and
#: sockets raise the events above. Libraries that import ctypes themselves (pandas) must be
#: preloaded in the worker (``RenderPool(preload=...)``), before this guard is installed.
BLOCKED_MODULES = ("ctypes", "_ctypes", "cffi", "_cffi_backend", "cairocffi", "cairo", "_posixsubprocess")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


class SandboxViolation(PermissionError):
    """Model-written code tried something the render sandbox forbids."""


def install(scratch: str, read_roots: Iterable[str], blocked_modules: Iterable[str] = BLOCKED_MODULES) -> None:
    """Install the hook for the rest of this process's life (hooks cannot be removed).

    ``scratch``: the only directory the job may write to (and read from).
    ``read_roots``: directories the job may read (Python, site-packages, fonts, matplotlib data).
    ``blocked_modules``: top-level modules model code may not import (empty for jobs that run
    no model code, such as SVG rendering, whose own library needs cairocffi).

    Everything the hook uses is captured now, in its closure: the event tables, the roots, the
    path resolver (:func:`_resolver`, built on C functions) and even the builtins. Model code
    that rewrites this module's globals, ``posixpath`` or ``builtins`` changes nothing the hook
    reads. It stays a second wall: every refusal here is also enforced by the OS walls, except
    reads of world-readable system files (``/etc/passwd``), which are not secrets.
    """
    blocked = frozenset(blocked_modules)
    resolve = _resolver(os.lstat, os.readlink, os.getcwd, stat.S_ISLNK, os.fspath, sys.getfilesystemencoding())
    scratch = resolve(scratch)
    roots = tuple(sorted({resolve(r) for r in read_roots} | {scratch}))
    only_scratch = (scratch,)
    blocked_events, blocked_prefixes = _BLOCKED_EVENTS, _BLOCKED_PREFIXES
    write_events, read_events, write_flags = _WRITE_EVENTS, _READ_EVENTS, _WRITE_FLAGS
    two_path_events = frozenset({"os.rename", "shutil.move", "shutil.copyfile"})
    violation, is_instance, to_str, path_types = SandboxViolation, isinstance, str, (str, bytes, os.PathLike)

    def inside(path: object, allowed: tuple[str, ...]) -> bool:
        if is_instance(path, int) or path is None:
            return True  # an already-open fd: its opening was checked
        try:
            real = resolve(path)
        except (TypeError, ValueError, OSError):
            return False
        for root in allowed:
            if real == root or real.startswith(root + "/") or root == "/":
                return True
        return False

    def hook(event: str, args: tuple) -> None:
        if event in blocked_events or event.startswith(blocked_prefixes):
            raise violation(f"render sandbox: {event} is not allowed (no processes, network or ctypes)")
        if event == "import" and args and to_str(args[0]).partition(".")[0] in blocked:
            raise violation(f"render sandbox: importing {args[0]!r} is not allowed")
        if event == "open":
            path, mode, flags = (*args, None, None, 0)[:3]
            writing = bool((flags or 0) & write_flags)
            for c in to_str(mode or ""):
                writing = writing or c in "wax+"
            if not inside(path, only_scratch if writing else roots):
                verb = "writing" if writing else "reading"
                raise violation(f"render sandbox: {verb} {path!r} is not allowed outside the scratch directory")
        elif event in write_events:
            for path in args[:2] if event in two_path_events else args[:1]:
                if is_instance(path, path_types) and not inside(path, only_scratch):
                    raise violation(f"render sandbox: {event} on {path!r} is not allowed outside scratch")
        elif event in read_events and args and not inside(args[0] if args[0] is not None else ".", roots):
            raise violation(f"render sandbox: listing {args[0]!r} is not allowed")

    for name in blocked:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            sys.modules[loaded] = None  # type: ignore[assignment]  # `import x` now raises ImportError
        sys.modules[name] = None  # type: ignore[assignment]
    sys.addaudithook(hook)


def _resolver(lstat: Callable, readlink: Callable, getcwd: Callable, is_link: Callable, fspath: Callable,
              encoding: str) -> Callable[[object], str]:
    """A ``realpath`` whose every helper is bound now (C functions, passed in), so patching
    ``posixpath`` or ``os`` later does not change what it answers. A missing component is kept
    as written (``realpath`` does the same); more than 40 symlinks raise ``OSError``."""
    is_instance = isinstance

    def resolve(path: object) -> str:
        raw = fspath(path)
        text = raw.decode(encoding, "surrogateescape") if is_instance(raw, bytes) else raw
        if not text.startswith("/"):
            text = getcwd() + "/" + text
        pending = [p for p in text.split("/") if p][::-1]
        resolved, hops = "", 0
        while pending:
            name = pending.pop()
            if name == ".":
                continue
            if name == "..":
                resolved = resolved.rpartition("/")[0]
                continue
            candidate = resolved + "/" + name
            try:
                link = is_link(lstat(candidate).st_mode)
            except OSError:
                link = False
            if not link:
                resolved = candidate
                continue
            hops += 1
            if hops > 40:
                raise OSError(f"too many symbolic links in {text!r}")
            target = readlink(candidate)
            if target.startswith("/"):
                resolved = ""
            pending.extend([p for p in target.split("/") if p][::-1])
        return resolved or "/"

    return resolve
