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
* value: ``0.5 * max((v - R)^2, (v_old + clip(v - v_old, -0.1, 0.1) - R)^2)`` times ``vf_coef`` 0.5, the
  value clip of both CaRL runs (``--clip_vloss 1``, train_carl_py.sh:17; ``clip_vloss: True``,
  ``jkli-2/CaRL@d6890e6:nuPlan/carl_nuplan/planning/script/config/gym/default_gym.yaml:51``) with the policy's clip
  (dd_ppo.py:1185-1197); ``clip_vloss=False`` is CaRL's other branch, ``0.5 * MSE`` (dd_ppo.py:1205);
* entropy: ``- ent_coef * mean(H)`` with ``ent_coef`` 0.01 (dd_ppo.py:1207-1208) in the CARLA run, 0.0 in CaRL's
  nuPlan configuration (``default_gym.yaml:52``);
* episode ends: ``done = termination or truncation`` (dd_ppo.py:943, "Not treated separately"), so a
  time limit or a finished route is not bootstrapped from its last state's value (GAE,
  dd_ppo.py:994-1006). stable-baselines3 bootstraps truncations; :class:`TruncationAsDone` turns that off.

stable-baselines3's ``clip_range_vf`` clips the prediction alone (``mse(R, v_old + clip(v - v_old))``), not the max of
both losses, so :class:`CarlPPOUpdate` replaces its ``train`` with the update above (:func:`carl_ppo_loss`); rollouts,
GAE, minibatching and the optimiser stay stable-baselines3's.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.distributions import Distribution
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.utils import explained_variance
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from torch import nn

from zoo.engines.policy.state import silence_logger
from zoo.pipelines.beta_policy import concentrations

MIN_CONCENTRATION = 1.0
"""Added to ``softplus`` of the head's outputs (CaRL's ``beta_min_a_b_value``)."""
CARL_VF_COEF = 0.5
"""CaRL's ``vf_coef`` (train_carl_py.sh:17), on its ``0.5 * max(...)`` value loss (dd_ppo.py:1197, 1208)."""
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


def carl_ppo_loss(log_prob: torch.Tensor, entropy: torch.Tensor, value: torch.Tensor, old_log_prob: torch.Tensor,
                  old_value: torch.Tensor, advantages: torch.Tensor, returns: torch.Tensor, *, clip_coef: float,
                  ent_coef: float, vf_coef: float,
                  clip_vloss: bool) -> tuple[torch.Tensor, dict[str, float]]:  # fmt: skip
    """CaRL's PPO loss on one minibatch (``jkli-2/CaRL@829e7ee:CARLA/team_code/dd_ppo.py:1162-1208``, one process).

    All inputs are ``(N,)``: the new log-probabilities, entropies and values, the rollout's log-probabilities and
    values, its GAE advantages and returns. Advantages are normalised with the Bessel-corrected std (1166-1177; a
    minibatch of one is left as it is, where the std is undefined), the policy loss is the clipped surrogate
    (1180-1182), the value loss ``0.5 * max(unclipped, clipped)`` around the rollout's value with the policy's clip
    for ``clip_vloss`` (1185-1197), else ``0.5 * MSE`` (1205); ``pg - ent_coef * H + vf_coef * v`` (1207-1208).
    Returns the loss and its terms as floats, under stable-baselines3's log names.
    """
    ratio = (log_prob - old_log_prob).exp()
    if advantages.numel() > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    pg_loss = torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip_coef, 1 + clip_coef)).mean()
    v_loss_unclipped = (value - returns) ** 2
    if clip_vloss:
        v_clipped = old_value + (value - old_value).clamp(-clip_coef, clip_coef)
        v_loss = 0.5 * torch.max(v_loss_unclipped, (v_clipped - returns) ** 2).mean()
    else:
        v_loss = 0.5 * v_loss_unclipped.mean()
    entropy_loss = -entropy.mean()
    loss = pg_loss + ent_coef * entropy_loss + vf_coef * v_loss
    with torch.no_grad():  # logged only; CaRL logs KL(old || new) of the distributions, this is its k3 estimate
        approx_kl = ((ratio - 1) - (log_prob - old_log_prob)).mean().item()
        clip_fraction = ((ratio - 1).abs() > clip_coef).float().mean().item()
    return loss, {"policy_gradient_loss": pg_loss.item(), "value_loss": v_loss.item(),
                  "entropy_loss": entropy_loss.item(), "approx_kl": approx_kl, "clip_fraction": clip_fraction}


class CarlPPOUpdate(PPO):
    """stable-baselines3's PPO whose update is CaRL's (:func:`carl_ppo_loss`): its value clip is the max of both losses.

    ``vf_coef`` is CaRL's, on the ``0.5 * ...`` value loss; the value clip reuses the policy's ``clip_range``
    (CaRL's ``clip_coef`` clips both). ``target_kl`` early stopping is not carried over: CaRL stops early only with its
    ``kl`` learning-rate schedule, which neither of its runs uses. Advantages are always normalised (``--norm_adv 1``
    and ``norm_adv: True`` in both runs), whatever ``normalize_advantage`` says.
    """

    def __init__(self, *args: Any, clip_vloss: bool = True, **kwargs: Any) -> None:
        self.clip_vloss = clip_vloss
        super().__init__(*args, **kwargs)

    def train(self) -> None:
        """One update over the rollout buffer: ``n_epochs`` shuffled passes of ``batch_size`` minibatches."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip = float(self.clip_range(self._current_progress_remaining))  # type: ignore[operator]
        logs: defaultdict[str, list[float]] = defaultdict(list)
        for _ in range(self.n_epochs):
            for batch in self.rollout_buffer.get(self.batch_size):
                value, log_prob, entropy = self.policy.evaluate_actions(batch.observations, batch.actions)
                loss, terms = carl_ppo_loss(log_prob, entropy, value.flatten(), batch.old_log_prob, batch.old_values,
                                            batch.advantages, batch.returns, clip_coef=clip, ent_coef=self.ent_coef,
                                            vf_coef=self.vf_coef, clip_vloss=self.clip_vloss)  # fmt: skip
                self.policy.optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                self.policy.optimizer.step()
                for name, number in terms.items():
                    logs[name].append(number)
            self._n_updates += 1
        buffer = self.rollout_buffer
        for name, numbers in logs.items():
            self.logger.record(f"train/{name}", sum(numbers) / len(numbers))
        self.logger.record("train/loss", loss.item())
        self.logger.record("train/explained_variance", explained_variance(buffer.values.flatten(),
                                                                          buffer.returns.flatten()))  # fmt: skip
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/clip_range", clip)


def carl_ppo(env: VecEnv, *, hidden: tuple[int, ...] = (256, 256), n_steps: int = 512, batch_size: int = 1024,
             n_epochs: int = 3, gamma: float = 0.99, learning_rate: float = 2.5e-4, lr_iterations: int | None = None,
             truncation_as_done: bool = True, clip_vloss: bool = True, seed: int = 0,
             **kwargs: Any) -> CarlPPOUpdate:  # fmt: skip
    """PPO with CaRL's settings (train_carl_py.sh:17): clip 0.1 on the policy and the value, entropy 0.01, value 0.5
    on ``0.5 * max(...)``, GAE 0.95, grad-norm 0.5, normalised advantages, truncations ending episodes (module
    docstring).

    CaRL's batch is 65,536 samples in minibatches of 16,384 (3 epochs, 128 environments); a
    recipe scales both down and keeps the ratio. ``ent_coef`` in ``kwargs`` overrides CARLA's 0.01 (CaRL's nuPlan
    configuration: 0.0); ``vf_coef`` in ``kwargs`` is CaRL's. ``clip_vloss=False`` trains the value unclipped (CaRL's
    ``--clip_vloss 0``). ``truncation_as_done=False`` bootstraps truncations as stable-baselines3 does.
    ``lr_iterations``: decay ``learning_rate`` linearly over that many iterations of ``n_steps`` per environment
    (:class:`IterationLinearDecay`); ``None`` keeps it constant.
    """
    settings: dict[str, Any] = {"clip_range": 0.1, "ent_coef": 0.01, "vf_coef": CARL_VF_COEF, "gae_lambda": 0.95,
                                "max_grad_norm": 0.5} | kwargs  # fmt: skip
    policy_kwargs = {"net_arch": {"pi": list(hidden), "vf": list(hidden)}} | settings.pop("policy_kwargs", {})
    schedule = None if lr_iterations is None else IterationLinearDecay(learning_rate, lr_iterations,
                                                                       n_steps * env.num_envs)  # fmt: skip
    env = TruncationAsDone(env) if truncation_as_done else env
    model = CarlPPOUpdate(BetaPolicy, env, n_steps=n_steps, batch_size=batch_size, n_epochs=n_epochs, gamma=gamma,
                          learning_rate=learning_rate if schedule is None else schedule, seed=seed,
                          clip_vloss=clip_vloss, policy_kwargs=policy_kwargs, device="cpu", verbose=0,
                          **settings)  # fmt: skip
    return silence_logger(model if schedule is None else schedule.attach(model))
