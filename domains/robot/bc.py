"""Behaviour cloning of the base policy: an MLP that predicts a chunk of normalised actions.

The base of a residual method is a BC policy (ResiP: a diffusion policy with 8-step chunks; ResFiT:
ACT). Here it is :func:`zoo.pipelines.policy.mlp` trained with mean squared error on
``(observation -> next `chunk` actions)`` pairs of scripted demonstrations, in the normalised
spaces whose statistics are saved beside the weights (``normalization.json``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from zoo.pipelines.policy import Normalization, PolicyConfig, mlp, save_policy

_MIN_STD = 1e-3  # a constant demo dimension (the closed gripper) must not divide by zero


def chunk_targets(actions: np.ndarray, episode_index: np.ndarray, chunk: int) -> np.ndarray:
    """``(N, chunk, A)``: for each step the next ``chunk`` actions of its own episode, the last one repeated."""
    n = len(actions)
    out = np.empty((n, chunk, actions.shape[1]), dtype=actions.dtype)
    for i in range(n):
        for j in range(chunk):
            k = i + j
            out[i, j] = actions[k] if k < n and episode_index[k] == episode_index[i] else out[i, j - 1]
    return out


def normalization_from(observations: np.ndarray, actions: np.ndarray) -> Normalization:
    """Per-dimension mean and std of the demonstrations (std floored at 1e-3)."""
    return Normalization(observations.mean(0).astype(np.float64), np.maximum(observations.std(0), _MIN_STD),
                         actions.mean(0).astype(np.float64), np.maximum(actions.std(0), _MIN_STD))  # fmt: skip


def train_bc(demos: dict[str, np.ndarray], *, chunk: int = 4, hidden: tuple[int, ...] = (256, 256),
             steps: int = 3000, lr: float = 1e-3, batch_size: int = 256,
             seed: int = 0) -> tuple[torch.nn.Module, PolicyConfig, Normalization, list[float]]:  # fmt: skip
    """Fit the base policy; returns the network, its config, its statistics and the loss per step."""
    observations, actions = demos["observations"], demos["actions"]
    config = PolicyConfig(observation_dim=observations.shape[1], action_dim=actions.shape[1], action_chunk=chunk,
                          hidden=hidden)  # fmt: skip
    norm = normalization_from(observations, actions)
    x = torch.as_tensor((observations - norm.obs_mean) / norm.obs_std, dtype=torch.float32)
    targets = chunk_targets(actions, demos["episode_index"], chunk)
    y = torch.as_tensor((targets - norm.action_mean) / norm.action_std, dtype=torch.float32).flatten(1)
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = mlp(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        index = torch.randint(len(x), (min(batch_size, len(x)),), generator=generator)
        loss = torch.nn.functional.mse_loss(model(x[index]), y[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return model.eval(), config, norm, losses


def train_and_save_bc(folder: Path, demos: dict[str, np.ndarray], **kwargs) -> Path:
    """:func:`train_bc`, then a policy directory :func:`zoo.load` reads."""
    model, config, norm, _ = train_bc(demos, **kwargs)
    return save_policy(folder, model, config, norm)
