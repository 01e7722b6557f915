"""What of a diffusion run's denoiser trains (LoRA adapters or every weight, beside a frozen KL reference), where
the ranks hold it (replicated, or sharded with FSDP2 by the zoo) and in which precision.

The recipe's ``launch:`` decides (:meth:`zoo.engines.Engine.launched`, which also checks the job was started as the
recipe says). A DDP config, no config, or a plain ``zoo train`` without a process group: every rank holds the whole
denoiser, which accelerate's ``prepare`` wraps in DDP and autocasts to its ``mixed_precision``. An FSDP config in a
launched job (a process group, of one GPU too): the zoo shards the denoiser itself (:func:`zoo.sharding.shard`:
``fully_shard`` per block of the config's ``fsdp_transformer_layer_cls_to_wrap``, then the whole; a full fine-tune's
KL reference alike), because accelerate's FSDP plugin does nothing on a CPU, so that the sharding CI tests is the one
a GPU runs; the sharded denoiser is not handed to ``prepare``, which would wrap it in DDP. Its parameters stay float32
shards (master weights) and each block is gathered in the compute dtype for its forward and backward (FSDP2's
``MixedPrecisionPolicy``).

Precision (:class:`zoo.precision.Precision`): ``compute`` is accelerate's ``mixed_precision`` (the launch config's;
``no`` under a plain ``torchrun``), ``trained`` is float32 always (the denoiser is loaded in float32: log-probs and
AdamW's moments in float32), ``frozen`` is the recipe's ``model.dtype`` (text encoders, VAE).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from zoo.precision import Precision, PrecisionError
from zoo.sharding import Sharding, ShardingError

if TYPE_CHECKING:
    import torch

    from zoo.engines.diffusion.models import DiffusionModel
    from zoo.engines.diffusion.recipe import DiffusionRecipe

#: accelerate's ``mixed_precision`` values -> the compute dtype they mean.
COMPUTE = {"no": "float32", "bf16": "bfloat16", "fp16": "float16"}


def check_sharding(recipe: DiffusionRecipe, sharding: Sharding) -> None:
    """What the diffusion engine refuses under a sharding (its :class:`~zoo.engines.Engine` ``launch_check``, asked by
    the engine and ``zoo train --plan`` alike): a :class:`~zoo.sharding.ShardingError` before anything loads."""
    if sharding.sharded and recipe.training.lora.enabled:
        raise ShardingError(f"launch: {sharding.launch} shards the denoiser with FSDP, which a LoRA run does not need "
                            "(its adapters are small and the frozen base is held once per GPU anyway): launch it with "
                            "ddp (--set launch=ddp), or train every weight (training.lora.enabled=false)")  # fmt: skip
    if sharding.sharded and sharding.offload:
        raise ShardingError(f"launch: {sharding.launch} offloads the shards to the CPU, which the diffusion engine does "
                            "not do (DanceGRPO keeps FLUX's shards on the GPUs); name fsdp-flux or fsdp-sd3")  # fmt: skip


def run_precision(mixed_precision: str, frozen: str, *, sharded: bool) -> Precision:
    """The run's :class:`~zoo.precision.Precision` from accelerate's ``mixed_precision`` and ``model.dtype``
    (``frozen``). fp16 compute needs a loss scaler, which accelerate runs for the DDP it prepares and FSDP2 sharding
    by the zoo does not: refused there."""
    if mixed_precision not in COMPUTE:
        raise PrecisionError(f"accelerate's mixed_precision={mixed_precision!r}: the diffusion engine computes in "
                             f"one of {sorted(COMPUTE)}")  # fmt: skip
    compute = COMPUTE[mixed_precision]
    if sharded and compute == "float16":
        raise PrecisionError("mixed_precision fp16 under FSDP needs a loss scaler the zoo's sharding does not run; "
                             "launch with mixed_precision bf16 (as zoo/launch/fsdp-*.yaml do)")  # fmt: skip
    return Precision(compute=compute, trained="float32", frozen=frozen)


def adapt(model: DiffusionModel, recipe: DiffusionRecipe, device: torch.device) -> torch.nn.Module | None:
    """LoRA adapters on the denoiser (its base frozen), or, for a full fine-tune with a KL term, a frozen copy of the
    initial denoiser as the reference (returned; ``None`` otherwise)."""
    tr = recipe.training
    if tr.lora.enabled:
        from peft import LoraConfig

        model.denoiser.requires_grad_(False)
        model.denoiser.add_adapter(LoraConfig(r=tr.lora.r, lora_alpha=tr.lora.alpha, init_lora_weights="gaussian",
                                              target_modules=list(tr.lora.target_modules or model.lora_targets())))  # fmt: skip
        return None
    if recipe.algorithm.beta > 0:
        return copy.deepcopy(model.denoiser).requires_grad_(False).to(device)
    return None
