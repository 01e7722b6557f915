"""The robot domain's policy-RL methods for the ``policy`` engine: ``resip-ppo``, ``resfit-td3`` and ``dppo``.

Each wraps an environment around the frozen base (:class:`~domains.robot.residual.ResidualEnv`),
builds the stable-baselines3 algorithm (:func:`~domains.robot.resip.resip_ppo`,
:func:`~domains.robot.residual.resfit_td3`), saves its state as tensors and JSON and loads it into a
freshly built one for ``--resume`` (:mod:`zoo.engines.policy.state`), and exports the
trained residual together with its base as one ``residual-mlp`` policy directory for :func:`zoo.load`.
``dppo`` has no base: it behaviour-clones a diffusion policy on scripted demonstrations, fine-tunes
it with :class:`~zoo.engines.policy.dppo.DiffusionPPO` and exports both as ``diffusion-mlp`` directories.
Each method's settings are its own config class, registered under its name in :mod:`domains.robot.settings`, which
reading a recipe imports without this module.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv
from torch import nn

from domains.robot.residual import (
    OBS_CLAMP,
    FrozenBase,
    ResidualEnv,
    offline_buffer,
    resfit_action_limits,
    resfit_td3,
)
from domains.robot.resip import ResipRewards, resip_ppo
from domains.robot.settings import DPPOConfig, ResfitTD3Config, ResipPPOConfig
from zoo.engines.policy.dppo import ChunkEnv, DiffusionPPO, pretrain
from zoo.engines.policy.envs import single_env
from zoo.engines.policy.methods import register_method
from zoo.engines.policy.recipe import PolicyAlgorithmConfig, PolicyRecipe
from zoo.engines.policy.state import (
    REPLAY_BUFFER,
    restore_replay_buffer,
    restore_sb3,
    save_replay_buffer,
    save_sb3,
)
from zoo.pipelines.policy import PolicyConfig, PolicyPipeline, save_policy


def _require_base(base: PolicyPipeline | None, method: str) -> PolicyPipeline:
    if base is None:
        raise ValueError(f"{method} corrects a frozen base policy: set base.model in the recipe")
    return base


def _weight_layers(*modules: nn.Module) -> list[nn.Linear | nn.LayerNorm]:
    return [m for module in modules for m in module.modules() if isinstance(m, nn.Linear | nn.LayerNorm)]


def _export(layers: list[nn.Linear | nn.LayerNorm], base: PolicyPipeline, env: ResidualEnv, combine: str,
            folder: Path) -> Path:  # fmt: skip
    """Write base + residual as a ``residual-mlp`` directory (the residual's Linear and LayerNorm layers in order)."""
    import torch

    from zoo.pipelines.residual_policy import ResidualPolicy

    linears = [layer for layer in layers if isinstance(layer, nn.Linear)]
    extra: dict[str, Any] = {"residual_hidden": [layer.out_features for layer in linears[:-1]], "combine": combine,
                             "residual_scale": env.scale, "obs_clamp": OBS_CLAMP,
                             "residual_layer_norm": len(linears) < len(layers)}  # fmt: skip
    if combine == "resfit":
        extra |= {"action_low": env._low.tolist(), "action_high": env._high.tolist()}
    c = base.config
    config = PolicyConfig(c.observation_dim, c.action_dim, "residual-mlp", c.action_chunk, c.hidden, extra)
    policy = ResidualPolicy(config)
    policy.base.load_state_dict(base.model.state_dict())
    targets = _weight_layers(policy.residual)
    with torch.no_grad():
        for target, source in zip(targets, layers, strict=True):
            target.weight.copy_(source.weight)
            target.bias.copy_(source.bias if source.bias is not None else torch.zeros_like(target.bias))
    return save_policy(folder, policy, config, base.normalization)


@dataclass(frozen=True)
class ResipPPO:
    """ResiP: PPO on a Gaussian residual (fixed log-std -1, zero-initialised mean) over the base."""

    name: str = "resip-ppo"
    summary: str = "ResiP: PPO residual, a = base + 0.1 N(mu, e^-1) in the normalised action space"
    residual: bool = True
    config: type[PolicyAlgorithmConfig] = ResipPPOConfig

    def wrap(self, env: gym.Env, base: PolicyPipeline | None, recipe: PolicyRecipe) -> gym.Env:
        return ResidualEnv(env, FrozenBase(_require_base(base, self.name)), "resip", recipe.algorithm.residual_scale)

    @staticmethod
    def _rewards(env: VecEnv, recipe: PolicyRecipe) -> ResipRewards:
        a = recipe.algorithm
        return ResipRewards(
            env, normalize=a.normalize_reward, clip=a.clip_reward, truncation_as_done=a.truncation_as_done
        )

    def build(self, env: VecEnv, recipe: PolicyRecipe) -> BaseAlgorithm:
        a, t = recipe.algorithm, recipe.training
        return resip_ppo(self._rewards(env, recipe), hidden=a.hidden, network_init=a.network_init,
                         critic_lr=a.critic_lr or None, reset_every_iteration=a.reset_every_iteration,
                         n_steps=a.rollout_steps, batch_size=a.batch_size, n_epochs=a.epochs, gamma=a.gamma,
                         learning_rate=t.lr, seed=t.seed)  # fmt: skip

    def save(self, model: BaseAlgorithm, folder: Path) -> None:
        save_sb3(model, folder)
        model.get_env().save(folder)  # the running reward statistics

    def load(self, folder: Path, env: VecEnv, recipe: PolicyRecipe) -> BaseAlgorithm:
        model = restore_sb3(self.build(env, recipe), folder)
        model.get_env().load(folder)
        return model

    def export(self, model: BaseAlgorithm, base: PolicyPipeline | None, recipe: PolicyRecipe, folder: Path) -> Path:
        layers = _weight_layers(model.policy.mlp_extractor.policy_net, model.policy.action_net)
        return _export(layers, _require_base(base, self.name), single_env(model.get_env()), "resip", folder)


@functools.lru_cache(maxsize=2)
def _demos(episodes: int, seed: int) -> dict[str, np.ndarray]:
    """Scripted demonstrations, collected once per run (every environment's action scaling and the offline half use them)."""
    from domains.robot.envs import collect_demos

    return collect_demos(episodes, seed=seed)


@dataclass(frozen=True)
class ResfitTD3:
    """ResFiT: TD3 residual (``scale * tanh``), data-range action scaling, combined actions stored, 50/50 offline/online."""

    name: str = "resfit-td3"
    summary: str = "ResFiT: TD3 residual, clamp(base + scale tanh(.), -1, 1) in the demos' widened range, UTD 4"
    residual: bool = True
    config: type[PolicyAlgorithmConfig] = ResfitTD3Config

    def _demos(self, recipe: PolicyRecipe) -> dict[str, np.ndarray]:
        return _demos(recipe.algorithm.offline_episodes, recipe.training.seed)

    def wrap(self, env: gym.Env, base: PolicyPipeline | None, recipe: PolicyRecipe) -> gym.Env:
        scale = recipe.algorithm.residual_scale
        limits = resfit_action_limits(self._demos(recipe)["actions"], scale)
        return ResidualEnv(env, FrozenBase(_require_base(base, self.name)), "resfit", scale, action_limits=limits)

    def build(self, env: VecEnv, recipe: PolicyRecipe) -> BaseAlgorithm:
        a, t = recipe.algorithm, recipe.training
        model = resfit_td3(env, residual_scale=a.residual_scale, hidden=a.hidden, batch_size=a.batch_size,
                           gamma=a.gamma, learning_rate=t.lr, learning_starts=a.learning_starts,
                           critic_warmup=a.critic_warmup, n_critics=a.n_critics, actor_layer_norm=a.actor_layer_norm,
                           critic_layer_norm=a.critic_layer_norm, seed=t.seed)  # fmt: skip
        # the offline half returns the same n-step targets as the online buffer
        model.offline_buffer = offline_buffer(self._demos(recipe), single_env(env), n_steps=model.n_steps,
                                              gamma=model.gamma)  # fmt: skip
        return model

    def save(self, model: BaseAlgorithm, folder: Path) -> None:
        save_sb3(model, folder)  # the offline half is rebuilt from the recipe's seeded demonstrations
        save_replay_buffer(model.replay_buffer, folder / REPLAY_BUFFER)

    def load(self, folder: Path, env: VecEnv, recipe: PolicyRecipe) -> BaseAlgorithm:
        model = restore_sb3(self.build(env, recipe), folder)
        restore_replay_buffer(model.replay_buffer, folder / REPLAY_BUFFER)
        return model

    def export(self, model: BaseAlgorithm, base: PolicyPipeline | None, recipe: PolicyRecipe, folder: Path) -> Path:
        return _export(_weight_layers(model.actor.mu), _require_base(base, self.name), single_env(model.get_env()),
                       "resfit", folder)  # fmt: skip


@dataclass(frozen=True)
class DiffusionPolicyPPO:
    """DPPO: BC of a DDPM chunk policy on scripted pushes, then PPO over its last K' denoising steps."""

    name: str = "dppo"
    summary: str = "DPPO: PPO over (env step, denoising step) pairs of a behaviour-cloned diffusion policy"
    residual: bool = False
    config: type[PolicyAlgorithmConfig] = DPPOConfig

    def wrap(self, env: gym.Env, base: PolicyPipeline | None, recipe: PolicyRecipe) -> gym.Env:
        if base is not None:
            raise ValueError("dppo pre-trains its own diffusion policy: leave base.model empty")
        return ChunkEnv(env, recipe.algorithm.action_chunk)

    def build(self, env: VecEnv, recipe: PolicyRecipe) -> Any:
        from domains.robot.bc import chunk_targets
        from domains.robot.envs import collect_demos

        a, t = recipe.algorithm, recipe.training
        demos = collect_demos(a.offline_episodes, seed=t.seed)
        config = PolicyConfig(demos["observations"].shape[1], demos["actions"].shape[1], "diffusion-mlp",
                              a.action_chunk, a.hidden, {"denoising_steps": a.denoising_steps})  # fmt: skip
        chunks = chunk_targets(demos["actions"], demos["episode_index"], a.action_chunk)
        policy, norm, _ = pretrain(demos["observations"], chunks, config, steps=a.bc_steps, seed=t.seed)
        return DiffusionPPO(policy, config, norm, env, a.settings(t.lr), hidden=a.hidden, seed=t.seed)

    def save(self, model: Any, folder: Path) -> None:
        model.save(folder)

    def load(self, folder: Path, env: VecEnv, recipe: PolicyRecipe) -> Any:
        a, t = recipe.algorithm, recipe.training
        return DiffusionPPO.from_checkpoint(folder, env, a.settings(t.lr), hidden=a.hidden, seed=t.seed)

    def export(self, model: Any, base: PolicyPipeline | None, recipe: PolicyRecipe, folder: Path) -> Path:
        return model.export(folder)

    def export_pretrained(self, model: Any, folder: Path) -> Path:
        """The behaviour-cloned policy before RL, the ``base`` of the closing evaluation."""
        return model.export(folder, pretrained=True)


RESIP_PPO = register_method(ResipPPO())
DPPO = register_method(DiffusionPolicyPPO())
RESFIT_TD3 = register_method(ResfitTD3())
