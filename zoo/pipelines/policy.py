"""Control policies: ``pipe(observation) -> ActionOutput``, with the statistics that travel with the weights.

A policy directory holds ``policy_config.json`` (architecture and sizes), ``model.safetensors``
and ``normalization.json`` (per-dimension mean and std of observations and actions, as the
imitation data had them). The pipeline normalises observations, runs the network and
de-normalises actions, so a caller works in the environment's units, as lerobot's policies do.
A chunked policy (``action_chunk > 1``) keeps its queue: :meth:`PolicyPipeline.act` returns the
next queued action and only runs the network when the queue is empty.

This module holds what every architecture builds on (the config, :func:`mlp`, the pipeline); which
architectures exist and how a directory becomes a pipeline is :mod:`zoo.pipelines.policy_architectures`,
which imports them all.
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from zoo.hub import ResolvedModel
from zoo.model_files import CONFIG_FILES, read_json
from zoo.outputs import ActionOutput
from zoo.registry import ModelEntry

CONFIG_FILE = CONFIG_FILES["policy"]  # the file that marks a policy folder (zoo.load, zoo push)
WEIGHTS_FILE = "model.safetensors"


@dataclass(frozen=True)
class PolicyConfig:
    """The contents of ``policy_config.json``."""

    observation_dim: int
    action_dim: int
    architecture: str = "mlp"
    action_chunk: int = 1
    hidden: tuple[int, ...] = (256, 256)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"architecture": self.architecture, "observation_dim": self.observation_dim,
                "action_dim": self.action_dim, "action_chunk": self.action_chunk, "hidden": list(self.hidden),
                **self.extra}  # fmt: skip


def read_policy_config(path: Path) -> PolicyConfig:
    """Parse ``path/policy_config.json``; a missing or malformed field is a named error."""
    file = Path(path) / CONFIG_FILE
    try:
        data = read_json(file)
        known = {"architecture", "observation_dim", "action_dim", "action_chunk", "hidden"}
        return PolicyConfig(
            observation_dim=int(data["observation_dim"]), action_dim=int(data["action_dim"]),
            architecture=str(data.get("architecture", "mlp")), action_chunk=int(data.get("action_chunk", 1)),
            hidden=tuple(int(h) for h in data.get("hidden", (256, 256))),
            extra={k: v for k, v in data.items() if k not in known},
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{file}: not a valid policy config ({err}); it needs observation_dim and action_dim") from err


def feedforward(sizes: list[int], activation: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    """Linear layers through ``sizes``, ``activation`` between them (none after the last)."""
    layers: list[nn.Module] = []
    for a, b in itertools.pairwise(sizes[:-1]):
        layers += [nn.Linear(a, b), activation()]
    return nn.Sequential(*layers, nn.Linear(sizes[-2], sizes[-1]))


def mlp(config: PolicyConfig) -> nn.Module:
    """Observation -> ``action_chunk * action_dim`` values, ReLU hidden layers."""
    return feedforward([config.observation_dim, *config.hidden, config.action_chunk * config.action_dim])


@dataclass(frozen=True)
class Normalization:
    """Per-dimension statistics: ``obs_n = (obs - obs_mean) / obs_std``, ``action = a_n * act_std + act_mean``."""

    obs_mean: np.ndarray
    obs_std: np.ndarray
    action_mean: np.ndarray
    action_std: np.ndarray

    @classmethod
    def identity(cls, config: PolicyConfig) -> Normalization:
        o, a = config.observation_dim, config.action_dim
        return cls(np.zeros(o), np.ones(o), np.zeros(a), np.ones(a))

    @classmethod
    def read(cls, file: Path, config: PolicyConfig) -> Normalization:
        data = read_json(Path(file))
        stats = cls(*(np.asarray(data[k], dtype=np.float64) for k in ("obs_mean", "obs_std", "action_mean", "action_std")))
        for name, value, size in (("obs_mean", stats.obs_mean, config.observation_dim),
                                  ("obs_std", stats.obs_std, config.observation_dim),
                                  ("action_mean", stats.action_mean, config.action_dim),
                                  ("action_std", stats.action_std, config.action_dim)):  # fmt: skip
            if value.shape != (size,):
                raise ValueError(f"{file}: {name} has shape {value.shape}, expected ({size},)")
        if (stats.obs_std <= 0).any() or (stats.action_std <= 0).any():
            raise ValueError(f"{file}: standard deviations must be > 0")
        return stats

    def to_json(self) -> dict[str, list[float]]:
        return {k: getattr(self, k).tolist() for k in ("obs_mean", "obs_std", "action_mean", "action_std")}


class PolicyPipeline:
    """A policy network with its normalisation: batched ``pipe(obs)`` and a queued ``pipe.act(obs)``.

    Attributes:
        model: the network (eval mode), normalised observation -> normalised action chunk.
        config: sizes and architecture. normalization: the statistics that came with the weights.
        entry: the catalog entry it was loaded for.
    """

    def __init__(self, model: nn.Module, config: PolicyConfig, normalization: Normalization, entry: ModelEntry,
                 resolved: ResolvedModel) -> None:  # fmt: skip
        self.model = model.eval()
        self.config = config
        self.normalization = normalization
        self.entry = entry
        self.revision = resolved.revision
        self.source = resolved.source
        self._queue: deque[np.ndarray] = deque()

    def __repr__(self) -> str:
        return f"PolicyPipeline({self.entry.name!r}, obs {self.config.observation_dim} -> action {self.config.action_dim})"

    @torch.inference_mode()
    def __call__(self, observation: Any) -> ActionOutput:
        """Actions for ``(B, observation_dim)`` observations (or one ``(observation_dim,)``), in env units."""
        obs = np.asarray(observation, dtype=np.float64)
        if obs.ndim == 1:
            obs = obs[None]
        if obs.ndim != 2 or obs.shape[1] != self.config.observation_dim:
            raise ValueError(f"observation of shape {np.asarray(observation).shape}; {self.entry.name} takes "
                             f"(B, {self.config.observation_dim}) or ({self.config.observation_dim},)")  # fmt: skip
        if not np.isfinite(obs).all():
            raise ValueError("observation contains NaN or inf")
        norm = self.normalization
        x = torch.as_tensor((obs - norm.obs_mean) / norm.obs_std, dtype=torch.float32)
        parameter = next(self.model.parameters(), None)
        if parameter is not None:
            x = x.to(device=parameter.device, dtype=parameter.dtype)
        out = self.model(x).float().cpu().numpy().reshape(len(obs), self.config.action_chunk, self.config.action_dim)
        return ActionOutput(actions=out * norm.action_std + norm.action_mean, chunk=self.config.action_chunk)

    def act(self, observation: Any) -> np.ndarray:
        """The next action for one observation; a chunked policy serves its queue before re-planning."""
        if not self._queue:
            self._queue.extend(self(observation).actions[0])
        return self._queue.popleft()

    def reset(self) -> None:
        """Forget queued actions (call at the start of each episode)."""
        self._queue.clear()


def save_policy(folder: Path, model: nn.Module, config: PolicyConfig, normalization: Normalization) -> Path:
    """Write a policy directory that :func:`zoo.load` reads (config, safetensors, normalisation)."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / CONFIG_FILE).write_text(json.dumps(config.to_json(), indent=2))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / WEIGHTS_FILE))
    (folder / "normalization.json").write_text(json.dumps(normalization.to_json()))
    return folder
