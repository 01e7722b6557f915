"""Score one chunk of a rollout batch while the next chunk generates.

A render reward spends its time in the sandbox's worker processes (:mod:`rewards.rendering`), so
the trainer's own process is idle while it waits. With ``algorithm.reward_chunks = k > 1``,
:class:`~zoo.engines.vlm.trainer.ZooGRPOTrainer` generates the batch in ``k`` chunks of rows and
hands each finished chunk to TRL's own reward computation on a background thread, so rendering
chunk ``i`` overlaps generating chunk ``i + 1``; only the last chunk's rewards are waited for.
Rewards are the same numbers as without chunks (each completion is scored on its own row); what
changes is the generation batch size (``k`` smaller ``generate`` calls) and the timing.

One process only: TRL gathers the reward matrix across processes inside its reward call, and a
collective must not run on a side thread. With several processes the trainer scores after
generation, as TRL does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch


def row_chunks(rows: int, chunks: int, group: int) -> list[slice]:
    """``chunks`` contiguous slices of ``rows``, cut at group boundaries (whole groups per chunk)."""
    groups = max(1, rows // max(1, group))
    per = -(-groups // max(1, min(chunks, groups)))
    return [slice(start * group, min((start + per) * group, rows)) for start in range(0, groups, per)]


def merge_generations(parts: Sequence[tuple]) -> tuple:
    """Concatenate the per-chunk outputs of TRL's ``_generate`` (lists end to end, ``None`` kept,
    dicts of per-row lists merged key by key) into the tuple one call would have returned."""
    merged = []
    for values in zip(*parts, strict=True):
        if all(v is None for v in values):
            merged.append(None)
        elif isinstance(values[0], dict):
            keys = dict.fromkeys(k for v in values for k in v)
            merged.append({k: [x for v in values for x in v.get(k, [])] for k in keys})
        else:
            merged.append([x for v in values for x in v])
    return tuple(merged)


class ChunkScorer:
    """Background scoring of generated chunks; :meth:`result` returns the rows in order."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None  # started on first use
        self._futures: list[Future] = []

    def submit(self, score: Callable[..., torch.Tensor], *args: Any) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="reward-overlap")
        self._futures.append(self._executor.submit(score, *args))

    @property
    def pending(self) -> bool:
        return bool(self._futures)

    def result(self) -> torch.Tensor:
        """The ``(rows, n_funcs)`` reward matrix of every chunk submitted since the last call."""
        futures, self._futures = self._futures, []
        return torch.cat([f.result() for f in futures], dim=0)

