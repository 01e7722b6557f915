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
import subprocess  # noqa: F401  loaded before _posixsubprocess is blocked, so lazy imports of it work
import sys
from collections.abc import Iterable

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
    """
    blocked = frozenset(blocked_modules)
    scratch = os.path.realpath(scratch)
    roots = tuple(sorted({os.path.realpath(r) for r in read_roots} | {scratch}))

    def inside(path: object, allowed: tuple[str, ...]) -> bool:
        if isinstance(path, int) or path is None:
            return True  # an already-open fd: its opening was checked
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in allowed)

    def hook(event: str, args: tuple) -> None:
        if event in _BLOCKED_EVENTS or event.startswith(_BLOCKED_PREFIXES):
            raise SandboxViolation(f"render sandbox: {event} is not allowed (no processes, network or ctypes)")
        if event == "import" and args and str(args[0]).split(".")[0] in blocked:
            raise SandboxViolation(f"render sandbox: importing {args[0]!r} is not allowed")
        if event == "open":
            path, mode, flags = (list(args) + [None, None, 0])[:3]
            writing = any(c in str(mode or "") for c in "wax+") or bool((flags or 0) & _WRITE_FLAGS)
            if not inside(path, (scratch,) if writing else roots):
                verb = "writing" if writing else "reading"
                raise SandboxViolation(f"render sandbox: {verb} {path!r} is not allowed outside the scratch directory")
        elif event in _WRITE_EVENTS:
            for path in args[:2] if event in ("os.rename", "shutil.move", "shutil.copyfile") else args[:1]:
                if isinstance(path, (str, bytes, os.PathLike)) and not inside(path, (scratch,)):
                    raise SandboxViolation(f"render sandbox: {event} on {path!r} is not allowed outside scratch")
        elif event in _READ_EVENTS and args and not inside(args[0] if args[0] is not None else ".", roots):
            raise SandboxViolation(f"render sandbox: listing {args[0]!r} is not allowed")

    for name in blocked:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            sys.modules[loaded] = None  # type: ignore[assignment]  # `import x` now raises ImportError
        sys.modules[name] = None  # type: ignore[assignment]
    sys.addaudithook(hook)
