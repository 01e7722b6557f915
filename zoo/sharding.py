"""FSDP2 sharding of the zoo's own training loops (``vlm-sft``, ``vlm-semi-online``, ``diffusion``), decided by the
recipe's ``launch:`` config.

A launch config is an accelerate config file (:mod:`zoo.launch`). TRL's engine hands it to accelerate, which applies
it; the zoo's own loops read it here and do what it says themselves, so the sharding a recipe names is the sharding
its run does, on GPUs and in CI alike (accelerate's FSDP plugin is ignored on a CPU, ``DistributedType.MULTI_CPU``):

* ``MULTI_GPU`` (``ddp``): every rank holds the whole model (:class:`~zoo.distributed.DataParallel` sums the
  gradients);
* ``FSDP``: torch's FSDP2, ``fully_shard`` on every module of the config's ``fsdp_transformer_layer_cls_to_wrap``
  classes (decoder layers, vision blocks, FLUX blocks), then on the whole model. Parameters, gradients and AdamW's
  state are float32 shards (:mod:`zoo.precision`: master weights); a unit is all-gathered in the compute dtype
  (``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)``) for its forward and backward and freed after;
  gradients are reduce-scattered as sums (the loops weight each rank's loss by its share of the global batch, as
  without sharding). ``fsdp_offload_params`` keeps the shards, their gradients and the AdamW step in CPU memory
  (``CPUOffloadPolicy``), as UI-S1's authors run their actor (verl's ``param_offload`` and ``optimizer_offload``,
  X-PLUG/MobileAgent@11cea575:UI-S1/scripts/train_example.sh:76-78). This mirrors verl's FSDP workers
  (``fsdp_workers.py:275-285``: fp32 parameters, bf16 ``param_dtype``, fp32 ``reduce_dtype``) with FSDP2 in place of
  FSDP1;
* ``DEEPSPEED``: refused by these loops (DeepSpeed is TRL's, through accelerate).

Sampling (a rollout's ``generate``, log-probabilities without gradients) runs inside :func:`gathered`: every unit
all-gathered once, so no rank waits on another's decoding and a token costs no communication. Checkpoints gather
the whole state (:func:`full_state_dict`, :func:`optimizer_state`) on rank 0, in the same form an unsharded run
writes: ``final/`` is a plain Hugging Face folder and a checkpoint resumes sharded or not, with any number of
processes the loop's own per-rank state allows.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from zoo.launch import LaunchSettings
    from zoo.precision import Precision

logger = logging.getLogger(__name__)

#: How an engine distributes a run (the ``distributes`` of its :class:`~zoo.engines.Engine`).
#: ``accelerate``: the launch config is accelerate's to apply (DDP, FSDP, DeepSpeed); ``zoo``: DDP, and FSDP done by
#: :func:`shard`; ``none``: one learner process, no launch config; ``ray``: the cluster's own (verl), not read.
DISTRIBUTES = ("accelerate", "zoo", "none", "ray")


@dataclass(frozen=True)
class Holds:
    """What an engine holds beyond its :class:`Sharding` and :class:`~zoo.precision.Precision`, as its code does it
    (stated with the engine, :attr:`zoo.engines.Engine.holds`, and priced by :mod:`zoo.memory_plan`)."""

    samples_gathered: bool = False
    """Sharded by the zoo's FSDP2 or DeepSpeed ZeRO-3, it samples (rollouts, log-probabilities without gradients) on
    the whole model all-gathered in the compute dtype; otherwise a forward gathers one shard unit at a time."""
    reference: str = "frozen"
    """The dtype of its KL reference: ``frozen`` (the precision's frozen dtype) or ``loaded`` (the model's)."""
    reference_with_lora: bool = False
    """It keeps a KL reference beside LoRA adapters (rather than scoring with the adapters disabled)."""
    ddp_reducer: bool = False
    """Replicated, its gradients are averaged by DDP's reducer, whose buckets are a second copy of them (accelerate
    keeps ``gradient_as_bucket_view`` off), rather than summed by :meth:`zoo.distributed.DataParallel.sum_gradients`."""


class ShardingError(ValueError):
    """A launch config the engine does not run, or wrap classes the model lacks."""


@dataclass(frozen=True)
class Sharding:
    """How a loop holds its trained model over the processes of a launch."""

    launch: str
    """The launch config's name (``""``: none)."""
    strategy: str
    """``replicated`` (every rank the whole model: DDP, or one process), ``fsdp`` (:func:`shard`), ``accelerate``
    (the launch config is accelerate's: DDP, FSDP or DeepSpeed, as TRL runs it) or ``ray`` (verl's own)."""
    units: tuple[str, ...] = ()
    """Module classes each made a shard unit (FSDP's ``fsdp_transformer_layer_cls_to_wrap``)."""
    offload: bool = False
    """Shards, gradients and the optimiser step in CPU memory."""
    activation_checkpointing: bool = False
    """Each unit's activations recomputed in the backward pass (``fsdp_activation_checkpointing``)."""
    kind: str = ""
    """The config's accelerate ``distributed_type`` (``MULTI_GPU``, ``FSDP``, ``DEEPSPEED``; ``""``: none)."""

    @property
    def sharded(self) -> bool:
        """The zoo's loop shards the model itself (:func:`shard`)."""
        return self.strategy == "fsdp"


def decide(engine: str, distributes: str, launch: LaunchSettings | None) -> Sharding:
    """What engine ``engine`` (which distributes as ``distributes``) does under ``launch`` (``None``: no config).

    :class:`ShardingError` when it does not run that config: the sentence names what it runs instead."""
    if launch is None:
        return Sharding("", "ray" if distributes == "ray" else "replicated")
    kind, name = launch.distributed_type, launch.name
    if distributes == "ray":
        return Sharding(name, "ray")
    if distributes == "accelerate":
        return Sharding(name, "accelerate", launch.wrap_classes, launch.offload_params, launch.activation_checkpointing,
                        kind)  # fmt: skip
    if distributes == "none":
        raise ShardingError(f"engine {engine} trains in one learner process and runs no launch config; remove "
                            f"launch: {name}")  # fmt: skip
    if kind == "MULTI_GPU":
        return Sharding(name, "replicated", kind=kind)
    if kind == "FSDP":
        return Sharding(name, "fsdp", launch.wrap_classes, launch.offload_params, launch.activation_checkpointing, kind)
    raise ShardingError(f"engine {engine} shards with FSDP2 itself and does not run {kind} (launch: {name}); name an "
                        f"FSDP config (zoo/launch/fsdp-*.yaml) or ddp")  # fmt: skip


def check_launched(sharding: Sharding, world: int) -> None:
    """A multi-process job must run the launch config its recipe names: accelerate tells its processes which one it
    applied (``ACCELERATE_USE_FSDP``, ``ACCELERATE_USE_DEEPSPEED``); :class:`ShardingError` when they disagree, with
    the launch line that runs the recipe as written. ``torchrun`` sets neither: the zoo's own loops shard by the
    recipe whatever started them, and TRL's engine then runs DDP, so a sharded TRL recipe is refused there."""
    import os

    if world == 1 or sharding.strategy == "ray":
        return
    started = ("FSDP" if os.environ.get("ACCELERATE_USE_FSDP", "").lower() == "true"
               else "DEEPSPEED" if os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true" else None)  # fmt: skip
    if sharding.strategy == "accelerate":
        wanted = sharding.kind if sharding.kind in ("FSDP", "DEEPSPEED") else None
    else:  # the zoo's loops: whatever launched them, they do what the recipe says; another sharder is refused
        wanted = started if started == "FSDP" and sharding.sharded else None
    if started != wanted:
        how = (f"accelerate launch --config_file zoo/launch/{sharding.launch}.yaml -m zoo.cli train RECIPE.yaml"
               if sharding.launch else "torchrun --nproc_per_node N -m zoo.cli train RECIPE.yaml")  # fmt: skip
        raise ShardingError(f"this job was started with {started or 'no sharding'} but the recipe's launch is "
                            f"{sharding.launch or 'none'} ({sharding.kind or 'one process'}); start it with: {how}")  # fmt: skip


def units(model: torch.nn.Module, classes: Sequence[str]) -> list[torch.nn.Module]:
    """The modules of ``model`` whose class is one of ``classes``, deepest first (the order ``fully_shard`` needs);
    :class:`ShardingError` when a class names none of them."""
    found = {name: [m for m in model.modules() if type(m).__name__ == name] for name in classes}
    missing = [name for name, modules in found.items() if not modules]
    if missing:
        raise ShardingError(f"the launch config wraps {', '.join(missing)}, which {type(model).__name__} does not "
                            "contain; name a config for this architecture")  # fmt: skip
    depth = {id(m): name.count(".") for name, m in model.named_modules()}
    return sorted((m for modules in found.values() for m in modules), key=lambda m: -depth[id(m)])


def shard(model: torch.nn.Module, sharding: Sharding, precision: Precision, device: torch.device) -> torch.nn.Module:
    """``fully_shard`` every unit of ``sharding`` in ``model``, then the model itself, over all ranks (in place; the
    model is returned). Gradients are reduced as sums over the ranks, not means."""
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard

    mesh = init_device_mesh(device.type, (torch.distributed.get_world_size(),))
    mixed = MixedPrecisionPolicy(param_dtype=precision.dtype("compute"), reduce_dtype=torch.float32)
    options = {"mesh": mesh, "mp_policy": mixed if precision.mixed else MixedPrecisionPolicy(),
               "offload_policy": CPUOffloadPolicy(pin_memory=device.type == "cuda") if sharding.offload else OffloadPolicy()}  # fmt: skip
    if sharding.activation_checkpointing:
        checkpoint_units(model)
    for unit in units(model, sharding.units):
        fully_shard(unit, **options)
    fully_shard(model, **options)
    for module in fsdp_modules(model):
        module.set_gradient_divide_factor(1.0)  # sums: each rank's loss already carries its share of the batch
        module.set_force_sum_reduction_for_comms(True)  # a plain SUM (gloo has no PREMUL_SUM; factor 1 scales nothing)
    return model


def checkpoint_units(model: torch.nn.Module) -> None:
    """Recompute each block's activations in the backward pass with the model's own gradient checkpointing
    (transformers' ``gradient_checkpointing_enable``, diffusers' ``enable_gradient_checkpointing``: per decoder layer
    or transformer block, the units the configs wrap). Not torch's checkpoint wrapper, which renames every parameter
    under it (``_checkpoint_wrapped_module.``) and with them the names checkpoints and ``final/`` are keyed by."""
    for method in ("gradient_checkpointing_enable", "enable_gradient_checkpointing"):
        if callable(getattr(model, method, None)):
            getattr(model, method)()
            return
    raise ShardingError(f"the launch config recomputes activations (fsdp_activation_checkpointing), and "
                        f"{type(model).__name__} has no gradient checkpointing of its own; name a config without it")


def fsdp_modules(model: torch.nn.Module) -> list[Any]:
    """Every module of ``model`` that ``fully_shard`` made a shard unit (the model itself included)."""
    from torch.distributed.fsdp import FSDPModule

    return [m for m in model.modules() if isinstance(m, FSDPModule)]


def is_sharded(model: torch.nn.Module) -> bool:
    """``model`` was sharded by :func:`shard`."""
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


@contextlib.contextmanager
def gathered(model: torch.nn.Module) -> Iterator[None]:
    """Every unit of a sharded ``model`` all-gathered (in the compute dtype) for the block, freed after; a no-op for
    a model that is not sharded. Forward passes inside run without collectives, so ranks may take different numbers
    of them (each decodes its own answers): what sampling and log-probabilities without gradients need."""
    modules = fsdp_modules(model)
    if not modules:
        yield
        return
    # the root's state must initialise before any unit's (FSDP2 does it at the root's first forward; a rollout may
    # come before any forward): torch's own private hook, as FSDP2 offers no public one
    model._get_fsdp_state()._lazy_init()
    for module in modules:
        module.set_reshard_after_forward(False, recurse=False)
        module.unshard()
    try:
        yield
    finally:
        for module in modules:
            module.reshard()
            module.set_reshard_after_forward(module is not model, recurse=False)  # fully_shard's defaults
        # forget the order the block's forwards ran in: FSDP2 prefetches the backward's all-gathers by the last
        # forwards' order, which here differs between ranks (each decoded its own answers): a collective mismatch
        model.reset_iter_state()


def full_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """``model``'s whole state on the CPU: gathered from the shards on rank 0 (a collective: every rank calls it;
    the others get ``{}``), or the model's own state when it is not sharded."""
    if not is_sharded(model):
        return {name: tensor.detach().cpu() for name, tensor in model.state_dict().items()}
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def unsharded_copy(model: torch.nn.Module, weights: dict[str, torch.Tensor]) -> torch.nn.Module:
    """A plain module of ``model``'s class holding ``weights`` (:func:`full_state_dict`), built on the meta device and
    filled without a copy: what ``save_pretrained`` must be called on, since ``fully_shard`` changes the model's class
    (transformers picks the checkpoint's key names and tied weights by class) and the gathered tensors are no longer
    tied to each other."""
    import torch
    from torch.distributed.fsdp import FSDPModule

    plain = next(c for c in type(model).__mro__[1:] if not issubclass(c, FSDPModule))
    with torch.device("meta"):
        copy = plain(model.config)  # the constructor, not _from_config: the config is saved as the run holds it
    copy.load_state_dict(weights, assign=True)
    if hasattr(copy, "tie_weights"):
        copy.tie_weights()
    if getattr(model, "generation_config", None) is not None:
        copy.generation_config = model.generation_config
    return copy.eval()


def trained_names(model: torch.nn.Module) -> list[str]:
    """Names of the parameters an optimiser over ``[p for p in model.parameters() if p.requires_grad]`` steps, in
    its order."""
    return [name for name, param in model.named_parameters() if param.requires_grad]


def optimizer_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """The optimiser's whole state keyed by parameter name (torch's full optimizer state dict), the same whether
    ``model`` is sharded (gathered on rank 0; a collective) or not, so a checkpoint resumes either way."""
    if is_sharded(model):
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        return get_optimizer_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return _named_state(optimizer.state_dict(), trained_names(model))


def load_optimizer_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer, saved: dict[str, Any]) -> None:
    """Restore :func:`optimizer_state` into ``optimizer``; each rank of a sharded ``model`` keeps its own rows of every
    tensor (FSDP2's split). A state keyed by parameter index (checkpoints written before names) loads as it is.

    Written here rather than with torch's ``set_optimizer_state_dict``, which first steps the optimiser once with zero
    gradients to create its state: a parameter the checkpoint has no state for would resume with AdamW's step count
    at 1, not 0, and the run would not continue exactly."""
    names = trained_names(model)
    if all(isinstance(p, int) for group in saved["param_groups"] for p in group["params"]):
        saved = _named_state(saved, names)
    index = {name: i for i, name in enumerate(names)}
    unknown = [p for group in saved["param_groups"] for p in group["params"] if p not in index]
    if unknown:
        raise ValueError(f"the optimiser state names parameters this model does not train: {unknown[:3]}")
    params = [p for group in optimizer.param_groups for p in group["params"]]
    state = {index[name]: {key: _shard_like(value, params[index[name]]) for key, value in values.items()}
             for name, values in saved["state"].items()}  # fmt: skip
    groups = [{**g, "params": [index[p] for p in g["params"]]} for g in saved["param_groups"]]
    optimizer.load_state_dict({"state": state, "param_groups": groups})


def _shard_like(value: Any, param: torch.Tensor) -> Any:
    """``value`` (a whole tensor of ``param``'s shape) cut to this rank's rows when ``param`` is an FSDP2 shard
    (``Shard(0)``: ``torch.chunk`` over the ranks, the split ``fully_shard`` makes); anything else unchanged."""
    import torch
    from torch.distributed.tensor import DTensor, Shard

    if not isinstance(param, DTensor) or not torch.is_tensor(value) or value.shape != param.shape:
        return value
    if tuple(param.placements) != (Shard(0),):
        raise ValueError(f"cannot restore optimiser state into placements {param.placements}; FSDP2 shards dim 0")
    mesh = param.device_mesh
    chunks = torch.chunk(value, mesh.size(), dim=0)
    rank = mesh.get_local_rank()
    local = chunks[rank] if rank < len(chunks) else value.new_empty((0, *value.shape[1:]))
    return DTensor.from_local(local.to(param.to_local().device), mesh, param.placements, run_check=False,
                              shape=param.shape, stride=param.stride())  # fmt: skip


def _named_state(saved: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """An optimiser state keyed by index re-keyed by parameter name (``names[i]`` is parameter ``i``)."""
    return {"state": {names[i]: state for i, state in saved["state"].items()},
            "param_groups": [{**g, "params": [names[i] for i in g["params"]]} for g in saved["param_groups"]]}  # fmt: skip


def local_tensor(param: torch.Tensor) -> torch.Tensor:
    """This rank's rows of ``param`` as a plain tensor sharing its storage (an in-place write reaches the shard the
    next all-gather reads); ``param`` itself when it is not an FSDP2 shard."""
    from torch.distributed.tensor import DTensor

    return param.to_local() if isinstance(param, DTensor) else param


def local_rows(whole: torch.Tensor, param: torch.Tensor) -> torch.Tensor:
    """This rank's rows of ``whole`` (a tensor of ``param``'s full shape, e.g. read from a checkpoint), split as
    ``fully_shard`` split ``param``; ``whole`` itself when ``param`` is not an FSDP2 shard."""
    return local_tensor(_shard_like(whole, param))


def whole_tensor(local: torch.Tensor, param: torch.Tensor) -> torch.Tensor:
    """The whole tensor whose rows every rank holds as ``local``, laid out as ``param``'s shards (a collective: every
    rank calls it and gets the whole); ``local`` itself when ``param`` is not an FSDP2 shard. What a copy kept beside
    the shards (an EMA) is saved through, in the form an unsharded run writes."""
    from torch.distributed.tensor import DTensor

    if not isinstance(param, DTensor):
        return local
    spread = DTensor.from_local(local.to(param.to_local().device), param.device_mesh, param.placements,
                                run_check=False, shape=param.shape, stride=param.stride())  # fmt: skip
    return spread.full_tensor()
