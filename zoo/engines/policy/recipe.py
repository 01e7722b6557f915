"""The ``policy`` engine's recipe: an environment, a frozen base policy, a method, a budget.

YAML layout::

    name: fetch-push-resip
    engine: policy
    env: {name: fetch-push, kwargs: {max_episode_steps: 50}}
    base: {model: fetch-push-bc-tiny}
    algorithm: {method: resip-ppo, n_envs: 8, rollout_steps: 256, batch_size: 512, epochs: 5}
    training: {lr: 3.0e-4, steps: 48, save_steps: 8, eval_episodes: 100}

One ``training.steps`` step is one iteration: ``n_envs * rollout_steps`` environment steps, then
the method's updates (PPO's epochs; for off-policy methods, its gradient steps per env step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zoo.recipe import Recipe, RecipeError, TrainingBase


@dataclass(frozen=True)
class EnvConfig:
    """An environment a domain registered (``Domain.environments``)."""

    name: str = ""
    """Environment name, e.g. ``fetch-push`` (``zoo domains`` lists each domain's)."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Passed to the environment factory."""


@dataclass(frozen=True)
class BaseConfig:
    """The frozen policy a residual method corrects; empty for methods without a base (``dppo`` pre-trains its own)."""

    model: str = ""
    """A zoo name or a policy directory, loaded with :func:`zoo.load`."""


@dataclass(frozen=True)
class PolicyAlgorithmConfig:
    """The method and its settings (defaults: the CPU residual-PPO settings measured on FetchPush)."""

    method: str = "resip-ppo"
    """Registered method (:data:`zoo.engines.policy.methods.POLICY_METHODS`): ``resip-ppo``, ``resfit-td3``, ``dppo``."""
    residual_scale: float = 0.1
    """Scale of the residual added to the base action (ResiP 0.1; ResFiT 0.1-0.2)."""
    n_envs: int = 8
    """Environments stepped together (stable-baselines3 DummyVecEnv)."""
    rollout_steps: int = 256
    """Environment steps per environment per iteration (PPO's ``n_steps``)."""
    batch_size: int = 512
    """Minibatch size."""
    epochs: int = 5
    """PPO epochs per iteration."""
    gamma: float = 0.98
    """Discount."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden sizes of the residual actor and of the critic."""
    learning_starts: int = 2000
    """Off-policy methods: environment steps of exploration before the first update."""
    critic_warmup: int = 0
    """Gradient steps (off-policy methods) or iterations (``dppo``) that update the critic only."""
    offline_episodes: int = 0
    """Scripted demonstration episodes: ResFiT's offline half of each batch, DPPO's BC data (0: none)."""
    critic_lr: float = 5e-3
    """Residual PPO: the critic's own learning rate (ResiP 5e-3; 0: ``training.lr``)."""
    network_init: str = "resip"
    """Residual PPO: ``resip`` (Kaiming hidden layers, value head gain 0.25 and bias 0.25, as the authors) or ``sb3``."""
    normalize_reward: bool = True
    """Residual PPO: divide rewards by their running std, uncentred (ResiP's ``normalize_reward``)."""
    clip_reward: float = 5.0
    """Residual PPO: clip the scaled rewards to ``±clip_reward`` (ResiP 5)."""
    truncation_as_done: bool = True
    """Residual PPO and ``carl-ppo``: a time limit ends the episode without bootstrapping its last value (ResiP's GAE;
    CaRL's ``dd_ppo.py`` treats truncation as done)."""
    reset_every_iteration: bool = False
    """Residual PPO: reset every environment before each iteration's rollout (ResiP: on; see ``domains/robot/resip.py``)."""
    denoising_steps: int = 20
    """Diffusion policies (``dppo``): DDPM steps K of the chain."""
    ft_denoising_steps: int = 10
    """Diffusion policies (``dppo``): the last K' steps that are fine-tuned (DPPO: 10 of 20)."""
    action_chunk: int = 4
    """Diffusion policies (``dppo``): actions per chunk, all executed (DPPO's horizon_steps = act_steps)."""
    bc_steps: int = 3000
    """Diffusion policies (``dppo``): behaviour-cloning steps on ``offline_episodes`` demonstrations before RL."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra keyword arguments for the method's builder: e.g. ``resfit_td3``'s ``n_critics``, stable-baselines3's,
    or :class:`~zoo.engines.policy.dppo.DPPOSettings`."""


@dataclass(frozen=True, kw_only=True)
class PolicyTrainingConfig(TrainingBase):
    """Iterations, learning rate, checkpoints, and the closing evaluation."""

    lr: float = 3e-4
    """Learning rate (actor and critic)."""
    eval_episodes: int = 0
    """After training, base and trained policy on the same seeded episodes (0: skip)."""
    eval_seed: int = 1000
    """Seed of the first evaluation episode (episode i uses ``eval_seed + i``)."""


@dataclass(frozen=True, kw_only=True)
class PolicyRecipe(Recipe):
    """RL of a control policy in a registered environment."""

    env: EnvConfig = field(default_factory=EnvConfig)
    """The environment."""
    base: BaseConfig = field(default_factory=BaseConfig)
    """The frozen base policy."""
    algorithm: PolicyAlgorithmConfig = field(default_factory=PolicyAlgorithmConfig)
    """Method and settings."""
    training: PolicyTrainingConfig = field(default_factory=PolicyTrainingConfig)
    """Budget, checkpoints and output."""

    def validate(self) -> None:
        if not self.env.name:
            raise RecipeError("a policy recipe needs env.name (an environment a domain registered)")
        a = self.algorithm
        if a.n_envs < 1 or a.rollout_steps < 1 or a.batch_size < 1 or a.epochs < 1:
            raise RecipeError("algorithm.n_envs, rollout_steps, batch_size and epochs must be >= 1")
        if a.residual_scale <= 0:
            raise RecipeError(f"algorithm.residual_scale={a.residual_scale} must be > 0")
        if a.critic_lr < 0 or a.clip_reward <= 0:
            raise RecipeError(f"algorithm.critic_lr={a.critic_lr} must be >= 0 and clip_reward={a.clip_reward} > 0")
        if not 1 <= a.ft_denoising_steps <= a.denoising_steps or a.action_chunk < 1 or a.bc_steps < 0:
            raise RecipeError(f"algorithm: need 1 <= ft_denoising_steps ({a.ft_denoising_steps}) <= denoising_steps "
                              f"({a.denoising_steps}), action_chunk >= 1 and bc_steps >= 0")
        if a.network_init not in ("resip", "sb3"):
            raise RecipeError(f"algorithm.network_init={a.network_init!r}: choose 'resip' (the authors') or 'sb3'")
        if not 0 < a.gamma <= 1:
            raise RecipeError(f"algorithm.gamma={a.gamma} must be in (0, 1]")
        if self.training.eval_episodes < 0:
            raise RecipeError("training.eval_episodes must be >= 0")
