"""Rollout plug-ins: a paper's change to *what* the GRPO engine scores or trains on, without a new trainer.

Some papers keep GRPO's loss and advantages but change the rollout around them: SCS resamples the
tail of each trajectory to score how consistent its answer is; Shuffle-R1 keeps only contrasting
pairs of trajectories and re-orders them by advantage before the optimiser steps. Such a change is
a plug-in that a domain registers in :data:`ROLLOUT_PLUGINS` (from its ``algorithms`` module) and a
recipe names under ``algorithm.plugins``; :class:`~zoo.engines.vlm.trainer.ZooGRPOTrainer` calls its
two hooks, in training order:

1. :meth:`RolloutPlugin.before_rewards` — after generation, before the rewards are computed: it may
   generate more text with the policy (:attr:`Rollout.continue_generation`) and add fields to each
   sample's ``meta``, which the rewards then read (``sample.meta``).
2. :meth:`RolloutPlugin.select_rows` — after the advantages: the rows of the generation batch the
   optimiser steps take, in order (rows may repeat or be left out); ``None`` keeps TRL's shuffle.

Plug-ins run on the ``vlm-trl`` engine on one process (the recipe refuses other engines).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from zoo.domains import discover_algorithms, locate_algorithm
from zoo_common.registry import Registry

Messages = list[dict[str, Any]]


@dataclass
class Rollout:
    """One generation batch as :meth:`RolloutPlugin.before_rewards` sees it (B rows).

    Attributes:
        prompts: the chat messages of each row, images as ``{"type": "image", "image": PIL}`` parts.
        completion_ids: the sampled completion of each row, token ids (EOS included when generated).
        metas: each row's ``Sample.meta`` (a fresh dict per row); a plug-in adds keys for the rewards.
        continue_generation: ``fn(prompts, prefixes) -> completions``: samples one continuation per
            request with the policy and the run's sampling settings, the ``prefix`` token ids placed
            after the generation prompt (the assistant turn starts with them); returns token ids.
        decode: token ids -> text, special tokens dropped (as the completions the rewards see).
    """

    prompts: list[Messages]
    completion_ids: list[list[int]]
    metas: list[dict[str, Any]]
    continue_generation: Callable[[list[Messages], list[list[int]]], list[list[int]]]
    decode: Callable[[Sequence[int]], str]


@dataclass(frozen=True)
class ScoredBatch:
    """A scored generation batch as :meth:`RolloutPlugin.select_rows` sees it (B rows, groups contiguous).

    Attributes:
        rewards: (B,) weighted rewards, NaN where a reward could not be computed.
        advantages: (B,) the recipe's estimator's advantages (0 for masked rows).
        group_ids: (B,) int group (prompt) index of each row.
        step: the optimiser step these rows will train (1-based), for schedules.
        total_steps: the run's ``training.steps``.
        rng: the run's seeded generator for any random choice.
    """

    rewards: torch.Tensor
    advantages: torch.Tensor
    group_ids: torch.Tensor
    step: int
    total_steps: int
    rng: np.random.Generator


@dataclass(frozen=True)
class RowSelection:
    """Rows of the batch to train, in order (repeats allowed), and numbers to log under the plug-in's name."""

    rows: list[int]
    metrics: dict[str, float] = field(default_factory=dict)


class RolloutPlugin:
    """Base of rollout plug-ins; both hooks do nothing unless overridden. Constructed from ``kwargs``."""

    name: str = ""

    def check_recipe(self, recipe: Any) -> None:
        """Raise ``ValueError`` (the recipe loader reports it) for recipe settings the plug-in cannot run with."""

    def before_rewards(self, rollout: Rollout) -> None:
        """Add fields to ``rollout.metas`` before the rewards are computed (default: nothing)."""

    def select_rows(self, batch: ScoredBatch) -> RowSelection | None:
        """The rows the optimiser steps take, in order; ``None`` trains every row in TRL's shuffled order."""
        return None

    @property
    def selects_rows(self) -> bool:
        """Whether :meth:`select_rows` is overridden (the trainer then keeps the plug-in's order)."""
        return type(self).select_rows is not RolloutPlugin.select_rows

    @property
    def adds_fields(self) -> bool:
        """Whether :meth:`before_rewards` is overridden (the trainer then builds a :class:`Rollout`)."""
        return type(self).before_rewards is not RolloutPlugin.before_rewards


ROLLOUT_PLUGINS: Registry[type[RolloutPlugin]] = Registry(
    "rollout plug-in", discover=discover_algorithms("rollout plug-in"), locate=locate_algorithm("rollout plug-in")
)
"""Name -> :class:`RolloutPlugin` subclass; domains register theirs from their ``algorithms`` module."""


def register_plugin(cls: type[RolloutPlugin]) -> type[RolloutPlugin]:
    """Class decorator: add ``cls`` under ``cls.name`` (a different class under a taken name is an error)."""
    if not cls.name:
        raise ValueError(f"rollout plug-in {cls.__qualname__} needs a class attribute `name`")
    return ROLLOUT_PLUGINS.register(cls.name, cls)


def build_plugin(name: str, kwargs: dict[str, Any]) -> RolloutPlugin:
    """The plug-in ``name`` built with ``kwargs``; an unknown keyword is a ``TypeError`` naming the plug-in."""
    cls = ROLLOUT_PLUGINS.get(name)
    try:
        return cls(**kwargs)
    except TypeError as err:
        raise TypeError(f"rollout plug-in {name!r}: {err}; see {cls.__module__}.{cls.__qualname__}") from None


def take_rows(batch: dict[str, Any], rows: Sequence[int]) -> dict[str, Any]:
    """``batch`` with every per-row value (tensors of B rows, lists of B items) indexed by ``rows``.

    Scalars (0-d tensors, numbers) are kept. As ``trl``'s ``shuffle_sequence_dict``, but with any
    order and repeats, for a batch whose pixel values are split per row.
    """
    size = len(next(v for v in batch.values() if isinstance(v, list | torch.Tensor) and getattr(v, "ndim", 1) > 0))
    index = torch.as_tensor(list(rows), dtype=torch.long)

    def pick(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.ndim > 0:
            if value.shape[0] != size:
                raise ValueError(f"a batch value has {value.shape[0]} rows, expected {size}")
            return value[index.to(value.device)]
        if isinstance(value, list):
            if len(value) != size:
                raise ValueError(f"a batch value has {len(value)} items, expected {size}")
            return [value[i] for i in index.tolist()]
        return value

    return {key: pick(value) for key, value in batch.items()}
