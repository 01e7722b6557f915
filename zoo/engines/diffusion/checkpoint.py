"""Checkpoints of a diffusion run that resume it exactly.

``checkpoint-N/`` holds the trained tensors (safetensors), the optimiser, EMA, stat tracker and
extra state (a discriminator), and the RNG: the run's generator and torch's global state. It
becomes a checkpoint only when :func:`zoo.runs.mark_complete` writes its marker, so a killed write
is skipped by ``--resume``. With the same recipe, a resumed run is bit-identical on CPU to one
that never stopped (``tests/engines/test_diffusion_engine.py`` checks it).
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from zoo.runs import checkpoint_step, mark_complete, prune_checkpoints

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
    """Write ``checkpoint-<step>`` atomically (main process) and prune to ``save_total_limit``."""
    from safetensors.torch import save_file

    folder = Path(output_dir) / f"checkpoint-{state.step}"
    if not run.accelerator.is_main_process:
        return None
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    save_file(run.trainable_state(), str(folder / WEIGHTS))
    torch.save({
        "step": state.step,
        "optimizer": run.optimizer.state_dict(),
        "ema": run.ema.state_dict() if run.ema is not None else None,
        "tracker": run.tracker.state_dict() if run.tracker is not None else None,
        "extra": {k: v.state_dict() for k, v in run.extra.items() if hasattr(v, "state_dict")},
        "generator": run.generator.get_state(),
        "torch_rng": torch.get_rng_state(),
    }, folder / STATE)  # fmt: skip
    mark_complete(folder, state.step)
    prune_checkpoints(Path(output_dir), run.recipe.training.save_total_limit)
    return folder


def load_checkpoint(run: Run, folder: Path) -> RunState:
    """Restore everything :func:`save_checkpoint` wrote into ``run``; returns the loop state."""
    from safetensors.torch import load_file

    weights = load_file(str(folder / WEIGHTS))
    denoiser = run.accelerator.unwrap_model(run.model.denoiser)
    by_name = dict(denoiser.named_parameters())
    missing = [n for n in weights if n not in by_name]
    if missing or len(weights) != len(run.trainable):
        raise ValueError(f"{folder} does not fit this recipe's trainable weights (unknown: {missing[:3]}, "
                         f"{len(weights)} saved vs {len(run.trainable)} trainable); was LoRA or the model changed?")  # fmt: skip
    with torch.no_grad():
        for name, tensor in weights.items():
            by_name[name].copy_(tensor)
    saved = torch.load(folder / STATE, weights_only=False)
    run.optimizer.load_state_dict(saved["optimizer"])
    if run.ema is not None and saved["ema"] is not None:
        run.ema.load_state_dict(saved["ema"])
    if run.tracker is not None and saved["tracker"] is not None:
        run.tracker.load_state_dict(saved["tracker"])
    for key, value in saved["extra"].items():
        run.extra[key].load_state_dict(value)
    run.generator.set_state(saved["generator"])
    torch.set_rng_state(saved["torch_rng"])
    return RunState(step=checkpoint_step(folder))

