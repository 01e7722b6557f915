"""The main path: a training run as an ordinary user. CI runs as root, so this test drops a
helper process to uid/gid 65534 (``nobody``) before it imports the pool, then lets the pool's
walls face a job with the audit hook off and the default preload (pandas starts a thread).

The helper first gives itself a private mount namespace where closed (0700) ancestors of the
Python installation and the checkout (``/root`` holding ``~/.pyenv``) are covered so the
unprivileged uid can run Python, as it could on a normal user's machine; nothing else changes.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/proc/self/ns/user"),
                                reason="drops from root to an unprivileged uid (as non-root the whole suite is that path)")

HELPER = r"""
import json, os, socket, sys, tempfile
from rewards.rendering import oslevel

walls = oslevel.Walls()
oslevel._check(oslevel._libc.unshare(oslevel.CLONE_NEWNS), "unshare")
oslevel._mount(None, "/", None, oslevel.MS_REC | oslevel.MS_PRIVATE, None)
keep = oslevel._outermost(os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, os.getcwd()))
for ancestor in oslevel._closed_ancestors(keep):
    oslevel._cover_keeping(walls, ancestor, keep, 0, "mode=0755")
home = tempfile.mkdtemp(prefix="zoo-user-home-")
os.makedirs(f"{home}/.cache/huggingface")
with open(f"{home}/.cache/huggingface/token", "w") as fh:
    fh.write("hf_secret_token")
for path in (home, f"{home}/.cache", f"{home}/.cache/huggingface", f"{home}/.cache/huggingface/token"):
    os.chown(path, 65534, 65534)
os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)
os.environ.update(HOME=home, ZOO_TRAINER_SECRET="s3cr3t-in-env")
listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(1)

from rewards.rendering import RenderPool

probe = '''
import ctypes, os, socket
R = {}
def attempt(name, action):
    try:
        R[name] = action()
    except Exception as e:
        R[name] = type(e).__name__
attempt("environ", lambda: "s3cr3t" in open("/proc/%(pid)d/environ").read())
attempt("token", lambda: open("%(home)s/.cache/huggingface/token").read())
attempt("home_write", lambda: open("%(home)s/pwned", "w").write("x"))
attempt("listener", lambda: socket.create_connection(("127.0.0.1", %(port)d), timeout=1) and "connected")
libc = ctypes.CDLL(None, use_errno=True)
attempt("umount_tmp", lambda: libc.umount2(b"/tmp", 2))
attempt("remount_root_rw", lambda: libc.mount(None, b"/", None, 32, None))
attempt("cap_eff", lambda: [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0])
raise RuntimeError("RESULT=" + repr(R))
''' % {"pid": os.getpid(), "home": home, "port": listener.getsockname()[1]}
with RenderPool(1, audit_hook=False) as pool:
    walls = pool.isolation
    result = pool.render("matplotlib", probe, size=(8, 8), timeout=10)
print(json.dumps({"walls": walls, "status": result.status, "error": result.error,
                  "home_after": sorted(os.listdir(home))}))
"""


@pytest.fixture(scope="module")
def as_nobody() -> dict:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG")}
    proc = subprocess.run([sys.executable, "-c", HELPER], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_walls_come_up_for_an_unprivileged_user_despite_a_threaded_preload(as_nobody: dict) -> None:
    walls = as_nobody["walls"]
    assert walls["user_namespace"] and walls["network_namespace"] and walls["pid_namespace"], walls
    assert walls["ipc_namespace"] and walls["private_proc"] and walls["read_only_mounts"], walls


def test_a_job_of_an_unprivileged_user_reaches_no_secret_and_cannot_undo_the_walls(as_nobody: dict) -> None:
    assert as_nobody["status"] == "invalid" and "RESULT=" in as_nobody["error"], as_nobody
    found = ast.literal_eval(as_nobody["error"].split("RESULT=", 1)[1].rsplit(" (line", 1)[0])
    assert found["environ"] in ("FileNotFoundError", "PermissionError"), found  # not the trainer's env
    assert found["token"] == "FileNotFoundError" and found["home_write"] != 1, found
    assert found["listener"] != "connected", found
    assert found["umount_tmp"] == -1 and found["remount_root_rw"] == -1, found  # no capability left
    assert found["cap_eff"] == "0000000000000000", found
    assert "pwned" not in as_nobody["home_after"], as_nobody["home_after"]
