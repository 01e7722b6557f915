"""Checkpoints of a diffusion run that resume it exactly, in one process or several.

``checkpoint-N/`` holds the trained tensors (``trained.safetensors``) and ``training_state.pt``: the
round, the optimiser, EMA, stat tracker and extra state (Adv-GRPO's discriminator head and its
optimiser), and the randomness of *every* process: each rank's sampling generator and global RNGs
(:func:`zoo.runs.rng_state`), one entry per rank. The ranks' generators are seeded apart
(:func:`~zoo.distributed.rank_seed`) so that they draw different prompts and noise;
storing the main process's alone would hand every rank the same after a resume (duplicate samples,
half the diversity, silently). Every process hands its state to the main process, which alone
writes the folder and then its completion marker (:func:`zoo.runs.mark_complete`): a checkpoint is
complete only with every rank's state in it, and a killed write is skipped by ``--resume``.

A sharded run (FSDP2, :mod:`.placement`) writes the same files: the trained tensors, the optimiser state and the EMA
are gathered whole on the main process (:func:`zoo.sharding.full_state_dict`, :func:`zoo.sharding.optimizer_state`,
:meth:`~zoo.engines.diffusion.ema.ShardEMA.state_dict`; collectives every rank joins) under the names an unsharded
run uses, and on resume each rank keeps its own rows of each. The optimiser state is keyed by parameter name (a
checkpoint keyed by index, as written before, still loads).

The state file holds tensors and plain containers only and is read back with
:func:`zoo.runs.read_state` (``weights_only``): a run directory someone hands over cannot run code
through ``--resume``. With the same recipe and number of processes, a resumed run is bit-identical
on CPU to one that never stopped (``tests/engines/test_diffusion_engine.py``,
``tests/engines/test_diffusion_sharded.py``).
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from zoo.runs import (
    check_finite_weights,
    checkpoint_step,
    mark_complete,
    prune_checkpoints,
    read_state,
    restoring,
    rng_state,
    set_rng_state,
)
from zoo.sharding import load_optimizer_state, local_rows, local_tensor, optimizer_state

if TYPE_CHECKING:
    from zoo.engines.diffusion.setup import Run

logger = logging.getLogger(__name__)
WEIGHTS = "trained.safetensors"
STATE = "training_state.pt"


@dataclass
class RunState:
    """Where the loop stands: rounds completed."""

    step: int = 0


def save_checkpoint(run: Run, state: RunState, output_dir: Path) -> Path | None:
    """Write ``checkpoint-<step>`` atomically and prune to ``save_total_limit``; returns it (``None`` off the
    main process).

    Every process must call it: each hands over its RNG state, and its shards when the denoiser is sharded
    (collectives), the main process writes."""
    from accelerate.utils import gather_object
    from safetensors.torch import save_file

    ranks = gather_object([{"generator": run.generator.get_state(), "global": rng_state()}])
    weights, denoiser = run.trainable_state(), run.accelerator.unwrap_model(run.model.denoiser)
    optimizer = optimizer_state(denoiser, run.optimizer)
    ema = run.ema.state_dict(run.trainable) if run.ema is not None else None
    if not run.accelerator.is_main_process:
        return None
    folder = Path(output_dir) / f"checkpoint-{state.step}"
    check_finite_weights(str(folder), weights)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    save_file(weights, str(folder / WEIGHTS))
    torch.save({
        "step": state.step,
        "optimizer": optimizer,
        "ema": ema,
        "tracker": run.tracker.state_dict() if run.tracker is not None else None,
        "extra": {k: v.state_dict() for k, v in run.extra.items() if hasattr(v, "state_dict")},
        "ranks": ranks,
    }, folder / STATE)  # fmt: skip
    mark_complete(folder, state.step)
    prune_checkpoints(Path(output_dir), run.recipe.training.save_total_limit)
    return folder


def load_checkpoint(run: Run, folder: Path) -> RunState:
    """Restore everything :func:`save_checkpoint` wrote into ``run``, this process's own RNG state included;
    returns the loop state. A state file that needs unpickling is a :class:`zoo.runs.UnsafeStateError`."""
    from safetensors.torch import load_file

    weights = load_file(str(folder / WEIGHTS))
    denoiser = run.accelerator.unwrap_model(run.model.denoiser)
    by_name = dict(denoiser.named_parameters())
    missing = [n for n in weights if n not in by_name]
    if missing or len(weights) != len(run.trainable):
        raise ValueError(f"{folder} does not fit this recipe's trainable weights (unknown: {missing[:3]}, "
                         f"{len(weights)} saved vs {len(run.trainable)} trainable); was LoRA or the model changed?")  # fmt: skip
    saved = read_state(folder / STATE)
    with torch.no_grad():  # each rank its own rows of a sharded weight
        for name, tensor in weights.items():
            local_tensor(by_name[name]).copy_(local_rows(tensor, by_name[name]))
    step = checkpoint_step(folder)
    with restoring(folder / STATE):  # a hand-edited state file: one error naming it
        load_optimizer_state(denoiser, run.optimizer, saved["optimizer"])
        if run.ema is not None and saved["ema"] is not None:
            run.ema.load_state_dict(saved["ema"], run.trainable)
        if run.tracker is not None and saved["tracker"] is not None:
            run.tracker.load_state_dict(saved["tracker"])
        for key, value in saved["extra"].items():
            run.extra[key].load_state_dict(value)
        restore_randomness(run, saved, step, folder)
    return RunState(step=step)


def restore_randomness(run: Run, saved: dict[str, Any], step: int, folder: Path) -> None:
    """Give this process its own generator and global RNG states back from a checkpoint's per-rank entries.

    A checkpoint written by a different number of processes continues, with a warning, on generators
    seeded afresh per rank from (seed, rank, ``step``) rather than being refused: a job that lost or gained
    nodes keeps its weights, optimiser and EMA, which are what a long run is worth, and it could not be the
    run that stopped anyway (``prompts_per_step`` is per process, so the global batch changes). The fresh
    seeds keep the ranks' noise apart, and the step keeps it off the draws of the run's first rounds.
    """
    # written before per-rank states (one process's generator and torch RNG): a one-process checkpoint
    ranks = saved.get("ranks") or [{"generator": saved["generator"], "global": {"torch": saved["torch_rng"]}}]
    rank, world = run.accelerator.process_index, run.accelerator.num_processes
    if len(ranks) != world:
        from zoo.distributed import rank_seed

        logger.warning("%s was written by %d process(es), this run has %d: its sampling RNG is not restored, each "
                       "rank's generator is seeded afresh (the run continues, but not as the one that stopped)",
                       folder, len(ranks), world)  # fmt: skip
        run.generator.manual_seed(rank_seed(run.recipe.training.seed, rank, step))
        return
    run.generator.set_state(ranks[rank]["generator"])
    set_rng_state({**rng_state(), **ranks[rank]["global"]})  # a legacy entry has torch's alone
