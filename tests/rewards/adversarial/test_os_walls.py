"""The OS walls alone (audit hook off): what a job that got past the Python guard can still
not do. Runs only as root on Linux, where the pool gets namespaces and a job uid."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewards.rendering import RenderPool
from tests.rewards.conftest import VALID_SVG, snapshot, assert_pool_clean

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/proc/self/ns/net"),
                                reason="the OS walls need root on Linux")
MARK = f"pwned-{uuid.uuid4().hex[:8]}"
REPO = Path(__file__).resolve().parents[3]
CHART = "\nimport matplotlib.pyplot as plt\nfig = plt.figure()\nfig.text(0.1, 0.5, RESULT)\n"


@pytest.fixture(scope="module")
def bare_pool() -> Iterator[RenderPool]:
    pool = RenderPool(1, audit_hook=False).start()
    yield pool
    pool.close()


def run(pool: RenderPool, body: str, timeout: float = 4.0):
    """Run ``body`` (which sets RESULT) and read RESULT back from the error channel."""
    code = body + "\nraise RuntimeError('RESULT=' + repr(RESULT))\n"
    result = pool.render("matplotlib", code, size=(16, 16), timeout=timeout)
    return result


@pytest.mark.parametrize("target", [f"/tmp/{MARK}", f"/var/tmp/{MARK}", f"/dev/shm/{MARK}",
                                    str(Path.home() / MARK), str(REPO / MARK), f"/etc/{MARK}"])
def test_writes_outside_scratch_never_reach_the_host(bare_pool: RenderPool, target: str) -> None:
    before = snapshot()
    body = (f"try:\n    open({target!r}, 'w').write('x')\n    RESULT = 'written'\n"
            "except OSError as e:\n    RESULT = str(e)")
    result = run(bare_pool, body)
    assert result.status == "invalid" and "RESULT=" in result.error
    assert not os.path.exists(target)  # refused (read-only, uid) or in the worker's private tmpfs
    assert_pool_clean(bare_pool, before)


def test_home_and_root_files_are_invisible(bare_pool: RenderPool) -> None:
    body = ("import os\nRESULT = []\nfor p in ['/root/.bashrc', os.path.expanduser('~root/.gitconfig')]:\n"
            "    try:\n        RESULT.append(open(p).read()[:20])\n"
            "    except OSError as e:\n        RESULT.append(type(e).__name__)")
    result = run(bare_pool, body)
    assert "RESULT=['FileNotFoundError', 'FileNotFoundError']" in result.error or "PermissionError" in result.error


def test_no_network_even_to_localhost(bare_pool: RenderPool) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        body = (f"import socket\nRESULT = []\nfor addr in [('127.0.0.1', {port}), ('1.1.1.1', 80)]:\n"
                "    try:\n        socket.create_connection(addr, timeout=1); RESULT.append('connected')\n"
                "    except OSError as e:\n        RESULT.append(type(e).__name__)")
        result = run(bare_pool, body)
    finally:
        server.close()
    assert "connected" not in result.error and "RESULT=" in result.error


def test_fork_storm_is_capped_and_escapees_die(bare_pool: RenderPool) -> None:
    before = snapshot()
    body = ("import os, time\nkids = 0\ntry:\n    for _ in range(10000):\n        if os.fork() == 0:\n"
            "            os.setsid(); time.sleep(60); os._exit(0)\n        kids += 1\nexcept OSError as e:\n"
            "    RESULT = (kids, type(e).__name__)")
    result = run(bare_pool, body, timeout=6.0)
    assert "BlockingIOError" in result.error  # RLIMIT_NPROC stopped it
    assert_pool_clean(bare_pool, before)  # the setsid sleepers died with the job's PID namespace
    assert bare_pool.render("svg", VALID_SVG, size=(40, 40)).ok


def test_kill_everything_hits_only_the_job(bare_pool: RenderPool) -> None:
    result = run(bare_pool, "import os, signal\nos.kill(-1, signal.SIGKILL)\nRESULT = 'alive'")
    assert result.status in ("invalid", "crashed")
    assert bare_pool.render("svg", VALID_SVG, size=(40, 40)).ok


def test_shell_commands_run_walled_in(bare_pool: RenderPool) -> None:
    before = snapshot()
    body = (f"import subprocess\nRESULT = subprocess.run(['sh', '-c', 'id -u; touch {REPO / MARK} 2>&1; "
            f"cat /root/.bashrc 2>&1 | head -c 40'], capture_output=True, text=True).stdout")
    result = run(bare_pool, body)
    assert "RESULT=" in result.error and "2000000000" in result.error
    assert not (REPO / MARK).exists()
    assert_pool_clean(bare_pool, before)
