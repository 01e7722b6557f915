"""A control policy whose network outputs Beta concentrations; the pipeline acts with the mean action.

``policy_config.json`` says ``"architecture": "beta-mlp"``; its ``hidden`` sizes and ``activation``
(``tanh`` or ``relu``) describe the trunk, ``min_concentration`` the offset added to ``softplus`` of
the head's ``2 * action_dim`` outputs (alpha for every action dimension, then beta). The action is
the distribution's mean mapped from (0, 1) to [-1, 1], ``2 alpha / (alpha + beta) - 1``: how a
Beta-PPO driving policy (CaRL, arXiv 2504.17838) acts at evaluation.
"""

from __future__ import annotations

from itertools import pairwise

import torch
from torch import nn
from torch.nn import functional as F

from zoo.pipelines.policy import PolicyConfig

ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU}


def concentrations(params: torch.Tensor, min_concentration: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(alpha, beta)``, each ``(B, A)``, from ``(B, 2A)`` head outputs: ``softplus(x) + min_concentration``."""
    alpha, beta = (F.softplus(params) + min_concentration).chunk(2, dim=-1)
    return alpha, beta


def beta_mean(params: torch.Tensor, min_concentration: float = 1.0) -> torch.Tensor:
    """The mean action in [-1, 1] of the Beta distributions given by ``(B, 2A)`` head outputs."""
    alpha, beta = concentrations(params, min_concentration)
    return 2 * alpha / (alpha + beta) - 1


class BetaMLP(nn.Module):
    """``trunk`` (Linear + activation per hidden size) and ``head`` (2 concentrations per action)."""

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__()
        name = str(config.extra.get("activation", "tanh"))
        if name not in ACTIVATIONS:
            raise ValueError(f"beta-mlp activation={name!r}: expected one of {', '.join(ACTIVATIONS)}")
        if config.action_chunk != 1:
            raise ValueError(f"beta-mlp predicts one action per step; action_chunk={config.action_chunk}")
        self.min_concentration = float(config.extra.get("min_concentration", 1.0))
        sizes = [config.observation_dim, *config.hidden]
        layers: list[nn.Module] = []
        for a, b in pairwise(sizes):
            layers += [nn.Linear(a, b), ACTIVATIONS[name]()]
        self.trunk = nn.Sequential(*layers)
        self.head = nn.Linear(sizes[-1], 2 * config.action_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``(B, observation_dim)`` -> mean actions ``(B, action_dim)`` in [-1, 1]."""
        return beta_mean(self.head(self.trunk(obs)), self.min_concentration)
