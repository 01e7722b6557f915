"""A pool with the audit hook off (the OS walls alone face the job), and a probe runner that
reads a job's findings back through its error message."""

from __future__ import annotations

import ast
from collections.abc import Iterator

import pytest

from rewards.rendering import RenderPool, RenderResult


@pytest.fixture(scope="module")
def bare_pool() -> Iterator[RenderPool]:
    """One worker, so consecutive jobs share it (what one job leaves, the next would see)."""
    pool = RenderPool(1, audit_hook=False).start()
    yield pool
    pool.close()


def run(pool: RenderPool, body: str, timeout: float = 4.0) -> RenderResult:
    """Run ``body`` (which sets RESULT) and read RESULT back from the error channel."""
    code = body + "\nraise RuntimeError('RESULT=' + repr(RESULT))\n"
    return pool.render("matplotlib", code, size=(16, 16), timeout=timeout)


def probe(pool: RenderPool, body: str, timeout: float = 4.0):
    """:func:`run`, then the job's RESULT as a Python value (the job must have answered)."""
    result = run(pool, body, timeout)
    assert result.status == "invalid" and "RESULT=" in (result.error or ""), (result.status, result.error)
    return ast.literal_eval(result.error.split("RESULT=", 1)[1].rsplit(" (line", 1)[0])
