"""The OS walls alone (audit hook off): what a job that got past the Python guard can still
not do. As root, jobs run as a job uid; as another user (see ``test_unprivileged``), as uid 0 of
the worker's user namespace with no capability."""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

import pytest

from rewards.rendering import RenderPool
from tests.rewards.adversarial.conftest import run
from tests.rewards.conftest import VALID_SVG, assert_pool_clean, snapshot

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/ns/net"), reason="the OS walls need Linux namespaces")
MARK = f"pwned-{uuid.uuid4().hex[:8]}"
REPO = Path(__file__).resolve().parents[3]
CHART = "\nimport matplotlib.pyplot as plt\nfig = plt.figure()\nfig.text(0.1, 0.5, RESULT)\n"


@pytest.mark.parametrize("target", [f"/tmp/{MARK}", f"/var/tmp/{MARK}", f"/dev/shm/{MARK}",
                                    str(Path.home() / MARK), str(REPO / MARK), f"/etc/{MARK}"],
                         ids=lambda target: str(Path(target).parent))  # the same ids in every test process (xdist)
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
    job_uid = bare_pool.isolation["job_uid"]  # None: uid 0 of a user namespace, no capability
    assert "RESULT=" in result.error, result.error
    assert result.error.split("RESULT=", 1)[1][1:].startswith(f"{job_uid or 0}\\n"), result.error  # `id -u`
    assert not (REPO / MARK).exists()
    assert_pool_clean(bare_pool, before)
