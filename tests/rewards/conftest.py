"""Fixtures for reward and sandbox tests: one warm render pool per session, and a leak check."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from rewards import rendering
from rewards.rendering import RenderPool
from rewards.rendering.pool import DEFAULT_UID_BASE

WATCHED_DIRS = ("/tmp", "/var/tmp", "/dev/shm", str(Path.home()), str(Path(__file__).resolve().parents[2]))
VALID_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40">'
             '<rect x="0" y="0" width="20" height="40" fill="#ff0000"/></svg>')


@pytest.fixture(scope="session")
def render_pool() -> Iterator[RenderPool]:
    """Two warm workers for the whole session, also serving ``rewards.render`` (the default pool)."""
    pool = RenderPool(2)
    pool.start()
    rendering._default = pool
    yield pool
    rendering.shutdown_default_pool()


def job_processes() -> list[psutil.Process]:
    """Job processes of the pools this test process started (there should be none between
    renders). A job calls ``setsid``, so it (and anything it started) sits in another session
    than its worker, which leads a session of its own. Only this process's workers are looked
    at: pools other test runs keep on the same machine cannot make this check fail."""
    found = []
    for worker in psutil.Process().children():
        try:
            if "rewards.rendering.worker" not in worker.cmdline():
                continue
            descendants = worker.children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for proc in descendants:
            try:
                if os.getsid(proc.pid) != worker.pid:
                    found.append(proc)
            except ProcessLookupError:
                continue
    return found


def snapshot() -> dict[str, set[str]]:
    return {d: set(os.listdir(d)) if os.path.isdir(d) else set() for d in WATCHED_DIRS}


def assert_pool_clean(pool: RenderPool, before: dict[str, set[str]]) -> None:
    """No job process left, each worker only its server process, no new job-owned file on the host."""
    assert job_processes() == [], f"stray job processes: {job_processes()}"
    for pid in pool.worker_pids:
        tree = psutil.Process(pid).children(recursive=True)
        assert len(tree) <= 1, f"worker {pid} has leftover descendants {tree}"
    after = snapshot()
    for directory, names in after.items():
        new = names - before[directory]
        suspicious = [n for n in new if "pwned" in n]
        for name in new:
            try:
                owner = os.lstat(os.path.join(directory, name)).st_uid
            except FileNotFoundError:
                continue
            if owner >= DEFAULT_UID_BASE:
                suspicious.append(name)
        assert not suspicious, f"files left behind in {directory}: {suspicious}"


@pytest.fixture
def leak_check(render_pool: RenderPool) -> Iterator[RenderPool]:
    """Yields the pool; afterwards checks for leaks and that a valid job still renders correctly."""
    before = snapshot()
    yield render_pool
    assert_pool_clean(render_pool, before)
    result = render_pool.render("svg", VALID_SVG, size=(40, 40), timeout=10)
    assert result.status == "ok", result.error
    assert result.image.getpixel((5, 20)) == (255, 0, 0) and result.image.getpixel((35, 20)) == (255, 255, 255)
