"""The driving domain's policy-RL method for the ``policy`` engine: ``carl-ppo``.

CaRL (Jaeger et al., arXiv 2504.17838) trains a driving policy from scratch with PPO on its
route-completion reward. Here the reward comes with the environment (``highway-carl``:
:func:`domains.driving.carl_env.make_highway_carl`), so the method only builds the Beta-PPO
(:func:`domains.driving.carl_policy.carl_ppo`), saves its state as tensors and JSON and loads it into
a freshly built one for ``--resume`` (:mod:`zoo.engines.policy.state`), and exports the
actor as a ``beta-mlp`` policy directory (:mod:`zoo.pipelines.beta_policy`) that :func:`zoo.load`
reads and that acts with the mean action, as CaRL evaluates. Its settings are
:class:`~domains.driving.carl_settings.CarlPPOConfig`, which reading a recipe imports without this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv
from torch import nn

from domains.driving.carl_policy import MIN_CONCENTRATION, carl_ppo
from domains.driving.carl_settings import CarlPPOConfig
from zoo.engines.policy.methods import register_method
from zoo.engines.policy.recipe import PolicyAlgorithmConfig, PolicyRecipe
from zoo.engines.policy.state import restore_sb3, save_sb3
from zoo.pipelines.policy import Normalization, PolicyConfig, PolicyPipeline, save_policy


def export_beta_policy(model: PPO, folder: Path) -> Path:
    """Copy the actor (``mlp_extractor.policy_net`` + ``action_net``) of a Beta-PPO into a ``beta-mlp`` directory."""
    from zoo.pipelines.beta_policy import BetaMLP

    trunk = [m for m in model.policy.mlp_extractor.policy_net if isinstance(m, nn.Linear)]
    activations = {
        type(m).__name__.lower() for m in model.policy.mlp_extractor.policy_net if not isinstance(m, nn.Linear)
    }
    if len(activations) > 1:
        raise ValueError(f"the actor mixes activations {sorted(activations)}; beta-mlp takes one")
    obs_dim, action_dim = model.observation_space.shape[0], model.action_space.shape[0]
    config = PolicyConfig(obs_dim, action_dim, "beta-mlp", 1, tuple(m.out_features for m in trunk),
                          {"activation": activations.pop() if activations else "tanh",
                           "min_concentration": MIN_CONCENTRATION})  # fmt: skip
    policy = BetaMLP(config)
    targets = [m for m in policy.trunk if isinstance(m, nn.Linear)] + [policy.head]
    for target, source in zip(targets, [*trunk, model.policy.action_net], strict=True):
        target.load_state_dict(source.state_dict())
    return save_policy(folder, policy, config, Normalization.identity(config))


@dataclass(frozen=True)
class CarlPPO:
    """CaRL: PPO with a Beta action head on the route-completion reward (no base policy)."""

    name: str = "carl-ppo"
    summary: str = "CaRL: Beta-PPO (clip 0.1, large batch, mean action at evaluation) on route completion x penalties"
    residual: bool = False
    config: type[PolicyAlgorithmConfig] = CarlPPOConfig

    def wrap(self, env: gym.Env, base: PolicyPipeline | None, recipe: PolicyRecipe) -> gym.Env:
        if base is not None:
            raise ValueError("carl-ppo trains a policy from scratch: leave base.model empty")
        return env

    def build(self, env: VecEnv, recipe: PolicyRecipe) -> BaseAlgorithm:
        a, t = recipe.algorithm, recipe.training
        return carl_ppo(env, hidden=a.hidden, n_steps=a.rollout_steps, batch_size=a.batch_size, n_epochs=a.epochs,
                        gamma=a.gamma, learning_rate=t.lr, ent_coef=a.ent_coef,
                        lr_iterations=t.steps if a.lr_schedule == "linear" else None,
                        truncation_as_done=a.truncation_as_done, clip_vloss=a.clip_vloss, seed=t.seed)  # fmt: skip

    def save(self, model: BaseAlgorithm, folder: Path) -> None:
        save_sb3(model, folder)

    def load(self, folder: Path, env: VecEnv, recipe: PolicyRecipe) -> BaseAlgorithm:
        return restore_sb3(self.build(env, recipe), folder)

    def export(self, model: BaseAlgorithm, base: PolicyPipeline | None, recipe: PolicyRecipe, folder: Path) -> Path:
        return export_beta_policy(model, folder)


CARL_PPO = register_method(CarlPPO())
