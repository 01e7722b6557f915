"""SERL (Luo et al. 2024, arXiv 2401.16013, ``rail-berkeley/serl``): the losses of its SAC agent.

SERL trains image policies on real robots with SAC (RLPD-style: demonstrations in the batch, high
update-to-data ratio, optionally a REDQ critic ensemble), in JAX. The losses, as
``serl_launcher/serl_launcher/agents/continuous/sac.py`` writes them (commit cd5f7e7, lines
134-234) with the temperature of ``networks/lagrange.py`` (lines 9-79):

* **critic**: ``y = r + discount * mask * min_k Q'_k(s', a')`` over ``critic_subsample_size``
  randomly drawn target critics (all of them when unset), ``a' ~ pi(s')``; with ``backup_entropy``
  ``- alpha * log pi(a'|s')`` is subtracted from ``y`` *outside* the discount and mask; the loss is
  the mean over critics and batch of ``(Q_k(s, a) - y)^2``;
* **actor**: ``-mean(mean_k Q_k(s, a) - alpha * log pi(a|s))``, ``a ~ pi(s)``;
* **temperature**: ``alpha = softplus(lambda)``; the loss is ``alpha * (H - H_target)`` with
  ``H = -mean log pi(a'|s')`` and ``H_target = -action_dim / 2`` by default (``sac.py:387-388``).

The launcher's agents use ten critics with two subsampled, no entropy backup and temperature 0.01
at the start (``serl_launcher/utils/launcher.py:71-75``). Only these functions run here (checked
against the authors' code in ``tests/domains/robot/test_seed_maths.py``); the ResNet-10 encoder,
the actor/learner processes, the reward classifiers and the Franka environments do not.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F


def critic_target(rewards: torch.Tensor, masks: torch.Tensor, next_qs: torch.Tensor, next_log_probs: torch.Tensor,
                  *, discount: float, temperature: float, backup_entropy: bool = False,
                  subsample: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
    """SERL's TD target ``(B,)`` from target-critic values ``next_qs`` ``(K, B)`` at ``(s', a')``.

    ``subsample``: indices of the target critics to take the minimum over (SERL draws them with
    ``jax.random.randint``, so repeats are possible); ``None`` uses all of them.
    """
    if subsample is not None:
        next_qs = next_qs[subsample]
    target = rewards + discount * masks * next_qs.min(dim=0).values
    if backup_entropy:
        target = target - temperature * next_log_probs
    return target


def critic_loss(predicted_qs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean over critics and batch of the squared error, ``predicted_qs`` ``(K, B)`` against ``target`` ``(B,)``."""
    return ((predicted_qs - target.unsqueeze(0)) ** 2).mean()


def actor_loss(qs: torch.Tensor, log_probs: torch.Tensor, temperature: float) -> torch.Tensor:
    """``-mean(mean over critics of Q - temperature * log pi)`` for ``qs`` ``(K, B)`` at freshly sampled actions."""
    return -(qs.mean(dim=0) - temperature * log_probs).mean()


def temperature_loss(lagrange: torch.Tensor, next_log_probs: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """``softplus(lagrange) * (H - target_entropy)`` with ``H = -mean(next_log_probs)`` (a ``geq`` multiplier)."""
    return F.softplus(lagrange) * (-next_log_probs.mean() - target_entropy)


def default_target_entropy(action_dim: int) -> float:
    """``-action_dim / 2`` (``sac.py:387-388``)."""
    return -action_dim / 2
