"""The leak check of the sandbox tests looks only at this test process's render jobs: a pool
another program runs on the same machine, mid-job, neither fails nor hides it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from rewards.rendering import RenderPool
from tests.rewards.conftest import job_processes

REPO = Path(__file__).resolve().parents[3]
# a foreign trainer: its own pool, one job sleeping until its 6 s deadline, then a clean exit
FOREIGN = r"""
import sys
from rewards.rendering import RenderPool
with RenderPool(1) as pool:
    open(sys.argv[1], "w").write("ready")
    pool.render("matplotlib", "import time\ntime.sleep(30)\n", size=(8, 8), timeout=6)
"""
# starts FOREIGN detached (reparented away from this test process) and tells its pid
LAUNCH = r"""
import subprocess, sys
proc = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], start_new_session=True,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(proc.pid)
"""


def _has_running_job(pid: int) -> bool:
    """Whether a process below ``pid`` has left its worker's session (a job has)."""
    try:
        workers = psutil.Process(pid).children()
        return any(os.getsid(p.pid) != w.pid for w in workers for p in w.children(recursive=True))
    except (psutil.NoSuchProcess, ProcessLookupError):
        return False


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_only_this_process_jobs_count(render_pool: RenderPool, tmp_path: Path) -> None:
    flag = tmp_path / "ready"
    launched = subprocess.run([sys.executable, "-c", LAUNCH, FOREIGN, str(flag)], cwd=REPO, capture_output=True,
                              text=True, check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    foreign = int(launched.stdout)
    try:
        assert foreign not in [p.pid for p in psutil.Process().children(recursive=True)]
        assert _wait_for(lambda: flag.exists() and _has_running_job(foreign), 60), "the foreign job never ran"
        assert job_processes() == []  # its job is running right now, and is not ours

        own: list = []
        # the job lives until its timeout: long enough to be seen starting on a machine busy with other test workers
        thread = threading.Thread(target=lambda: own.append(render_pool.render(
            "matplotlib", "import time\ntime.sleep(30)\n", size=(8, 8), timeout=6)))
        thread.start()
        assert _wait_for(lambda: job_processes() != [], 6), "this process's running job was not seen"
        thread.join()
        assert own[0].status == "timeout" and job_processes() == []
    finally:
        assert _wait_for(lambda: not psutil.pid_exists(foreign), 60), "the foreign pool did not exit"
