"""Mixed precision, decided once: fp32 master weights under 16-bit compute, as the authors train.

A bf16 weight of magnitude 0.02 has a spacing of 2^-13 (about 1.2e-4); AdamW's update at the recipes' learning
rates (1e-6) is a hundred times smaller and rounds away, so a run that steps bf16 tensors barely moves. The authors
avoid it the usual way: UI-S1's verl actor is created in fp32 on purpose ("Otherwise, the optimizer is in bf16,
which is incorrect", X-PLUG/MobileAgent@11cea575:UI-S1/verl/workers/fsdp_workers.py:192-199) and computes in bf16
through FSDP's mixed-precision policy (:275-285); DeepSpeed ZeRO-3 keeps fp32 partitions; HF Trainer's ``bf16=True``
autocasts fp32 weights. Here, for every engine that trains weights:

* the **trained** weights, their gradients and AdamW's moments are float32 (LoRA adapters too, peft's default);
* the forward and backward **compute** in ``model.dtype`` (``bfloat16``; ``auto``: bf16 on a GPU that has it, else
  float32) under ``torch.autocast``, or FSDP2's ``MixedPrecisionPolicy`` where the loop shards (:mod:`zoo.sharding`);
* **frozen** copies that are never saved (the KL reference, a LoRA run's base weights) are held in the compute dtype:
  nothing steps them, so a master copy would only cost memory (verl builds UI-S1's reference in bf16,
  ``fsdp_workers.py:197-199``). A frozen vision tower stays in the policy's float32, as verl keeps UI-S1's actor
  whole in fp32: it is saved with the policy, and rounding it would change weights nobody trained.

Stepping 16-bit tensors directly is an opt-in, ``training.fp32_master_weights: false``, which warns once with the
rounding it costs. :mod:`zoo.memory_plan` prices the same :class:`Precision` the engine trains with.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

#: The values ``model.dtype`` takes.
DTYPES = ("auto", "float32", "bfloat16", "float16")
#: Bytes per element of each dtype name.
BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


class PrecisionError(ValueError):
    """A precision the loop cannot train with (named, with what to set instead)."""


@dataclass(frozen=True)
class Precision:
    """What each kind of tensor of a training run is held and computed in (dtype names: ``float32``, ``bfloat16``)."""

    compute: str
    """The forward and backward passes' matmuls (autocast, or FSDP2's ``param_dtype``)."""
    trained: str
    """Weights the optimiser steps, their gradients and AdamW's moments: float32 masters unless opted out."""
    frozen: str
    """Weights nothing steps and nothing saves: the KL reference, a LoRA run's base model."""

    @property
    def mixed(self) -> bool:
        """The compute runs in another dtype than the trained weights are held in (autocast is on)."""
        return self.compute != self.trained

    def dtype(self, kind: str) -> torch.dtype:
        """The torch dtype of ``kind`` (``compute``, ``trained`` or ``frozen``)."""
        import torch

        return getattr(torch, getattr(self, kind))

    @contextlib.contextmanager
    def autocast(self, device_type: str) -> Iterator[None]:
        """Matmuls in the compute dtype over float32 weights (a no-op when nothing is mixed)."""
        if not self.mixed:
            yield
            return
        import torch

        with torch.autocast(device_type=device_type, dtype=self.dtype("compute")):
            yield


def resolve(dtype: str, *, fp32_master_weights: bool = True, cuda: bool = False) -> Precision:
    """The :class:`Precision` of a recipe's ``model.dtype`` and ``training.fp32_master_weights``.

    ``auto`` is bfloat16 on a CUDA device that supports it and float32 elsewhere (a CPU run keeps float32: bf16
    matmuls on a CPU are slow and gain nothing at the tiny models' size); ``cuda=True`` on a machine without one (the
    memory plan, sizing GPUs it does not see) assumes a bf16 GPU (A100, H100). ``float16`` compute needs a loss scaler
    the zoo's own loops do not run: they refuse it (TRL's engine takes it through accelerate)."""
    if dtype not in DTYPES:
        raise PrecisionError(f"model.dtype={dtype!r}; choose one of {list(DTYPES)}")
    if dtype == "auto":
        dtype = "bfloat16" if cuda and _bf16_supported() else "float32"
    trained = "float32" if fp32_master_weights else dtype
    if trained != "float32":
        warn_low_precision_weights(dtype)
    return Precision(compute=dtype, trained=trained, frozen=dtype)


@functools.cache  # once per process, however many times a run resolves its precision
def warn_low_precision_weights(dtype: str) -> None:
    """One warning naming the rounding of stepping ``dtype`` weights directly (``training.fp32_master_weights: false``)."""
    mantissa = {"bfloat16": 7, "float16": 10}[dtype]
    spacing = 2.0 ** (-6 - mantissa)  # a weight of magnitude 0.02 lies in [2^-6, 2^-5)
    logger.warning("training.fp32_master_weights is false: AdamW steps the %s weights themselves, so an update below "
                   "half a weight's spacing rounds away (at |w| = 0.02 the spacing is %.1e: an update under %.1e, as "
                   "at lr 1e-6, leaves the weight unchanged). Keep fp32 master weights unless memory forbids them.",
                   dtype, spacing, spacing / 2)  # fmt: skip


def _bf16_supported() -> bool:
    import torch

    return not torch.cuda.is_available() or torch.cuda.is_bf16_supported()
