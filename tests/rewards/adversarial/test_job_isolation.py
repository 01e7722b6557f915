"""What one job leaves behind, no later job sees, and what the trainer holds, no job reaches:
kernel keyrings, SysV IPC objects, files in the worker's private /tmp, /var/tmp and /dev/shm;
and how a job's forked processes are capped together (a cgroup, or the stated rlimit fallback).
The audit hook is off (jobs may use ctypes and fork), so only the OS walls are tested."""

from __future__ import annotations

import ctypes
import logging
import os
import uuid
from collections.abc import Iterator

import pytest

from rewards.rendering import Limits, RenderPool
from tests.rewards.adversarial.conftest import probe, run

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/ns/ipc"), reason="Linux namespaces needed")
ARCH = os.uname().machine
SYS_ADD_KEY, SYS_KEYCTL = {"x86_64": 248, "aarch64": 217}[ARCH], {"x86_64": 250, "aarch64": 219}[ARCH]
KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING = -3, -4
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_REVOKE, KEYCTL_SEARCH, KEYCTL_READ = 1, 3, 10, 11
SECRET = f"trainer-secret-{uuid.uuid4().hex[:8]}".encode()
LIBC = ctypes.CDLL(None, use_errno=True)
# job-side helpers, prepended to each probe: (result, errno name) for keyctl and shmget
JOB_PRELUDE = f"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def call(*args):
    ret = libc.syscall(*args)
    return ret if ret >= 0 else errno.errorcode[ctypes.get_errno()]
def keyctl(*args):
    return call({SYS_KEYCTL}, *args)
def add_key(desc, payload, keyring):
    return call({SYS_ADD_KEY}, b"user", desc, payload, len(payload), keyring)
def read_key(serial):
    buf = ctypes.create_string_buffer(256)
    n = keyctl({KEYCTL_READ}, serial, buf, 256)
    return buf.raw[:n] if isinstance(n, int) else n
"""


@pytest.fixture(scope="module")
def keyed_pool() -> Iterator[tuple[RenderPool, int]]:
    """The test process joins a keyring of its own (the machine's shared session keyring stays
    untouched), puts a secret there as a trainer would, then starts a one-worker pool."""
    assert LIBC.syscall(SYS_KEYCTL, KEYCTL_JOIN_SESSION_KEYRING, None) > 0, os.strerror(ctypes.get_errno())
    serial = LIBC.syscall(SYS_ADD_KEY, b"user", b"zoo-test-secret", SECRET, len(SECRET), KEY_SPEC_SESSION_KEYRING)
    assert serial > 0, os.strerror(ctypes.get_errno())
    pool = RenderPool(1, audit_hook=False).start()
    yield pool, serial
    pool.close()
    LIBC.syscall(SYS_KEYCTL, KEYCTL_REVOKE, serial)


def test_a_job_cannot_find_or_read_the_trainers_session_keys(keyed_pool) -> None:
    pool, serial = keyed_pool
    found = probe(pool, JOB_PRELUDE + f"""
RESULT = {{"search": keyctl({KEYCTL_SEARCH}, {KEY_SPEC_SESSION_KEYRING}, b"user", b"zoo-test-secret", 0),
          "read": read_key({serial})}}""")
    assert found["search"] == "ENOKEY", found
    assert found["read"] in ("EACCES", "ENOKEY"), found  # never the secret bytes
    assert SECRET not in repr(found).encode()


def test_a_key_one_job_stashes_in_its_user_keyring_is_gone_for_the_next(keyed_pool) -> None:
    pool, _ = keyed_pool
    stashed = probe(pool, JOB_PRELUDE + f"RESULT = add_key(b'zoo-stash', b'left-behind', {KEY_SPEC_USER_KEYRING})")
    assert isinstance(stashed, int) and stashed > 0, stashed  # the job may use keys, for itself
    found = probe(pool, JOB_PRELUDE + f"""
RESULT = {{"search": keyctl({KEYCTL_SEARCH}, {KEY_SPEC_USER_KEYRING}, b"user", b"zoo-stash", 0),
          "read": read_key({stashed})}}""")
    assert found["search"] == "ENOKEY" and found["read"] != b"left-behind", found


SHM_KEY = 0x5A6F6F31


def test_sysv_shared_memory_dies_with_the_job(keyed_pool) -> None:
    pool, _ = keyed_pool
    first = probe(pool, JOB_PRELUDE + f"""
libc.shmget.restype = ctypes.c_int
shmid = libc.shmget({SHM_KEY}, 4096, 0o1000 | 0o666)
RESULT = {{"shmid": shmid, "ns": os.readlink("/proc/self/ns/ipc")}}""")
    assert first["shmid"] >= 0, first
    second = probe(pool, JOB_PRELUDE + f"""
shmid = libc.shmget({SHM_KEY}, 0, 0)
RESULT = {{"shmid": shmid if shmid >= 0 else errno.errorcode[ctypes.get_errno()], "ns": os.readlink("/proc/self/ns/ipc"),
          "segments": open("/proc/sysvipc/shm").read().splitlines()[1:]}}""")
    assert second["shmid"] == "ENOENT" and second["segments"] == [], second
    # no process is left in the first job's IPC namespace, so the kernel has freed it and its
    # segment (the namespace's number may already serve the second job's: numbers are reused)
    holders = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/ns/ipc") == first["ns"]:
                holders.append(pid)
        except OSError:
            continue
    assert holders == [], holders


def test_files_a_job_leaves_in_tmp_are_gone_for_the_next_job(keyed_pool) -> None:
    pool, _ = keyed_pool
    name = f"left-{uuid.uuid4().hex[:8]}"
    dirs = ["/tmp", "/var/tmp", "/dev/shm"]
    written = probe(pool, f"""
import os
RESULT = []
for d in {dirs!r}:
    os.makedirs(d + "/{name}-dir/sub", exist_ok=True)
    open(d + "/{name}", "w").write("from job 1")
    RESULT.append(os.path.exists(d + "/{name}"))""")
    assert written == [True, True, True]  # the job may use them (private to its worker)
    seen = probe(pool, f"""
import os
RESULT = [(os.path.exists(d + "/{name}"), os.path.exists(d + "/{name}-dir")) for d in {dirs!r}]""")
    assert seen == [(False, False)] * 3, seen
    after = probe(pool, "import os\nRESULT = sorted(os.listdir('/tmp'))")  # still a working /tmp
    assert all(name not in entry for entry in after), after
    assert pool.render("svg", '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>', size=(4, 4)).ok


def test_a_jobs_forked_children_share_one_memory_cap(keyed_pool) -> None:
    """With a per-job cgroup: four children, each under the per-process cap, together over it."""
    pool, _ = keyed_pool
    cap = pool.isolation["memory_cap"]
    if not cap.startswith("cgroup"):
        pytest.skip(f"no per-job cgroup on this machine, the rlimit fallback is tested instead: {cap}")
    share = int(0.4 * Limits().address_space_mb * 2**20)
    result = run(pool, f"""
import os, time
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        block = bytearray({share})
        block[::4096] = b"x" * len(range(0, {share}, 4096))  # touch every page
        time.sleep(5)
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
RESULT = "all four children kept their memory"
""", timeout=8)
    assert result.status == "invalid" and "memory limit" in result.error, (result.status, result.error)


def test_without_a_cgroup_the_fallback_is_said_and_every_child_keeps_the_rlimits(keyed_pool, caplog) -> None:
    pool, _ = keyed_pool
    walls = pool.isolation
    if walls["memory_cap"].startswith("cgroup"):
        pytest.skip(f"this machine caps each job with a cgroup ({walls['memory_cap']}): tested above")
    assert walls["memory_cap"].startswith("rlimits only: RLIMIT_AS") and "(" in walls["memory_cap"], walls
    assert any("no per-job cgroup" in f for f in walls["fallbacks"]), walls
    with caplog.at_level(logging.WARNING, logger="rewards.rendering.pool"):
        RenderPool._log_walls({"walls": walls})
    assert "no per-job cgroup" in caplog.text
    limits = Limits()
    found = probe(pool, f"""
import os, resource
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        bytearray({limits.address_space_mb + 64} * 2**20)
        outcome = "allocated"
    except MemoryError:
        outcome = "MemoryError"
    caps = [resource.getrlimit(k)[1] for k in (resource.RLIMIT_AS, resource.RLIMIT_NPROC)]
    os.write(w, repr([outcome, *caps]).encode())
    os._exit(0)
os.waitpid(pid, 0)
RESULT = eval(os.read(r, 200))""")
    assert found[0] == "MemoryError" and found[2] == limits.processes, found
    assert found[1] < (limits.address_space_mb + 64) * 2**20 + 2**31, found  # the job's cap, inherited
