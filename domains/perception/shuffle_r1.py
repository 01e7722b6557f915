"""Shuffle-R1 (Zhu et al., arXiv 2508.05612): Pairwise Trajectory Sampling and Advantage-based Batch Shuffle.

Source: xiaomi-research/shuffle-r1 @ 31d3ff03 (the code behind XenoZLH/Shuffle-R1's README):
``shuffle_r1/custom_algos.py`` (``compute_pairwise_purning_grpo_advantage``, ``normalize_advantage``)
and ``shuffle_r1/ray_trainer.py`` (``compute_advantage``, ``RayPPOTrainer.experience_resampling``).

* **Pairwise Trajectory Sampling (PTS).** Each prompt is rolled out G times (even G). In each group
  the rows are sorted by GRPO advantage, highest first (a stable sort), and paired outside-in: best
  with worst, second with second-worst, ... The first ``int(G/2 * (1 - prune_ratio))`` pairs are kept,
  i.e. the most contrasting ones. A pair's weight is ``|a1| + |a2|`` (``sum``), ``max(|a1|, |a2|)``
  (``max``), their mean (``mean``), or ``|max(a1, a2)|`` (``pos``). Advantages are GRPO's over the
  *whole* group (``(r - mean) / (std + 1e-6)``, unbiased std): the engine's ``grpo`` estimator.
* **Advantage-based Batch Shuffle (ABS).** The kept pairs are drawn ``replay_times`` times, each
  round without replacement with probability ``normalize(weight)`` (``power``: ``w**p``; ``softmax``:
  ``exp(w / T)`` with ``T`` decaying from ``t_max`` to ``t_min`` by a cosine over training;
  ``log_softmax``: ``log(1 + w / T)`` with ``T`` rising by a sine; ``inverse``: ``1 / (w + 1e-6)``),
  and the rounds are concatenated, so high-advantage pairs appear several times and weak ones not at
  all; the batch keeps its size and order into the optimiser's mini-batches (no further shuffle).
  ``replay_times <= 1`` keeps the kept pairs in order (upstream's ``experience_replay: false``).

Where the zoo's engine differs (the zoo's reading, each noted where it is made):

* Upstream sizes a round as ``int(global_batch * (rollout_rows / global_batch) / (2 * replay_times))``
  pairs, which is ``n_pairs / replay_times`` when the numbers divide, and asserts the total equals the
  kept rows. Here ``n_pairs`` is split into ``min(replay_times, n_pairs)`` rounds as evenly as possible
  (the first rounds take the remainder), so small batches work; equal to upstream whenever it divides.
* Upstream's ``np.random.choice(..., replace=False)`` raises when fewer pairs have a non-zero
  probability than a round draws (e.g. flat groups, all weights 0). Here the round takes every pair of
  non-zero probability, then fills up uniformly from the rest.
* The schedule's step is the optimiser step being trained (1-based) over ``training.steps``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from zoo.engines.vlm.plugins import RolloutPlugin, RowSelection, ScoredBatch, register_plugin

SAMPLING_METHODS = ("power", "softmax", "log_softmax", "inverse", "buffer")
PAIR_WEIGHTS = ("sum", "max", "mean", "pos")


@dataclass(frozen=True)
class Pair:
    """Two rows of one group, higher advantage first, and the weights ABS may sample by."""

    rows: tuple[int, int]
    sum: float
    max: float
    mean: float
    pos: float


def pair_trajectories(advantages: torch.Tensor | Sequence[float], group_ids: torch.Tensor | Sequence[int],
                      prune_ratio: float = 0.5) -> list[Pair]:  # fmt: skip
    """PTS: the kept pairs of every group, groups in order of first appearance, pairs outside-in.

    Args:
        advantages: (B,) GRPO advantages of the rows.
        group_ids: (B,) group of each row; every group must have an even number of rows.
        prune_ratio: share of each group's pairs dropped (upstream ``purning_ratio``; 0 keeps all).
    """
    adv = torch.as_tensor(advantages, dtype=torch.float32).reshape(-1)
    groups: dict[Any, list[int]] = {}
    for row, gid in enumerate(torch.as_tensor(group_ids).reshape(-1).tolist()):
        groups.setdefault(gid, []).append(row)
    if len(adv) != sum(len(rows) for rows in groups.values()):
        raise ValueError(f"advantages has {len(adv)} rows but group_ids has {sum(map(len, groups.values()))}")
    kept: list[Pair] = []
    for gid, rows in groups.items():
        if len(rows) % 2:
            raise ValueError(f"group {gid} has {len(rows)} rollouts; Shuffle-R1 pairs them, so G must be even")
        ranked = sorted(rows, key=lambda r: adv[r].item(), reverse=True)  # stable, as upstream's list.sort
        pairs = []
        for i in range(len(ranked) // 2):
            hi, lo = ranked[i], ranked[len(ranked) - 1 - i]
            a, b = adv[hi], adv[lo]
            pairs.append(Pair((hi, lo), (a.abs() + b.abs()).item(), torch.maximum(a.abs(), b.abs()).item(),
                              ((a.abs() + b.abs()) / 2).item(), torch.maximum(a, b).abs().item()))  # fmt: skip
        kept += pairs[: int(len(pairs) * (1.0 - prune_ratio))]
    return kept


def sampling_probabilities(weights: Sequence[float], method: str = "power", power: float = 1.0, step: int = 0,
                           total_steps: int = 1, t_max: float = 2.0, t_min: float = 1.0) -> np.ndarray:  # fmt: skip
    """ABS's ``normalize_advantage``: transform the pair weights, divide by their sum.

    An all-zero result (every pair flat) gives all-zero probabilities rather than upstream's NaN;
    :func:`shuffle_pairs` then draws uniformly.
    """
    if method not in SAMPLING_METHODS:
        raise ValueError(f"sampling method {method!r}; choose one of {SAMPLING_METHODS}")
    w = np.asarray(weights, dtype=np.float64)
    progress = step / max(total_steps, 1)
    if method in ("power", "buffer"):
        w = w**power
    elif method == "softmax":  # higher temperature early: flatter probabilities
        w = np.exp(w / ((t_max - t_min) * math.cos(0.5 * math.pi * progress) + t_min))
    elif method == "log_softmax":
        w = np.log(1 + w / ((t_max - t_min) * math.sin(0.5 * math.pi * progress) + t_min))
    else:
        w = 1 / (w + 1e-6)
    total = w.sum()
    return w / total if total > 0 else np.zeros_like(w)


def _round_sizes(n_pairs: int, replay_times: int) -> list[int]:
    rounds = min(replay_times, n_pairs)
    base, extra = divmod(n_pairs, rounds)
    return [base + (i < extra) for i in range(rounds)]


def _draw(probabilities: np.ndarray, size: int, rng: np.random.Generator) -> list[int]:
    nonzero = np.flatnonzero(probabilities > 0)
    if len(nonzero) >= size:
        return rng.choice(len(probabilities), size=size, replace=False, p=probabilities).tolist()
    rest = np.flatnonzero(probabilities <= 0)
    return [*nonzero.tolist(), *rng.choice(rest, size=size - len(nonzero), replace=False).tolist()]


def shuffle_pairs(probabilities: np.ndarray, replay_times: int, rng: np.random.Generator) -> list[int]:
    """ABS: pair indices in training order, ``len(probabilities)`` of them (see module docstring)."""
    n_pairs = len(probabilities)
    if replay_times <= 1 or n_pairs == 0:
        return list(range(n_pairs))
    return [i for size in _round_sizes(n_pairs, replay_times) for i in _draw(probabilities, size, rng)]


@register_plugin
class ShuffleR1(RolloutPlugin):
    """Shuffle-R1's PTS + ABS on the GRPO engine (recipe: ``algorithm.plugins: [{name: shuffle-r1}]``).

    Args (upstream names in brackets; defaults are upstream's ``examples/qwen2_5_vl_7b.sh`` and config):
        prune_ratio: share of each group's pairs dropped [``worker.actor.purning_ratio``, 0.5]; with
            ``num_generations: 16`` the optimiser trains 8 rollouts per prompt, as upstream.
        replay_times: ABS rounds [``trainer.replay_times``, 8]; ``0`` or ``1`` turns ABS off
            [``trainer.experience_replay: false``].
        sampling_method: [``trainer.sampling_method``, ``power``]; see :func:`sampling_probabilities`.
        sampling_coeff: the power ``p`` [``trainer.sampling_coeff``, 1].
        sampling_weight: pair weight, ``sum`` | ``max`` | ``mean`` | ``pos`` [``trainer.sampling_weight``, ``sum``].
        t_max, t_min: temperature range of the ``softmax`` / ``log_softmax`` schedules (upstream's
            function defaults, 2 and 1).
    """

    name = "shuffle-r1"

    def __init__(self, prune_ratio: float = 0.5, replay_times: int = 8, sampling_method: str = "power",
                 sampling_coeff: float = 1.0, sampling_weight: str = "sum", t_max: float = 2.0,
                 t_min: float = 1.0) -> None:  # fmt: skip
        if not 0.0 <= prune_ratio < 1.0:
            raise ValueError(f"prune_ratio must be in [0, 1), got {prune_ratio}")
        if sampling_method not in SAMPLING_METHODS:
            raise ValueError(f"sampling_method {sampling_method!r}; choose one of {SAMPLING_METHODS}")
        if sampling_weight not in PAIR_WEIGHTS:
            raise ValueError(f"sampling_weight {sampling_weight!r}; choose one of {PAIR_WEIGHTS}")
        if t_max < t_min:
            raise ValueError(f"t_max ({t_max}) must be >= t_min ({t_min})")
        self.prune_ratio, self.replay_times = prune_ratio, int(replay_times)
        self.sampling_method, self.sampling_coeff, self.sampling_weight = sampling_method, sampling_coeff, sampling_weight
        self.t_max, self.t_min = t_max, t_min

    def check_recipe(self, recipe: Any) -> None:
        """Refuse settings under which no pair survives or the advantages are not GRPO's."""
        g = recipe.algorithm.num_generations
        if g % 2:
            raise ValueError(f"algorithm.num_generations={g} must be even: rollouts are paired")
        if int(g // 2 * (1.0 - self.prune_ratio)) < 1:
            raise ValueError(f"prune_ratio={self.prune_ratio} keeps no pair of a group of {g}; lower it or raise G")
        if recipe.algorithm.adv_estimator != "grpo" or not recipe.algorithm.normalize_std:
            raise ValueError("Shuffle-R1 ranks rollouts by GRPO's std-normalised advantage: use adv_estimator: grpo "
                             "with normalize_std: true")  # fmt: skip

    def select_rows(self, batch: ScoredBatch) -> RowSelection:
        pairs = pair_trajectories(batch.advantages, batch.group_ids, self.prune_ratio)
        weights = [getattr(p, self.sampling_weight) for p in pairs]
        probs = sampling_probabilities(weights, self.sampling_method, self.sampling_coeff, batch.step,
                                       batch.total_steps, self.t_max, self.t_min)  # fmt: skip
        order = shuffle_pairs(probs, self.replay_times, batch.rng)
        rows = [row for i in order for row in pairs[i].rows]
        return RowSelection(rows, {"kept_rows": float(len(rows)), "distinct_pairs": float(len(set(order))),
                                   "mean_pair_weight": float(np.mean(weights)) if weights else 0.0})  # fmt: skip
