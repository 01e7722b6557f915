"""Residual wrappers: zero residual = base, ResiP's combination, frozen base (ResFiT's agent: ``test_resfit.py``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import DummyVecEnv

import zoo
from domains.robot.envs import make_fetch_push
from domains.robot.residual import FrozenBase, ResidualEnv
from domains.robot.resip import resip_ppo


def _env(base_dir, combine="resip", scale=0.1):
    return ResidualEnv(make_fetch_push(max_episode_steps=20), FrozenBase(zoo.load(str(base_dir))), combine, scale)


def _weights(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_zero_residual_executes_the_base_with_its_chunk_queue(base_dir):
    pipe = zoo.load(str(base_dir))
    plain, env = make_fetch_push(max_episode_steps=20), _env(base_dir)
    obs, _ = plain.reset(seed=3)
    robs, _ = env.reset(seed=3)
    for _ in range(7):  # crosses chunk boundaries (chunk 2)
        expected = pipe.act(obs)
        np.testing.assert_allclose(env.base.denormalize_action(env.combined(np.zeros(4))), expected, atol=1e-5)
        obs, *_ = plain.step(expected)
        robs, *_ = env.step(np.zeros(4, np.float32))
        np.testing.assert_allclose(robs[:28], np.clip(env.base.normalize_obs(obs), -3, 3), atol=1e-4)


def test_resip_adds_a_tenth_of_the_residual_without_clipping(base_dir):
    env = _env(base_dir)
    obs, _ = env.reset(seed=0)
    base = obs[28:].astype(np.float64)
    residual = np.array([30.0, -30.0, 0.5, 0.0])  # far outside [-1, 1]: ResiP does not clip
    np.testing.assert_allclose(env.combined(residual), base + 0.1 * residual, atol=1e-6)
    assert (env.action_space.high >= 1e3).all()


def test_resip_ppo_starts_at_the_base_and_never_changes_it(base_dir):
    env = DummyVecEnv([lambda: _env(base_dir)] * 2)
    before = _weights(zoo.load(str(base_dir)).model)
    model = resip_ppo(env, hidden=(32, 32), n_steps=32, batch_size=32, n_epochs=2, seed=0)
    obs = env.reset()
    action, _ = model.predict(obs, deterministic=True)
    assert np.array_equal(action, np.zeros_like(action))  # zero-initialised output layer
    assert torch.allclose(model.policy.log_std, torch.full((4,), -1.0))
    bases = [e.base.model for e in env.envs]
    model.learn(64)
    assert model.policy.action_net.weight.abs().sum() > 0, "the residual did not train"
    assert torch.allclose(model.policy.log_std, torch.full((4,), -1.0)) and not model.policy.action_net.bias.any()
    for base in bases:
        after = base.state_dict()
        assert all(torch.equal(before[k], after[k]) for k in before)
        assert not any(p.requires_grad for p in base.parameters())
    trained = {id(p) for group in model.policy.optimizer.param_groups for p in group["params"]}
    assert not trained & {id(p) for base in bases for p in base.parameters()}


def test_mismatched_action_space_is_a_named_error(base_dir):
    import gymnasium as gym

    env = gym.make("Pendulum-v1")
    with pytest.raises(ValueError, match="not a Box of the base"):
        ResidualEnv(env, FrozenBase(zoo.load(str(base_dir))))


def test_the_shipped_resip_checkpoint_still_loads_as_a_plain_residual():
    """``fetch-push-resip-tiny`` predates ``residual_layer_norm``: its config has no such key, so its layout is plain."""
    from pathlib import Path

    from torch import nn

    folder = Path(__file__).resolve().parents[3] / "checkpoints" / "fetch-push-resip-tiny"
    pipe = zoo.load(str(folder))  # strict load: a LayerNorm the weights lack would be a missing key
    assert "residual_layer_norm" not in pipe.config.extra
    assert not any(isinstance(m, nn.LayerNorm) for m in pipe.model.residual.modules())
    obs, _ = make_fetch_push().reset(seed=0)
    assert np.isfinite(pipe.act(obs)).all()
