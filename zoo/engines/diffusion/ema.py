"""The exponential moving average of the trained weights, kept as this rank's shards on a device of the recipe's.

It follows the parameters the optimiser steps: built after the denoiser is sharded (``fully_shard`` replaces every
parameter object, so an average built before would average tensors nothing updates any more), it holds the rows of
each parameter this rank holds, in float32 like the trained weights, on ``training.ema_device`` (``null``: the
weights' own device; ``cpu``: CPU memory, as DanceGRPO keeps its EMA,
XueZeyue/DanceGRPO@15cc71d:fastvideo/train_grpo_flux.py:69-73). Checkpoints hold the whole tensors, gathered
(:func:`zoo.sharding.whole_tensor`), in the form an unsharded run writes, so a run resumes sharded or not.

Written here rather than with diffusers' ``EMAModel``, whose update and decay this reproduces operation for
operation (``s -= (1 - d) (s - w)``; ``d`` warmed up as ``min((1 + s) / (10 + s), decay)``, or ``decay`` from the
first step): ``EMAModel.step`` averages a tensor only when the tensor it is handed ``requires_grad`` and copies it
otherwise, and an FSDP2 shard's local rows carry no ``requires_grad``; it also keeps its average where those
tensors are, not on another device.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from zoo.sharding import local_rows, local_tensor, whole_tensor


class ShardEMA:
    """EMA of ``params`` (each an FSDP2 shard or a plain tensor): this rank's rows, on ``device``.

    The schedule of diffusers' ``EMAModel`` as the recipes configure it: with ``warmup`` the decay of optimiser
    step ``s`` is ``0`` at the first step and ``min((1 + (s - 1)) / (10 + (s - 1)), decay)`` after (Flow-GRPO's
    ``EMAModuleWrapper``, yifan123/flow_grpo@ac4c86e:flow_grpo/ema.py:33-37); without, ``decay`` from the first step
    (DanceGRPO's ``FSDP_EMA``, XueZeyue/DanceGRPO@15cc71d:fastvideo/train_grpo_flux.py:76-85)."""

    def __init__(self, params: Sequence[torch.Tensor], decay: float, *, warmup: bool,
                 device: torch.device | None = None) -> None:  # fmt: skip
        self.decay, self.warmup = decay, warmup
        self.optimization_step = 0
        self.shadow_params = [local_tensor(p).detach().to(device or local_tensor(p).device, copy=True) for p in params]

    @property
    def device(self) -> torch.device:
        """Where the average is kept."""
        return self.shadow_params[0].device

    def get_decay(self, optimization_step: int) -> float:
        """The decay applied at optimiser step ``optimization_step`` (1-based), diffusers' ``EMAModel.get_decay``."""
        if not self.warmup:
            return self.decay
        step = optimization_step - 1
        return 0.0 if step <= 0 else min((1 + step) / (10 + step), self.decay)

    @torch.no_grad()
    def step(self, params: Sequence[torch.Tensor]) -> None:
        """Move the average towards ``params`` after an optimiser step (each rank its own rows: no collective)."""
        self.optimization_step += 1
        one_minus_decay = 1 - self.get_decay(self.optimization_step)
        for shadow, param in zip(self.shadow_params, params, strict=True):
            shadow.sub_(one_minus_decay * (shadow - local_tensor(param).to(shadow.device)))

    @contextlib.contextmanager
    def applied(self, params: Sequence[torch.Tensor]) -> Iterator[None]:
        """``params`` hold the average inside the block and their own values again after it (kept in CPU memory
        meanwhile, as ``EMAModel.store`` keeps them)."""
        rows = [local_tensor(p) for p in params]
        with torch.no_grad():
            kept = [r.detach().cpu().clone() for r in rows]
            for row, shadow in zip(rows, self.shadow_params, strict=True):
                row.copy_(shadow)
        try:
            yield
        finally:
            with torch.no_grad():
                for row, value in zip(rows, kept, strict=True):
                    row.copy_(value)

    def state_dict(self, params: Sequence[torch.Tensor]) -> dict[str, Any]:
        """The whole average on the CPU (gathered from every rank's rows: a collective under sharding), with the
        step count; the keys diffusers' ``EMAModel.state_dict`` writes for them, so older checkpoints load too."""
        whole = [whole_tensor(s, p).cpu() for s, p in zip(self.shadow_params, params, strict=True)]
        return {"decay": self.decay, "optimization_step": self.optimization_step, "shadow_params": whole}

    def load_state_dict(self, saved: dict[str, Any], params: Sequence[torch.Tensor]) -> None:
        """Restore :meth:`state_dict`'s average, each rank keeping its own rows of every tensor, where it keeps them."""
        whole = saved["shadow_params"]
        if len(whole) != len(self.shadow_params):
            raise ValueError(f"the checkpoint's EMA holds {len(whole)} tensors, this run trains "
                             f"{len(self.shadow_params)}; was LoRA or the model changed?")  # fmt: skip
        self.optimization_step = int(saved["optimization_step"])
        self.shadow_params = [local_rows(w, p).to(self.device, copy=True) for w, p in zip(whole, params, strict=True)]
