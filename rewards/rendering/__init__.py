"""Sandboxed renderers for model-written SVG and matplotlib code.

``rewards.render(kind, source, size=(256, 256), timeout=10.0) -> RenderResult`` runs on a
module-level :class:`RenderPool`, started on first use and stopped at interpreter exit.
Rewards that render many samples should call :func:`render_many` (parallel across workers).
What the sandbox does and does not enforce is spelled out in :mod:`rewards.rendering.oslevel`.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Sequence

from rewards.rendering.oslevel import Limits
from rewards.rendering.pool import RenderPool
from rewards.rendering.result import RenderResult
from rewards.rendering.validate import KINDS, Source

__all__ = ["KINDS", "Limits", "RenderPool", "RenderResult", "default_pool", "render", "render_many",
           "shutdown_default_pool"]

_default: RenderPool | None = None
_default_lock = threading.Lock()


def default_pool() -> RenderPool:
    """The shared pool (``RenderPool()`` with default settings), created on first call."""
    global _default
    with _default_lock:
        if _default is None:
            _default = RenderPool()
        return _default


def shutdown_default_pool() -> None:
    """Stop the shared pool's workers (also runs at interpreter exit)."""
    global _default
    with _default_lock:
        if _default is not None:
            _default.close()
            _default = None


atexit.register(shutdown_default_pool)


def render(kind: str, source: Source, *, size: tuple[int, int] = (256, 256), timeout: float = 10.0) -> RenderResult:
    """Render ``source`` (SVG text or matplotlib code) to an RGB image of exactly ``size``."""
    return default_pool().render(kind, source, size=size, timeout=timeout)


def render_many(kind: str, sources: Sequence[Source], *, size: tuple[int, int] = (256, 256),
                timeout: float = 10.0) -> list[RenderResult]:
    """:func:`render` for a batch, spread over the shared pool's workers."""
    return default_pool().render_many(kind, sources, size=size, timeout=timeout)
