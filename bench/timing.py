"""Timing and reporting helpers shared by the benches that ``bench/gpu_suite.sh`` runs.

On a GPU, kernels run asynchronously: a wall-clock reading taken without synchronising measures
when the host finished queueing work, not when the device finished it. Every timer here
synchronises first, so one helper gives correct numbers on a CPU and on CUDA alike.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch


def sync() -> None:
    """Wait for the queued CUDA work (a no-op without CUDA), so the next clock reading is honest."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_calls(owner: Any, name: str) -> list[float]:
    """Wrap ``owner.name`` so that each call's synchronised wall time (seconds) is appended to the returned list.

    The wrapper is set on the instance (or module), so the code under measurement calls it unchanged:
    a trainer's ``_generate``, a sampler's ``run``, a module-level ``optimise``.
    """
    inner: Callable[..., Any] = getattr(owner, name)
    spent: list[float] = []

    def timed(*args: Any, **kwargs: Any) -> Any:
        sync()
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            sync()
            spent.append(time.perf_counter() - start)

    setattr(owner, name, timed)
    return spent


def device_name(threads: int) -> str:
    """The device a report's numbers come from: the CUDA device's name, else the CPU and its thread count."""
    return torch.cuda.get_device_name() if torch.cuda.is_available() else f"cpu x{threads} thread(s)"


def write_json(report: dict[str, Any], path: str) -> None:
    """Write the report to ``path`` whole (through a temporary file): a step killed mid-write leaves the last one."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".tmp")
    partial.write_text(json.dumps(report, indent=2) + "\n")
    partial.replace(target)


def emit(report: dict[str, Any], path: str | None) -> None:
    """Print the report as JSON and, when ``path`` is given, write it there too (what the GPU suite merges)."""
    print(json.dumps(report, indent=2), flush=True)
    if path:
        write_json(report, path)
