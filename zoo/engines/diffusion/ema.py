"""The exponential moving average of the trained weights, kept as this rank's shards on a device of the recipe's,
and when it moves: the authors' schedules.

It follows the parameters the optimiser steps: built after the denoiser is sharded (``fully_shard`` replaces every
parameter object, so an average built before would average tensors nothing updates any more), it holds the rows of
each parameter this rank holds, in float32 like the trained weights, on ``training.ema_device`` (``null``: the
weights' own device; ``cpu``: CPU memory, as DanceGRPO keeps its EMA,
XueZeyue/DanceGRPO@15cc71d:fastvideo/train_grpo_flux.py:69-73). Checkpoints hold the whole tensors, gathered
(:func:`zoo.sharding.whole_tensor`), in the form an unsharded run writes, so a run resumes sharded or not.

The schedules. Flow-GRPO (and Adv-GRPO, whose ``adv_grpo/ema.py`` is the same file) calls
``EMAModuleWrapper.step(params, global_step)`` after every sample batch of its training loop
(yifan123/flow_grpo@ac4c86e:scripts/train_sd3.py:954-955), ``global_step`` being the optimiser steps taken so far
(incremented when accelerate syncs the accumulated gradients, L942-952); the call moves the average only when
``(global_step + 1) % update_step_interval == 0`` (8, L445), by ``min((1 + global_step) / (10 + global_step),
decay)`` (flow_grpo/ema.py:33-49). Between two optimiser steps neither the weights nor the count change, so the
calls a window's sample batches make before its step are made here just before it, and the one of the batch that
steps just after (:meth:`ShardEMA.before_optimizer_step`, :meth:`ShardEMA.after_optimizer_step`): the same updates
in the same order, whatever the zoo's own micro-batches are (``training.ema_calls_per_step`` says how many their
window has; their rounds are whole windows, as the zoo's are unless the zero-advantage filter leaves a short
one). DanceGRPO calls ``FSDP_EMA.update`` once per round, after
``train_one_step`` has taken its optimiser steps (XueZeyue/DanceGRPO@15cc71d:fastvideo/train_grpo_flux.py:866-867),
by a constant decay (L76-85): :meth:`ShardEMA.after_round`.

Written here rather than with diffusers' ``EMAModel``: ``EMAModel.step`` averages a tensor only when the tensor it
is handed ``requires_grad`` and copies it otherwise, and an FSDP2 shard's local rows carry no ``requires_grad``; it
also keeps its average where those tensors are, not on another device; and its warm-up counts from its own first
call (``step - 1``), which neither author's schedule does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import torch

from zoo.sharding import local_rows, local_tensor, whole_tensor


class ShardEMA:
    """EMA of ``params`` (each an FSDP2 shard or a plain tensor): this rank's rows, on ``device``, and its schedule.

    Args:
        decay: the decay, or its cap under ``warmup``.
        warmup: decay ``min((1 + s) / (10 + s), decay)`` at step count ``s`` (Flow-GRPO's ``get_current_decay``,
            yifan123/flow_grpo@ac4c86e:flow_grpo/ema.py:33-37); else ``decay`` at every update (DanceGRPO's
            ``FSDP_EMA``, XueZeyue/DanceGRPO@15cc71d:fastvideo/train_grpo_flux.py:76-85).
        interval: a call moves the average only when ``(s + 1) % interval == 0`` (flow_grpo/ema.py:45).
        calls_per_step: with ``every="optimizer_step"``, the calls an optimiser step's window makes: Flow-GRPO's
            sample batches per optimiser step (its ``gradient_accumulation_steps``).
        every: ``"optimizer_step"`` (:meth:`before_optimizer_step` / :meth:`after_optimizer_step` call it) or
            ``"round"`` (:meth:`after_round` does).
    """

    def __init__(self, params: Sequence[torch.Tensor], decay: float, *, warmup: bool, interval: int = 1,
                 calls_per_step: int = 1, every: Literal["optimizer_step", "round"] = "optimizer_step",
                 device: torch.device | None = None) -> None:  # fmt: skip
        self.decay, self.warmup, self.interval = decay, warmup, interval
        self.calls_per_step, self.every = calls_per_step, every
        self.steps = 0
        """The count the schedule reads, the authors' ``global_step``: optimiser steps taken (and, in an Adv-GRPO
        run, its discriminator rounds, :meth:`count_step`)."""
        self.shadow_params = [local_tensor(p).detach().to(device or local_tensor(p).device, copy=True) for p in params]

    @property
    def device(self) -> torch.device:
        """Where the average is kept."""
        return self.shadow_params[0].device

    def get_decay(self, steps: int) -> float:
        """The decay of a call made at step count ``steps``."""
        return min((1 + steps) / (10 + steps), self.decay) if self.warmup else self.decay

    @torch.no_grad()
    def step(self, params: Sequence[torch.Tensor]) -> None:
        """One call at the current count: ``s += (1 - d) (w - s)`` when the interval says so, else nothing (each
        rank its own rows: no collective)."""
        if (self.steps + 1) % self.interval != 0:
            return
        one_minus_decay = 1 - self.get_decay(self.steps)
        for shadow, param in zip(self.shadow_params, params, strict=True):
            shadow.add_(one_minus_decay * (local_tensor(param).to(shadow.device) - shadow))

    def count_step(self) -> None:
        """Advance the count without a call: an optimiser step's, or an Adv-GRPO discriminator round's (both of
        its scripts add one to ``global_step`` before skipping the generator,
        showlab/Adv-GRPO@8287f90:scripts/train_sd3_fast_pickscore.py:1035-1037,
        train_sd3_fast_dino_patch.py:1116-1118)."""
        self.steps += 1

    def before_optimizer_step(self, params: Sequence[torch.Tensor]) -> None:
        """The calls of the window's sample batches before the one that steps: the previous step's weights and
        count, ``calls_per_step - 1`` times."""
        if self.every == "optimizer_step":
            for _ in range(self.calls_per_step - 1):
                self.step(params)

    def after_optimizer_step(self, params: Sequence[torch.Tensor]) -> None:
        """Count the optimiser step just taken, then the call of the sample batch that took it."""
        self.count_step()
        if self.every == "optimizer_step":
            self.step(params)

    def after_round(self, params: Sequence[torch.Tensor]) -> None:
        """The call at the end of a round's training (DanceGRPO's)."""
        if self.every == "round":
            self.step(params)

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
        step count (the key diffusers' ``EMAModel.state_dict`` writes, as older checkpoints do)."""
        whole = [whole_tensor(s, p).cpu() for s, p in zip(self.shadow_params, params, strict=True)]
        return {"decay": self.decay, "optimization_step": self.steps, "shadow_params": whole}

    def load_state_dict(self, saved: dict[str, Any], params: Sequence[torch.Tensor]) -> None:
        """Restore :meth:`state_dict`'s average, each rank keeping its own rows of every tensor, where it keeps them."""
        whole = saved["shadow_params"]
        if len(whole) != len(self.shadow_params):
            raise ValueError(f"the checkpoint's EMA holds {len(whole)} tensors, this run trains "
                             f"{len(self.shadow_params)}; was LoRA or the model changed?")  # fmt: skip
        self.steps = int(saved["optimization_step"])
        self.shadow_params = [local_rows(w, p).to(self.device, copy=True) for w, p in zip(whole, params, strict=True)]
