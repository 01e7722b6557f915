"""Hostile matplotlib code: each case ends within its timeout with a clear error, leaves no
process or file behind, and the pool still renders valid jobs afterwards (``leak_check``)."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

TIMEOUT = 3.0
MARK = f"pwned-{uuid.uuid4().hex[:8]}"
REPO = Path(__file__).resolve().parents[3]
OUTSIDE = [f"/tmp/{MARK}", f"/var/tmp/{MARK}", f"/dev/shm/{MARK}", str(Path.home() / MARK), str(REPO / MARK)]

CASES = {
    "infinite-loop": ("while True:\n    pass\n", {"timeout"}, "wall-clock"),
    "loop-ignoring-signals": (
        ("import signal\nfor s in (signal.SIGTERM, signal.SIGALRM, signal.SIGINT, signal.SIGXCPU):\n"
         "    signal.signal(s, signal.SIG_IGN)\nwhile True:\n    pass\n"),
        {"timeout"}, "wall-clock"),
    "busy-loop-in-c": ("import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')\n", {"timeout"}, "wall-clock"),
    "huge-int-in-c": ("x = 10 ** (10 ** 9)\n", {"timeout", "invalid"}, ""),
    "fork-storm": ("import os\nwhile True:\n    os.fork()\n", {"invalid"}, "os.fork"),
    "fork-storm-multiprocessing": (
        "import multiprocessing as mp\nps = [mp.Process(target=print) for _ in range(1000)]\n[p.start() for p in ps]\n",
        {"invalid"}, "not allowed"),
    "alloc-10gb-bytearray": ("x = bytearray(10 * 1024 ** 3)\n", {"invalid"}, "MemoryError"),
    "alloc-10gb-numpy": ("import numpy as np\nx = np.ones((50_000, 50_000))\n", {"invalid"}, "MemoryError"),
    "write-outside-scratch": (
        "".join(f"open({p!r}, 'w').write('x')\n" for p in OUTSIDE[:1]), {"invalid"}, "not allowed"),
    "write-via-pathlib-home": (
        f"import pathlib\npathlib.Path({OUTSIDE[3]!r}).write_text('x')\n", {"invalid"}, "not allowed"),
    "write-relative-escape": (f"open('../../../{MARK}', 'w').write('x')\n", {"invalid"}, "not allowed"),
    "delete-outside-scratch": (f"import os\nos.remove({str(REPO / 'pyproject.toml')!r})\n", {"invalid"}, "os.remove"),
    "rmtree-repo": (f"import shutil\nshutil.rmtree({str(REPO / 'rewards')!r})\n", {"invalid"}, "not allowed"),
    "read-home-into-chart": (
        ("import os, matplotlib.pyplot as plt\n"
         "secret = open(os.path.join('/root', '.bashrc')).read()\n"
         "fig = plt.figure(); fig.text(0, 0.5, secret)\n"), {"invalid"}, "not allowed"),
    "list-home": ("import os\nnames = os.listdir('/root')\n", {"invalid"}, "not allowed"),
    "read-etc-passwd": ("data = open('/etc/passwd').read()\n", {"invalid"}, "not allowed"),
    "symlink-escape": ("import os\nos.symlink('/etc/shadow', 'x')\ndata = open('x').read()\n",
                       {"invalid"}, "not allowed"),
    "socket-connect": (
        "import socket\ns = socket.create_connection(('1.1.1.1', 80), timeout=1)\n", {"invalid"}, "socket"),
    "urllib": ("import urllib.request\nurllib.request.urlopen('http://example.com', timeout=1)\n", {"invalid"}, ""),
    "os-system": (f"import os\nos.system('touch /tmp/{MARK}')\n", {"invalid"}, "os.system"),
    "subprocess": (f"import subprocess\nsubprocess.run(['touch', '/tmp/{MARK}'])\n", {"invalid"}, "subprocess"),
    "posixsubprocess": ("import _posixsubprocess\n", {"invalid"}, "_posixsubprocess"),
    "exec-replace": ("import os\nos.execv('/bin/sh', ['sh', '-c', 'sleep 100'])\n", {"invalid"}, "os.exec"),
    "kill-parent": ("import os\nos.kill(os.getppid(), 9)\n", {"invalid"}, "os.kill"),
    "sys-exit": ("import sys\nsys.exit(3)\n", {"invalid"}, "sys.exit"),
    "os-exit": ("import os\nos._exit(0)\n", {"crashed"}, "exited with status 0"),
    "segfault-ctypes": ("import ctypes\nctypes.string_at(0)\n", {"invalid"}, "importing 'ctypes'"),
    "ctypes-libc-system": ("import ctypes\nctypes.CDLL(None).system(b'id')\n", {"invalid"}, "importing 'ctypes'"),
    "ctypes-via-pandas-module": ("import pandas\npandas.io.common.__builtins__['__import__']('ctypes')\n",
                                 {"invalid"}, "ctypes"),
    "cairocffi-backdoor": ("import cairocffi\n", {"invalid"}, "cairocffi"),
    # a real NULL read (a self-sent raise(SIGSEGV) is ignored: the job is PID 1 of its namespace)
    "segfault-null-read": ("import faulthandler\nfaulthandler._read_null()\n", {"crashed"}, "SIGSEGV"),
    "cffi-dlopen": ("import cffi\nffi = cffi.FFI()\nffi.dlopen(None)\n", {"invalid"}, "cffi"),
    "proc-self-mem": ("open('/proc/self/mem', 'wb')\n", {"invalid"}, "not allowed"),
    "thread-storm": (
        ("import threading, time\nts = [threading.Thread(target=time.sleep, args=(30,)) for _ in range(500)]\n"
         "[t.start() for t in ts]\n"), {"invalid"}, "can't start new thread"),
    # the audit hook must not be switched off by rewriting what it would look up at call time
    "guard-globals-rewritten": (
        ("import sys\ng = sys.modules['rewards.rendering.guard']\ng._BLOCKED_EVENTS = frozenset()\n"
         "g._BLOCKED_PREFIXES = ('nothing',)\nimport os\nos.system('true')\n"), {"invalid"}, "os.system"),
    "posixpath-realpath-rewritten": (
        ("import os, posixpath\nposixpath.realpath = lambda p, *a, **k: os.getcwd()\n"
         "open('/etc/passwd').read()\n"), {"invalid"}, "not allowed"),
    "builtins-rewritten": (
        ("import builtins\nkept = builtins.any, builtins.isinstance\nbuiltins.any = lambda it: True\n"
         "builtins.isinstance = lambda *a: True\ntry:\n    open('/etc/passwd').read()\n"
         "finally:\n    builtins.any, builtins.isinstance = kept\n"), {"invalid"}, "not allowed"),
    "read-the-checkout": (f"open({str(REPO / 'pyproject.toml')!r}).read()\n", {"invalid"}, "not allowed"),
    "no-figure": ("x = 1 + 1\n", {"invalid"}, "no matplotlib figure"),
    "syntax-error": ("def f(:\n", {"invalid"}, "SyntaxError"),
    "recursion": ("def f(n):\n    return f(n + 1)\nf(0)\n", {"invalid"}, "RecursionError"),
    "non-utf8": (b"import os\n\xff\xfe\xfa", {"invalid"}, "not valid UTF-8"),
    "empty": ("   \n", {"invalid"}, "empty"),
    "nul-bytes": ("x = 1\x00\n", {"invalid"}, "NUL"),
    "huge-output-text": ("import matplotlib.pyplot as plt\nfig = plt.figure()\nfig.text(0, 0, 'x' * 10**6)\n",
                         {"ok", "invalid", "timeout"}, ""),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_code_is_contained(case: str, leak_check) -> None:
    source, statuses, message = CASES[case]
    start = time.monotonic()
    result = leak_check.render("matplotlib", source, size=(64, 64), timeout=TIMEOUT)
    elapsed = time.monotonic() - start
    assert result.status in statuses, (result.status, result.error)
    assert message.lower() in (result.error or "").lower()
    assert elapsed < TIMEOUT + 5, f"took {elapsed:.1f} s"  # bounded by the timeout, not a speed claim
    if result.status != "ok":
        assert result.image is None and result.error
    for path in OUTSIDE:
        assert not os.path.exists(path), f"{path} was written"


def test_sleeping_job_is_killed_at_the_deadline(leak_check) -> None:
    """A job that sleeps (no CPU, so RLIMIT_CPU never fires) still ends at the wall-clock limit."""
    result = leak_check.render("matplotlib", "import time\ntime.sleep(60)\n", size=(32, 32), timeout=1.0)
    assert result.status == "timeout" and result.model_failure and not result.infra_failure
