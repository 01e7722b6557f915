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

import io
import itertools
import json
import math
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from zoo.hub import ResolvedModel
from zoo.model_files import CONFIG_FILES, npy_header, read_bounded, read_json
from zoo.outputs import ActionOutput
from zoo.registry import ModelEntry

CONFIG_FILE = CONFIG_FILES["policy"]  # the file that marks a policy folder (zoo.load, zoo push)
WEIGHTS_FILE = "model.safetensors"
#: Largest ``--observation`` file read (bytes): 200,000 observations of 28 float64 numbers as ``.npy`` are 45 MB.
MAX_OBSERVATION_BYTES = 64 << 20


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


def feedforward(sizes: list[int], activation: type[nn.Module] = nn.ReLU, *, layer_norm: bool = False) -> nn.Sequential:
    """Linear layers through ``sizes``, ``activation`` between them (none after the last).

    ``layer_norm`` puts a LayerNorm between each hidden Linear and its activation (ResFiT's actor and
    critic heads are built so).
    """
    layers: list[nn.Module] = []
    for a, b in itertools.pairwise(sizes[:-1]):
        layers += [nn.Linear(a, b), *([nn.LayerNorm(b)] if layer_norm else []), activation()]
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
        """Actions for ``(B, observation_dim)`` observations (or one ``(observation_dim,)``), in env units.

        Input that is not that many finite numbers, or whose values overflow the normaliser (``1e308`` printed NaN
        actions, review-reliability 10.9), is a ``ValueError`` saying what the policy takes."""
        obs = self._observations(observation)
        norm = self.normalization
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused by name just below
            x = torch.as_tensor((obs - norm.obs_mean) / norm.obs_std, dtype=torch.float32)
        if not torch.isfinite(x).all():
            raise ValueError(f"observation values overflow {self.entry.name}'s normalisation (they lie far outside "
                             "what it was trained on); give values in the environment's own units")  # fmt: skip
        parameter = next(self.model.parameters(), None)
        if parameter is not None:
            x = x.to(device=parameter.device, dtype=parameter.dtype)
        out = self.model(x).float().cpu().numpy().reshape(len(obs), self.config.action_chunk, self.config.action_dim)
        with np.errstate(over="ignore", invalid="ignore"):
            actions = out * norm.action_std + norm.action_mean
        if not np.isfinite(actions).all():
            raise ValueError(f"{self.entry.name}'s actions for this observation are not finite numbers (its values lie "
                             "far outside what the policy was trained on)")  # fmt: skip
        return ActionOutput(actions=actions, chunk=self.config.action_chunk)

    def _observations(self, observation: Any) -> np.ndarray:
        """``observation`` as a ``(B, observation_dim)`` float64 array of finite numbers, or a ``ValueError`` naming
        what the policy takes (a JSON object or ragged lists were a ``TypeError`` traceback)."""
        dim = self.config.observation_dim
        takes = f"{self.entry.name} takes {dim} numbers, or a list of such lists"
        try:
            obs = np.asarray(observation, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"observation {str(observation)[:80]!r} is not numbers; {takes}") from None
        if obs.ndim == 1:
            obs = obs[None]
        if obs.ndim != 2 or obs.shape[1] != dim:
            raise ValueError(f"observation of shape {obs.shape}; {takes} (shape ({dim},) or (B, {dim}))")
        if not np.isfinite(obs).all():
            raise ValueError("observation contains NaN or inf")
        return obs

    def act(self, observation: Any) -> np.ndarray:
        """The next action for one observation; a chunked policy serves its queue before re-planning."""
        if not self._queue:
            self._queue.extend(self(observation).actions[0])
        return self._queue.popleft()

    def reset(self) -> None:
        """Forget queued actions (call at the start of each episode)."""
        self._queue.clear()


def read_observation(source: str) -> Any:
    """What ``zoo run POLICY --observation SOURCE`` gives the policy: a ``.npy`` file, a ``.json`` file, or JSON text.

    Files are read only as regular files under :data:`MAX_OBSERVATION_BYTES` (a FIFO hung the read, ``/dev/zero``
    filled memory: review-reliability 10.9), and a ``.npy`` header is held to the file's length before NumPy
    allocates what it claims. What is not numbers is left to :class:`PolicyPipeline` to name.
    """
    what = "an --observation file"
    if source.endswith(".npy"):
        data = read_bounded(source, MAX_OBSERVATION_BYTES, what)
        try:
            shape, dtype = npy_header(io.BytesIO(data))
            if math.prod(shape) * dtype.itemsize > len(data):
                raise ValueError(f"its header claims {shape} numbers, more than its {len(data):,} bytes hold")
            return np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, EOFError) as err:
            raise ValueError(f"--observation {source}: not a .npy array of numbers ({err})") from None
    if source.endswith(".json"):
        return read_json(Path(source), limit=MAX_OBSERVATION_BYTES, what=what)
    try:
        return json.loads(source)
    except json.JSONDecodeError as err:
        raise ValueError(f"--observation {source[:80]!r} is not a JSON list of numbers ({err})") from None


def save_policy(folder: Path, model: nn.Module, config: PolicyConfig, normalization: Normalization) -> Path:
    """Write a policy directory that :func:`zoo.load` reads (config, safetensors, normalisation)."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / CONFIG_FILE).write_text(json.dumps(config.to_json(), indent=2))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / WEIGHTS_FILE))
    (folder / "normalization.json").write_text(json.dumps(normalization.to_json()))
    return folder
