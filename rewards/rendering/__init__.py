"""Sandboxed renderers for model-written SVG, matplotlib and CadQuery code.

Kinds (:data:`KINDS`): ``svg`` (cairosvg) and ``matplotlib`` are preloaded by every default pool;
the optional ones get a shared pool each on first use (:func:`pool_for`): ``svg-skia``
(:mod:`~rewards.rendering.svg_skia`), ``matplotlib-facts`` (:mod:`~rewards.rendering.chart_facts`),
``cadquery`` and ``cadquery-geometry`` (:mod:`~rewards.rendering.cad`).

``rewards.render(kind, source, size=(256, 256), timeout=10.0) -> RenderResult`` runs on a
module-level :class:`RenderPool`, started on first use and stopped at interpreter exit.
Rewards that render many samples should call :func:`render_many`: parallel across workers, and
for SVG in batch jobs of up to 16 samples, each sample still judged alone
(:mod:`~rewards.rendering.batching`).
What the sandbox does and does not enforce is spelled out in :mod:`rewards.rendering.oslevel`.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Sequence

from rewards.rendering.oslevel import Limits
from rewards.rendering.pool import RenderPool
from rewards.rendering.result import RenderResult
from rewards.rendering.validate import DEFAULT_KINDS, KINDS, RendererUnavailableError, Source

__all__ = ["KINDS", "Limits", "RenderPool", "RenderResult", "RendererUnavailableError", "close_optional_pools",
           "default_pool", "pool_for", "render", "render_many", "shutdown_default_pool"]

_default: RenderPool | None = None
_default_lock = threading.Lock()


def default_pool() -> RenderPool:
    """The shared pool (``RenderPool()`` with default settings), created on first call."""
    global _default
    with _default_lock:
        if _default is None:
            _default = RenderPool()
        return _default


_optional: dict[str, RenderPool] = {}


def pool_for(kind: str) -> RenderPool:
    """The shared pool for ``DEFAULT_KINDS``; one more shared pool per optional kind (``svg-skia``),
    so a chart run never loads skia and an SVG run never loads matplotlib workers it does not use."""
    if kind in DEFAULT_KINDS or kind not in KINDS:
        return default_pool()  # an unknown kind gets the pool's own named error
    with _default_lock:
        if kind not in _optional:
            _optional[kind] = RenderPool(kinds=(kind,))
        return _optional[kind]


def close_optional_pools() -> None:
    """Stop the shared pools of the optional kinds (a test module that used them cleans up after itself)."""
    with _default_lock:
        while _optional:
            _optional.popitem()[1].close()


def shutdown_default_pool() -> None:
    """Stop the shared pools' workers (also runs at interpreter exit)."""
    global _default
    with _default_lock:
        if _default is not None:
            _default.close()
            _default = None
    close_optional_pools()


atexit.register(shutdown_default_pool)


def render(kind: str, source: Source, *, size: tuple[int, int] = (256, 256), timeout: float = 10.0) -> RenderResult:
    """Render ``source`` (SVG text or matplotlib code) to an RGB image of exactly ``size``."""
    return pool_for(kind).render(kind, source, size=size, timeout=timeout)


def render_many(kind: str, sources: Sequence[Source], *, size: tuple[int, int] = (256, 256),
                timeout: float = 10.0) -> list[RenderResult]:
    """:func:`render` for a batch, spread over the shared pool's workers."""
    return pool_for(kind).render_many(kind, sources, size=size, timeout=timeout)
