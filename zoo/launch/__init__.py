"""The accelerate config files for multi-GPU runs of the recipes, and what each one means for memory.

The YAML files beside this module are ``accelerate config`` files, passed as they are to
``accelerate launch --config_file`` (the form TRL, diffusers and the authors' repositories ship theirs in). They are
package data, so an installed zoo has them too: ``zoo train RECIPE --plan`` prints each one's path. A recipe names
the one it needs with ``launch: <name>`` (the file's stem); :func:`config_path` refuses an unknown name with close
matches, and :func:`read` parses a file with accelerate's own reader into the few settings that decide per-GPU memory
(:class:`LaunchSettings`). Importing this module imports nothing heavy; :func:`read` imports accelerate.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Where the config files live (inside the installed package).
LAUNCH_DIR = Path(__file__).resolve().parent


class LaunchConfigError(ValueError):
    """A launch config name that names no file here, or a file accelerate cannot read."""


def list_configs() -> list[str]:
    """Names of the shipped configs (file stems), sorted."""
    return sorted(p.stem for p in LAUNCH_DIR.glob("*.yaml"))


def config_path(name: str) -> Path:
    """The file of the config ``name``; :class:`LaunchConfigError` naming close matches when there is none."""
    path = LAUNCH_DIR / f"{name}.yaml"
    if name and "/" not in name and path.is_file():
        return path
    known = list_configs()
    close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.4)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise LaunchConfigError(f"no launch config {name!r} in {LAUNCH_DIR}.{hint} Known: {', '.join(known)}")


@dataclass(frozen=True)
class LaunchSettings:
    """What a launch config sets that changes each GPU's memory (read by :mod:`zoo.memory_plan`)."""

    name: str
    """The config's name (file stem)."""
    path: Path
    """The file, for ``accelerate launch --config_file``."""
    distributed_type: str
    """accelerate's ``DistributedType`` value: ``MULTI_GPU`` (DDP), ``FSDP`` or ``DEEPSPEED``."""
    num_processes: int
    """Processes (GPUs) over all machines; ``accelerate launch --num_processes N`` overrides it."""
    mixed_precision: str
    """``no``, ``fp16`` or ``bf16``: the compute precision of the forward and backward passes."""
    zero_stage: int | None = None
    """DeepSpeed's ZeRO stage (``None`` for DDP and FSDP)."""
    offload_params: bool = False
    """Parameter shards live in CPU memory (DeepSpeed ``offload_param_device: cpu``; FSDP ``fsdp_offload_params``)."""
    offload_optimizer: bool = False
    """Optimiser state lives in CPU memory (DeepSpeed ``offload_optimizer_device: cpu``; FSDP's parameter offload
    takes the optimiser step to the CPU too)."""
    wrap_classes: tuple[str, ...] = ()
    """FSDP's shard units: the module classes of ``fsdp_transformer_layer_cls_to_wrap``."""
    activation_checkpointing: bool = False
    """FSDP recomputes every wrapped block's activations in the backward pass (``fsdp_activation_checkpointing``)."""

    @property
    def sharded(self) -> bool:
        """Parameters, gradients and optimiser state are split over the processes (FSDP, ZeRO-3)."""
        return self.distributed_type == "FSDP" or (self.distributed_type == "DEEPSPEED" and self.zero_stage == 3)


def read(name: str) -> LaunchSettings:
    """Parse the config ``name`` with accelerate's own reader (``load_config_from_file``, what ``accelerate
    launch`` runs) into :class:`LaunchSettings`."""
    from accelerate.commands.config.config_args import load_config_from_file

    path = config_path(name)
    try:
        config = load_config_from_file(str(path))
    except (TypeError, ValueError, KeyError) as err:
        raise LaunchConfigError(f"{path}: accelerate cannot read it ({err})") from err
    kind = getattr(config.distributed_type, "value", str(config.distributed_type))
    fsdp, deepspeed = config.fsdp_config or {}, config.deepspeed_config or {}
    offload = bool(fsdp.get("fsdp_offload_params", False))
    wrap = str(fsdp.get("fsdp_transformer_layer_cls_to_wrap") or "")
    return LaunchSettings(
        name=name, path=path, distributed_type=kind, num_processes=int(config.num_processes),
        mixed_precision=str(getattr(config.mixed_precision, "value", config.mixed_precision)),
        zero_stage=int(deepspeed["zero_stage"]) if "zero_stage" in deepspeed else None,
        offload_params=offload or deepspeed.get("offload_param_device") == "cpu",
        offload_optimizer=offload or deepspeed.get("offload_optimizer_device") == "cpu",
        wrap_classes=tuple(c.strip() for c in wrap.split(",") if c.strip()),
        activation_checkpointing=bool(fsdp.get("fsdp_activation_checkpointing", False)),
    )  # fmt: skip


def sized_processes(recipe: Any) -> int:
    """The processes the recipe is sized for, which ``zoo train --plan`` prints in its launch line: the recipe's
    ``processes``, else its launch config's ``num_processes``, else one."""
    if getattr(recipe, "processes", None):
        return int(recipe.processes)
    return read(recipe.launch).num_processes if recipe.launch else 1
