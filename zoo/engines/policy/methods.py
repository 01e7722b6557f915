"""What a policy-RL method contributes to the ``policy`` engine, and the table they register in.

A method (ResiP's residual PPO, ResFiT's residual TD3, DPPO, ...) states its settings class (``config``,
registered under the method's name, which ``algorithm.method`` picks) and knows how to wrap one environment
(around the frozen base, or into action chunks), how to build the algorithm, how to save its
state and load it back for ``--resume`` and how to export the trained policy as a zoo policy
directory. Saved state is tensors and JSON only (:mod:`zoo.engines.policy.state`: a handed run
directory must not run code), and loading it gives the algorithm exactly as it was saved; the
wrapped environment is a :class:`~zoo.engines.policy.state.RestorableEnv`, whose episodes the
engine saves and continues itself. The algorithm is
a stable-baselines3 one or, where stable-baselines3 cannot express the method (DPPO's PPO over
denoising steps), an object with the part of its surface the engine drives: ``learn(total_timesteps,
reset_num_timesteps=, callback=)``, ``num_timesteps``, ``logger.name_to_value`` and ``get_env()``.
A method that pre-trains its own starting policy also has ``export_pretrained(model, folder)``,
the "before" of the closing evaluation. Domains register methods from their ``algorithms`` module
(``Domain.algorithms``), which the engine imports first.

The environments ``build`` gets may step in worker processes (``training.vec_env: subproc``,
:mod:`zoo.engines.policy.envs`): the method object travels to the workers with the recipe and the base
(so it pickles, as a frozen dataclass of plain fields does), and a method that needs one environment
itself (its spaces, a wrapper's settings) asks :func:`~zoo.engines.policy.envs.single_env`, never
``venv.envs``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from zoo.domains import load_algorithms, register_all
from zoo.engines.policy.recipe import PolicyAlgorithmConfig
from zoo_common.registry import Registry

if TYPE_CHECKING:
    import gymnasium as gym
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.vec_env import VecEnv

    from zoo.engines.policy.recipe import PolicyRecipe
    from zoo.pipelines.policy import PolicyPipeline


class PolicyMethod(Protocol):
    """The settings class and the four parts of a method; see the module docstring."""

    name: str
    summary: str
    config: type[PolicyAlgorithmConfig]
    """The class of ``recipe.algorithm`` this method reads: the one registered under :attr:`name`."""

    def wrap(self, env: gym.Env, base: PolicyPipeline | None, recipe: PolicyRecipe) -> gym.Env:
        """One training environment as the learner sees it (e.g. residual observation and action)."""

    def build(self, env: VecEnv, recipe: PolicyRecipe) -> BaseAlgorithm:
        """A fresh algorithm for ``env`` (see the module docstring for what the engine calls)."""

    def load(self, folder: Path, env: VecEnv, recipe: PolicyRecipe) -> BaseAlgorithm:
        """The algorithm saved by :meth:`save` in ``folder`` (``--resume``), built for ``env`` from ``recipe``."""

    def save(self, model: BaseAlgorithm, folder: Path) -> None:
        """Everything :meth:`load` needs (weights, optimiser state, counters, replay buffer), as tensors and JSON."""

    def export(self, model: BaseAlgorithm, base: PolicyPipeline | None, recipe: PolicyRecipe, folder: Path) -> Any:
        """The trained policy as a directory :func:`zoo.load` reads."""


POLICY_METHODS: Registry[PolicyMethod] = Registry("policy method", discover=load_algorithms)


def register_method(method: PolicyMethod) -> PolicyMethod:
    """Add a method (a different one under a taken name is an error).

    Its ``config`` must be the class registered under its name, so the ``algorithm`` block that
    ``algorithm.method`` picks holds exactly the fields this method reads.
    """
    config, choices = getattr(method, "config", None), PolicyAlgorithmConfig.choices
    registered = choices.get(method.name) if method.name in choices else None
    if registered is None or config is not registered:
        raise TypeError(f"policy method {method.name!r} states config={config!r}, but the config registered under "
                        f"its name is {registered!r}: register its settings with @PolicyAlgorithmConfig.register("
                        f"{method.name!r}) and set the method's config to that class")  # fmt: skip
    return POLICY_METHODS.register(method.name, method)


#: The environments the domains declare (``Domain.environments``), name -> ``"module:factory"``.
ENVIRONMENTS: Registry[str] = Registry("environment", discover=lambda: register_all(ENVIRONMENTS, "environments"))
