"""Every policy architecture by name, and the loader that builds a policy directory into its pipeline.

``policy_config.json`` names its architecture; the built-in ones are ``mlp`` (the behaviour-cloned
base policies of the robot recipes), ``residual-mlp`` (a frozen base plus a per-step residual,
:mod:`zoo.pipelines.residual_policy`), ``beta-mlp`` (a Beta-distribution head acting with its mean,
:mod:`zoo.pipelines.beta_policy`) and ``diffusion-mlp`` (a DDPM action-chunk policy,
:mod:`zoo.pipelines.diffusion_policy`); others register a builder in :data:`ARCHITECTURES` (and, for a
stateful policy, a pipeline class in :data:`PIPELINES`). The table sits above the architectures it
lists, which build on :mod:`zoo.pipelines.policy`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from zoo.hub import ResolvedModel
from zoo.model_files import check_safetensors
from zoo.pipelines.beta_policy import BetaMLP
from zoo.pipelines.diffusion_policy import DiffusionPolicy
from zoo.pipelines.policy import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    Normalization,
    PolicyConfig,
    PolicyPipeline,
    mlp,
    read_policy_config,
)
from zoo.pipelines.residual_policy import ResidualPolicy, ResidualPolicyPipeline
from zoo.registry import ModelEntry

logger = logging.getLogger(__name__)

#: architecture name -> builder ``fn(PolicyConfig) -> nn.Module``.
ARCHITECTURES: dict[str, Callable[[PolicyConfig], nn.Module]] = {
    "mlp": mlp, "residual-mlp": ResidualPolicy, "beta-mlp": BetaMLP, "diffusion-mlp": DiffusionPolicy,
}  # fmt: skip
#: architecture name -> pipeline class, for architectures whose pipeline is not :class:`PolicyPipeline`.
PIPELINES: dict[str, type[PolicyPipeline]] = {"residual-mlp": ResidualPolicyPipeline}


def check_shapes(builder: Callable[[PolicyConfig], nn.Module], config: PolicyConfig, weights: Path) -> None:
    """Refuse a ``policy_config.json`` whose network does not match the weights, before any storage is allocated.

    The network is built on the meta device (shapes only) and its tensors compared with the safetensors header
    (read alone, no tensor data): a config asking for ``hidden: [60000, 60000]`` beside 256-wide weights tried a
    14 GB allocation before ``load_state_dict`` compared them (review-reliability 10.10).
    """
    from safetensors import safe_open

    with torch.device("meta"):
        planned = {name: tuple(t.shape) for name, t in builder(config).state_dict().items()}
    with safe_open(str(weights), framework="pt") as stored_file:
        stored = {name: tuple(stored_file.get_slice(name).get_shape()) for name in stored_file.keys()}
    missing, unexpected = sorted(planned.keys() - stored.keys()), sorted(stored.keys() - planned.keys())
    if missing or unexpected:
        raise ValueError(f"{weights} does not hold the network {weights.parent / CONFIG_FILE} describes (missing: "
                         f"{missing[:3]}, not in it: {unexpected[:3]}); the two files come from different "
                         "policies")  # fmt: skip
    name = next((n for n in planned if planned[n] != stored[n]), None)
    if name is not None:
        raise ValueError(f"{weights.parent / CONFIG_FILE} asks for {name} of shape {planned[name]}, but {weights} "
                         f"holds {stored[name]}; the two files come from different policies")  # fmt: skip


def load_policy_pipeline(entry: ModelEntry, resolved: ResolvedModel, device: str, dtype: torch.dtype) -> PolicyPipeline:
    """Build the network from ``policy_config.json`` and load its safetensors weights strictly."""
    from safetensors.torch import load_file

    config = read_policy_config(resolved.path)
    builder = ARCHITECTURES.get(config.architecture)
    if builder is None:
        raise ValueError(f"{resolved.path}: unknown policy architecture {config.architecture!r}; "
                         f"known: {', '.join(ARCHITECTURES)}")  # fmt: skip
    weights = resolved.path / WEIGHTS_FILE
    if not weights.is_file():
        raise FileNotFoundError(f"{resolved.path} has no {WEIGHTS_FILE}; the zoo loads safetensors only")
    check_safetensors(weights)
    check_shapes(builder, config, weights)
    model = builder(config)
    model.load_state_dict(load_file(str(weights)), strict=True)
    pipeline = PIPELINES.get(config.architecture, PolicyPipeline)
    stats_file = resolved.path / entry.spec.normalization
    if stats_file.is_file():
        normalization = Normalization.read(stats_file, config)
    else:
        logger.warning("%s has no %s; observations and actions are used unnormalised", resolved.path, stats_file.name)
        normalization = Normalization.identity(config)
    return pipeline(model.to(device=device, dtype=dtype), config, normalization, entry, resolved)
