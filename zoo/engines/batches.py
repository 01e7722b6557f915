"""The batch of one round as each engine trains it: prompts, completions and optimiser steps over every process.

A recipe's batch settings are per process (a TRL micro-batch, a diffusion round's prompts) or global (a semi-online
round's episodes); what a run learns from depends on their product with the process count and the accumulation.
Each function here is the engine's own arithmetic, read off its loop (the line it follows is named), and is what
:meth:`zoo.engines.Engine.step_batch` returns: ``tests/contract/test_authors_run.py`` holds it equal to the authors'
batch (:class:`zoo.authors_run.AuthorsBatch`) under the launch line ``zoo train --plan`` prints.
"""

from __future__ import annotations

import math
from typing import Any

from zoo.authors_run import AuthorsRunRow, BatchComparison, StepBatch, describe


def trl_batch(recipe: Any, processes: int) -> StepBatch:
    """TRL's GRPOTrainer (``zoo.engines.vlm.trl_engine.grpo_config``): ``per_device_train_batch_size`` counts
    completions, a generation batch is that times the processes times ``steps_per_generation`` (TRL's default:
    the accumulation), and it is trained ``num_iterations`` times, one optimiser step each."""
    tr, alg = recipe.training, recipe.algorithm
    completions = tr.batch_size * processes * tr.grad_accum
    if completions % alg.num_generations:
        raise ValueError(f"{completions} completions a round (training.batch_size {tr.batch_size} x {processes} "
                         f"processes x grad_accum {tr.grad_accum}) do not make whole groups of "
                         f"algorithm.num_generations={alg.num_generations}")  # fmt: skip
    return StepBatch(prompts=completions // alg.num_generations, completions=completions,
                     optimizer_steps=alg.num_iterations)  # fmt: skip


def semi_online_batch(recipe: Any, processes: int) -> StepBatch:
    """The semi-online loop (``zoo.engines.vlm.semi_online_engine``): ``multi_turn.episodes_per_step`` episodes a
    round over all processes (each rank rolls out its share), ``num_generations`` trajectories each, trained in
    ``multi_turn.mini_batches`` optimiser steps."""
    mt = recipe.multi_turn
    if mt.episodes_per_step % processes:
        raise ValueError(f"multi_turn.episodes_per_step={mt.episodes_per_step} does not split over {processes} processes")
    return StepBatch(prompts=mt.episodes_per_step, completions=mt.episodes_per_step * recipe.algorithm.num_generations,
                     optimizer_steps=mt.mini_batches)  # fmt: skip


def diffusion_batch(recipe: Any, processes: int) -> StepBatch:
    """A flat diffusion round (``zoo.engines.diffusion.trainer.flat_round`` and ``optimise``): each process draws
    ``training.prompts_per_step`` prompts of ``group_size`` images, keeps each image's trained steps as rows (the SDE
    window, else ``int(policy steps x timestep_fraction)``, at least one), and takes an optimiser step every
    ``grad_accum`` micro-batches of ``train_batch_size`` rows, ``num_inner_epochs`` times. Counted with every row
    kept (Flow-GRPO drops rows whose advantage is 0, which the authors' loop does too)."""
    from zoo.engines.diffusion.methods import METHODS
    from zoo.engines.diffusion.recipe import FlatRolloutConfig
    from zoo.engines.diffusion.sampling import policy_steps

    alg, tr = recipe.algorithm, recipe.training
    if not isinstance(alg, FlatRolloutConfig):
        raise ValueError(f"algorithm.method={alg.method!r} samples trees, not flat groups: its round has no fixed batch")
    method = METHODS.get(alg.method)
    stochastic = policy_steps(method.step, alg.num_steps)
    trained = alg.sde_window_size or max(1, int(stochastic * alg.settings(method).timestep_fraction))
    images = tr.prompts_per_step * alg.group_size
    micro_batches = math.ceil(images * trained / tr.train_batch_size)
    steps_per_epoch = math.ceil(micro_batches / (tr.grad_accum or micro_batches))
    return StepBatch(prompts=tr.prompts_per_step * processes, completions=images * processes,
                     optimizer_steps=steps_per_epoch * alg.num_inner_epochs)  # fmt: skip


def compare(recipe: Any, processes: int | None = None) -> BatchComparison:
    """The recipe's round counted by its engine over ``processes`` (default: the processes ``zoo train --plan``
    launches it on), beside the authors' batch of its ``authors_run``: what ``zoo train --plan``, ``zoo info``, the
    card and the docs all compare, on counts."""
    from zoo.engines import ENGINES
    from zoo.launch import sized_processes

    processes = processes or sized_processes(recipe)
    theirs = recipe.authors_run.batch if recipe.authors_run is not None else None
    try:
        ours = ENGINES.get(recipe.engine).step_batch(recipe, processes)
    except ValueError as err:  # an engine or method without fixed rounds, groups that do not divide
        return BatchComparison(processes=processes, ours=None, refusal=str(err), theirs=theirs)
    return BatchComparison(processes=processes, ours=ours, theirs=theirs)


def authors_run_rows(recipe: Any) -> list[AuthorsRunRow]:
    """:func:`zoo.authors_run.describe` of a loaded recipe, its batch :func:`compare`-d: what ``zoo info``, the model
    card and the docs print beside the provenance rows."""
    if recipe.authors_run is None:
        return []
    return describe(recipe.authors_run, compare(recipe), [str(v) for v in recipe.provenance.values()])
