"""What a policy-RL method contributes to the ``policy`` engine, and the table they register in.

A method (ResiP's residual PPO, ResFiT's residual TD3, DPPO, ...) knows how to wrap one environment
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
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from zoo_common.registry import Registry

if TYPE_CHECKING:
    import gymnasium as gym
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.vec_env import VecEnv

    from zoo.engines.policy.recipe import PolicyRecipe
    from zoo.pipelines.policy import PolicyPipeline


class PolicyMethod(Protocol):
    """The four parts of a method; see the module docstring."""

    name: str
    summary: str

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


POLICY_METHODS: Registry[PolicyMethod] = Registry("policy method")


def register_method(method: PolicyMethod) -> PolicyMethod:
    """Add a method (a different one under a taken name is an error)."""
    return POLICY_METHODS.register(method.name, method)
