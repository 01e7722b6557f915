"""The ``policy`` engine's recipe: an environment, a frozen base policy, a method, a budget.

YAML layout::

    name: fetch-push-resip
    engine: policy
    env: {name: fetch-push, kwargs: {max_episode_steps: 50}}
    base: {model: fetch-push-bc-tiny}
    algorithm: {method: resip-ppo, n_envs: 8, rollout_steps: 256, batch_size: 512, epochs: 5}
    training: {lr: 3.0e-4, steps: 48, save_steps: 8, eval_episodes: 100, vec_env: dummy}

One ``training.steps`` step is one iteration: ``n_envs * rollout_steps`` environment steps, then
the method's updates (PPO's epochs; for off-policy methods, its gradient steps per env step).
``algorithm.method`` picks the method's own settings class (a :class:`PolicyAlgorithmConfig`
registered under the method's name), so the block takes that method's keys and no other's. The domain descriptor that
offers a method names the light module that registers its settings (:attr:`zoo.domains.Domain.methods`, e.g.
``domains/robot/settings.py``), so reading a recipe imports that module alone; the environment, the method's training
code and the base policy are the engine's check and loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from zoo.recipe import ChoiceConfig, Recipe, RecipeError, TrainingBase
from zoo_common.registry import Registry


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


def _every_domains_methods() -> None:
    """The discovery of a name no descriptor's ``methods`` locates (a plug-in registering on import), and of a
    listing: every domain's ``algorithms`` module."""
    from zoo.domains import load_algorithms

    load_algorithms()


@dataclass(frozen=True)
class PolicyAlgorithmConfig(ChoiceConfig):
    """What every method reads: ``method`` picks the method's own config class (registered in the settings module its
    domain names), so a key only another method takes is an unknown key, and no method reads a field it does not own."""

    choices = Registry("policy method config", discover=_every_domains_methods)
    method: str = "resip-ppo"
    """Registered method (:data:`zoo.engines.policy.methods.POLICY_METHODS`): ``resip-ppo``, ``resfit-td3``, ``dppo``,
    ``carl-ppo``; it picks the config class, and so the other keys this block takes."""
    n_envs: int = 8
    """Environments stepped together (in this process or in workers: ``training.vec_env``); it sets the rollout
    and so the results, where ``vec_env`` does not."""
    rollout_steps: int = 256
    """Environment steps per environment per iteration (PPO's ``n_steps``)."""
    batch_size: int = 512
    """Minibatch size."""
    gamma: float = 0.98
    """Discount."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden sizes of the learned actor (a residual, a diffusion noise network, a Beta-policy trunk) and of the
    critic."""

    @classmethod
    def locate(cls, name: str) -> None:
        """Import the module the domain descriptors name for method ``name`` (:func:`zoo.domains.load_method`)."""
        from zoo.domains import load_method

        load_method(name)

    def __post_init__(self) -> None:
        """The class must be the one ``method`` registered (a config built by hand, or ``replace``-d to another
        method, would carry the wrong method's fields), and the shared fields must make a rollout; each subclass
        checks the fields it owns and calls ``super().__post_init__()``."""
        chosen = PolicyAlgorithmConfig.chosen({"method": self.method}, "algorithm.")
        if chosen is not type(self):
            raise RecipeError(f"algorithm.method={self.method!r} is read into {chosen.__name__}, "
                              f"not {type(self).__name__}")  # fmt: skip
        if self.n_envs < 1 or self.rollout_steps < 1 or self.batch_size < 1:
            raise RecipeError("algorithm.n_envs, rollout_steps and batch_size must be >= 1")
        if not 0 < self.gamma <= 1:
            raise RecipeError(f"algorithm.gamma={self.gamma} must be in (0, 1]")


@dataclass(frozen=True)
class PPOConfig(PolicyAlgorithmConfig):
    """Methods that run PPO epochs over each iteration's rollout (``resip-ppo``, ``carl-ppo``, ``dppo``)."""

    epochs: int = 5
    """PPO epochs per iteration."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.epochs < 1:
            raise RecipeError("algorithm.epochs must be >= 1")


@dataclass(frozen=True)
class SB3PPOConfig(PPOConfig):
    """stable-baselines3's PPO over environment steps (``resip-ppo``, ``carl-ppo``), where a time limit's place in GAE
    is a choice; DPPO's own trainer always bootstraps a truncated episode (:mod:`zoo.engines.policy.dppo`)."""

    truncation_as_done: bool = True
    """A time limit ends the episode without bootstrapping its last value (ResiP's GAE; CaRL's ``dd_ppo.py`` treats
    truncation as done)."""


def _default_algorithm() -> PolicyAlgorithmConfig:
    """The default method's settings, as a recipe without an ``algorithm`` block reads them."""
    return PolicyAlgorithmConfig.chosen({}, "algorithm.")()


@dataclass(frozen=True, kw_only=True)
class PolicyTrainingConfig(TrainingBase):
    """Iterations, learning rate, checkpoints, and the closing evaluation."""

    lr: float = 3e-4
    """Learning rate (actor and critic)."""
    eval_episodes: int = 0
    """After training, base and trained policy on the same seeded episodes (0: skip)."""
    eval_seed: int = 1000
    """Seed of the first evaluation episode (episode i uses ``eval_seed + i``)."""
    vec_env: Literal["dummy", "subproc"] = "dummy"
    """Where the ``algorithm.n_envs`` environments step: ``dummy``, one after another in the learner's process;
    ``subproc``, a worker process each, all at once. ``dummy`` is the default because it starts nothing and copies
    nothing through pipes, which wins for short runs (the smoke recipes) and on machines with no core to spare
    beside the learner; ``subproc`` pays off for steps of milliseconds (FetchPush with a base network, highway-env)
    with a free core per worker. The same seed trains the same policy either way (:mod:`zoo.engines.policy.envs`)."""


@dataclass(frozen=True, kw_only=True)
class PolicyRecipe(Recipe):
    """RL of a control policy in a registered environment."""

    env: EnvConfig = field(default_factory=EnvConfig)
    """The environment."""
    base: BaseConfig = field(default_factory=BaseConfig)
    """The frozen base policy."""
    algorithm: PolicyAlgorithmConfig = field(default_factory=_default_algorithm)
    """Method and settings: the config class registered under ``algorithm.method``."""
    training: PolicyTrainingConfig = field(default_factory=PolicyTrainingConfig)
    """Budget, checkpoints and output."""

    def validate(self) -> None:
        if not self.env.name:
            raise RecipeError("a policy recipe needs env.name (an environment a domain registered)")
        if self.training.eval_episodes < 0:
            raise RecipeError("training.eval_episodes must be >= 0")
