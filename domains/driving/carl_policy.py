"""CaRL's policy head and PPO settings on stable-baselines3: a Beta distribution over [-1, 1] actions.

CaRL (arXiv 2504.17838; ``autonomousvision/CaRL``, read in the fork ``jkli-2/CaRL``: the run's flags in
``jkli-2/CaRL@65a0d57:CARLA/team_code/train_carl_py.sh:17``, its PPO in
``jkli-2/CaRL@829e7ee:CARLA/team_code/dd_ppo.py``, cited below by line as ``dd_ppo.py:N``) samples
``[steer, acceleration]`` from independent Beta distributions whose concentrations are ``softplus(x) + 1`` (``beta_min_a_b_value 1.0``: unimodal, finite density at
the bounds) and drives with the distribution's **mean** at evaluation. stable-baselines3 has no
Beta distribution, so :class:`BetaDistribution` adds one behind its ``Distribution`` interface and
:class:`BetaPolicy` builds its head; PPO itself is stable-baselines3's.

Action mapping: ``u ~ Beta(a, b)`` on (0, 1), ``action = 2u - 1``. The log-density of the action
differs from that of ``u`` by the constant ``-A log 2``, which cancels in PPO's ratio; it is kept
so that ``log_prob`` is the density of the action actually taken.

The PPO loss and its returns are CaRL's ``dd_ppo.py`` (a CleanRL PPO), term by term:

* policy: ``max(-A r, -A clip(r, 1 - 0.1, 1 + 0.1))``, advantages normalised per minibatch with the
  Bessel-corrected std (dd_ppo.py:1166-1182); stable-baselines3's is the same;
* value: CaRL's ``0.5 * MSE`` times ``vf_coef`` 0.5 (dd_ppo.py:1205, 1208). stable-baselines3's value
  loss is the plain MSE, so :func:`carl_ppo` passes ``vf_coef / 2`` and the weight is CaRL's 0.25;
* entropy: ``- ent_coef * mean(H)`` with ``ent_coef`` 0.01 (dd_ppo.py:1207-1208) in the CARLA run, 0.0 in CaRL's
  nuPlan configuration (``jkli-2/CaRL@d6890e6:nuPlan/carl_nuplan/planning/script/config/gym/default_gym.yaml:52``);
* episode ends: ``done = termination or truncation`` (dd_ppo.py:943, "Not treated separately"), so a
  time limit or a finished route is not bootstrapped from its last state's value (GAE,
  dd_ppo.py:994-1006). stable-baselines3 bootstraps truncations; :class:`TruncationAsDone` turns that off.

One difference, a zoo choice: both CaRL runs clip the value loss (``--clip_vloss 1``, train_carl_py.sh:17;
``clip_vloss: True``, default_gym.yaml:51: ``0.5 * max(unclipped, clipped)`` with the clip 0.1 of the policy,
dd_ppo.py:1185-1197). stable-baselines3's ``clip_range_vf`` clips the prediction alone, not CleanRL's
max of both losses, so the zoo trains the value unclipped (CaRL's own branch for ``clip_vloss 0``).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.distributions import Distribution
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from torch import nn

from zoo.engines.policy.state import silence_logger
from zoo.pipelines.beta_policy import concentrations

MIN_CONCENTRATION = 1.0
"""Added to ``softplus`` of the head's outputs (CaRL's ``beta_min_a_b_value``)."""
CARL_VF_COEF = 0.5
"""CaRL's ``vf_coef`` (train_carl_py.sh:17), on its ``0.5 * MSE`` value loss (dd_ppo.py:1205, 1208)."""
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


class TruncationAsDone(VecEnvWrapper):
    """End a truncated episode like a terminated one, as CaRL's PPO does (``dd_ppo.py:943``).

    stable-baselines3 adds ``gamma * V(last state)`` to the reward of a step whose info says
    ``TimeLimit.truncated``; clearing the flag leaves the episode's end unbootstrapped, which is
    CaRL's ``done = termination or truncation``.
    """

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        for info in infos:
            info["TimeLimit.truncated"] = False
        return obs, rewards, dones, infos


class IterationLinearDecay:
    """CaRL's linear learning-rate decay over a run of ``iterations`` PPO updates, read off the algorithm's step count.

    At update ``k`` (0-based) the rate is ``initial * (1 - (k - 1) / iterations)``, the authors' formula as written
    (``frac = 1.0 - (update - 1.0) / num_updates`` in ``run_training``,
    ``jkli-2/CaRL@5ba3dc4:nuPlan/carl_nuplan/planning/gym/training.py``; ``--lr_schedule linear`` in the CARLA run), so
    the first update runs at ``1 + 1/iterations`` times ``initial``. stable-baselines3's own progress restarts with
    every ``learn`` call and the ``policy`` engine calls ``learn`` once per iteration, so the update index comes from
    ``num_timesteps`` of the model (:meth:`attach`), which ``--resume`` restores.
    """

    def __init__(self, initial: float, iterations: int, iteration_steps: int) -> None:
        if iterations < 1 or iteration_steps < 1:
            raise ValueError(f"a linear decay needs iterations >= 1 and iteration_steps >= 1, "
                             f"got {iterations} and {iteration_steps}")  # fmt: skip
        self.initial, self.iterations, self.iteration_steps = float(initial), iterations, iteration_steps
        self.model: PPO | None = None

    def attach(self, model: PPO) -> PPO:
        """Read the update index from ``model`` from now on; returns it."""
        self.model = model
        return model

    def __call__(self, _progress_remaining: float) -> float:
        if self.model is None:  # the optimiser's construction, before any update
            return self.initial
        update = self.model.num_timesteps // self.iteration_steps - 1  # called after the update's rollout
        return self.initial * (1.0 - (update - 1.0) / self.iterations)


def carl_ppo(env: VecEnv, *, hidden: tuple[int, ...] = (256, 256), n_steps: int = 512, batch_size: int = 1024,
             n_epochs: int = 3, gamma: float = 0.99, learning_rate: float = 2.5e-4, lr_iterations: int | None = None,
             truncation_as_done: bool = True, seed: int = 0, **kwargs: Any) -> PPO:  # fmt: skip
    """PPO with CaRL's settings (train_carl_py.sh:17): clip 0.1, entropy 0.01, value 0.5 on ``0.5 * MSE``,
    GAE 0.95, grad-norm 0.5, normalised advantages, truncations ending episodes (module docstring).

    CaRL's batch is 65,536 samples in minibatches of 16,384 (3 epochs, 128 environments); a
    recipe scales both down and keeps the ratio. ``ent_coef`` in ``kwargs`` overrides CARLA's 0.01 (CaRL's nuPlan
    configuration: 0.0). ``vf_coef`` in ``kwargs`` is CaRL's (on its ``0.5 * MSE``) and is halved for
    stable-baselines3's plain MSE. ``truncation_as_done=False`` bootstraps truncations as stable-baselines3 does.
    ``lr_iterations``: decay ``learning_rate`` linearly over that many iterations of ``n_steps`` per environment
    (:class:`IterationLinearDecay`); ``None`` keeps it constant.
    """
    vf_coef = kwargs.pop("vf_coef", CARL_VF_COEF)
    settings: dict[str, Any] = {"clip_range": 0.1, "ent_coef": 0.01, "vf_coef": vf_coef / 2, "gae_lambda": 0.95,
                                "max_grad_norm": 0.5, "normalize_advantage": True} | kwargs  # fmt: skip
    policy_kwargs = {"net_arch": {"pi": list(hidden), "vf": list(hidden)}} | settings.pop("policy_kwargs", {})
    schedule = None if lr_iterations is None else IterationLinearDecay(learning_rate, lr_iterations,
                                                                       n_steps * env.num_envs)  # fmt: skip
    env = TruncationAsDone(env) if truncation_as_done else env
    model = PPO(BetaPolicy, env, n_steps=n_steps, batch_size=batch_size, n_epochs=n_epochs, gamma=gamma,
                learning_rate=learning_rate if schedule is None else schedule, seed=seed,
                policy_kwargs=policy_kwargs, device="cpu", verbose=0, **settings)  # fmt: skip
    return silence_logger(model if schedule is None else schedule.attach(model))
