"""CaRL's policy head and PPO settings on stable-baselines3: a Beta distribution over [-1, 1] actions.

CaRL (arXiv 2504.17838; ``autonomousvision/CaRL``, ``CARLA/team_code/train_carl_py.sh`` and its
``rl_config.py``) samples ``[steer, acceleration]`` from independent Beta distributions whose
concentrations are ``softplus(x) + 1`` (``beta_min_a_b_value 1.0``: unimodal, finite density at
the bounds) and drives with the distribution's **mean** at evaluation. stable-baselines3 has no
Beta distribution, so :class:`BetaDistribution` adds one behind its ``Distribution`` interface and
:class:`BetaPolicy` builds its head; PPO itself is stable-baselines3's.

Action mapping: ``u ~ Beta(a, b)`` on (0, 1), ``action = 2u - 1``. The log-density of the action
differs from that of ``u`` by the constant ``-A log 2``, which cancels in PPO's ratio; it is kept
so that ``log_prob`` is the density of the action actually taken.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.distributions import Distribution
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import VecEnv
from torch import nn

from zoo.engines.policy.state import silence_logger
from zoo.pipelines.beta_policy import concentrations

MIN_CONCENTRATION = 1.0
"""Added to ``softplus`` of the head's outputs (CaRL's ``beta_min_a_b_value``)."""
EPS = 1e-6


class BetaDistribution(Distribution):
    """Independent Beta distributions per action dimension, mapped from (0, 1) to (-1, 1)."""

    def __init__(self, action_dim: int, min_concentration: float = MIN_CONCENTRATION) -> None:
        super().__init__()
        self.action_dim, self.min_concentration = action_dim, min_concentration

    def proba_distribution_net(self, latent_dim: int) -> nn.Module:
        """The head: ``2 * action_dim`` raw concentrations (alpha first, then beta)."""
        return nn.Linear(latent_dim, 2 * self.action_dim)

    def proba_distribution(self, params: torch.Tensor) -> BetaDistribution:
        alpha, beta = concentrations(params, self.min_concentration)
        self.distribution = torch.distributions.Beta(alpha, beta)
        return self

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        unit = ((actions + 1) / 2).clamp(EPS, 1 - EPS)
        return self.distribution.log_prob(unit).sum(-1) - self.action_dim * math.log(2.0)

    def entropy(self) -> torch.Tensor:
        return self.distribution.entropy().sum(-1) + self.action_dim * math.log(2.0)

    def sample(self) -> torch.Tensor:
        return 2 * self.distribution.rsample() - 1

    def mode(self) -> torch.Tensor:
        """The mean, not the mode: CaRL drives with the mean action (``SAMPLE_TYPE=mean``)."""
        return 2 * self.distribution.mean - 1  # = zoo.pipelines.beta_policy.beta_mean of the same outputs

    def actions_from_params(self, params: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        return self.proba_distribution(params).get_actions(deterministic=deterministic)

    def log_prob_from_params(self, params: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        actions = self.actions_from_params(params)
        return actions, self.log_prob(actions)


class BetaPolicy(ActorCriticPolicy):
    """stable-baselines3's actor-critic MLP with a :class:`BetaDistribution` head instead of a Gaussian."""

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)  # trunk, value head and a Gaussian head, replaced below
        self.action_dist = BetaDistribution(self.action_space.shape[0])
        self.action_net = self.action_dist.proba_distribution_net(self.mlp_extractor.latent_dim_pi)
        if self.ortho_init:
            self.action_net.apply(lambda m: self.init_weights(m, gain=0.01))
        del self.log_std  # the Gaussian's parameter; a Beta head has none
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_action_dist_from_latent(self, latent_pi: torch.Tensor) -> Distribution:
        return self.action_dist.proba_distribution(self.action_net(latent_pi))


def linear_decay(initial: float) -> Any:
    """CaRL's learning-rate schedule: linear from ``initial`` to 0 over training (``progress`` 1 -> 0)."""
    return lambda progress: progress * initial


def carl_ppo(env: VecEnv, *, hidden: tuple[int, ...] = (256, 256), n_steps: int = 512, batch_size: int = 1024,
             n_epochs: int = 3, gamma: float = 0.99, learning_rate: float = 2.5e-4, lr_decay: bool = False,
             seed: int = 0, **kwargs: Any) -> PPO:  # fmt: skip
    """PPO with CaRL's settings: clip 0.1, entropy 0.01, value 0.5, GAE 0.95, grad-norm 0.5, normalised advantages.

    CaRL's batch is 65,536 samples in minibatches of 16,384 (3 epochs, 128 environments); a
    recipe scales both down and keeps the ratio. Zoo choice: no value clipping (stable-baselines3's
    ``clip_range_vf`` clips the prediction alone, not CleanRL's max of clipped and unclipped
    losses that CaRL uses, and at CaRL's 0.1 it would stall a value of returns in percent).
    ``lr_decay`` is CaRL's linear decay over one ``learn`` call; off by default because the
    ``policy`` engine calls ``learn`` once per iteration and stable-baselines3 restarts its progress
    on every call.
    """
    settings: dict[str, Any] = {"clip_range": 0.1, "ent_coef": 0.01, "vf_coef": 0.5, "gae_lambda": 0.95,
                                "max_grad_norm": 0.5, "normalize_advantage": True} | kwargs  # fmt: skip
    policy_kwargs = {"net_arch": {"pi": list(hidden), "vf": list(hidden)}} | settings.pop("policy_kwargs", {})
    return silence_logger(PPO(BetaPolicy, env, n_steps=n_steps, batch_size=batch_size, n_epochs=n_epochs, gamma=gamma,
                              learning_rate=linear_decay(learning_rate) if lr_decay else learning_rate, seed=seed,
                              policy_kwargs=policy_kwargs, device="cpu", verbose=0, **settings))  # fmt: skip
