"""Residual wrappers: zero residual = base, combined actions, frozen base, ResFiT storage and warm-up."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import DummyVecEnv

import zoo
from domains.robot.envs import make_fetch_push
from domains.robot.residual import FrozenBase, ResidualEnv, offline_buffer, resfit_td3
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


def test_resfit_clamps_the_combined_action_to_the_unit_box(base_dir):
    env = _env(base_dir, "resfit", 0.2)
    obs, _ = env.reset(seed=0)
    base = obs[28:].astype(np.float64)
    residual = np.array([1.0, -1.0, 0.3, 0.0])
    np.testing.assert_allclose(env.combined(residual), np.clip(base + 0.2 * residual, -1, 1), atol=1e-6)
    _, _, _, _, info = env.step(residual)
    np.testing.assert_allclose(info["combined_action"], np.clip(base + 0.2 * residual, -1, 1), atol=1e-6)


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


def test_resfit_td3_stores_combined_actions_warms_the_critic_and_never_changes_the_base(base_dir):
    from domains.robot.envs import collect_demos

    env = DummyVecEnv([lambda: _env(base_dir, "resfit", 0.1)])
    before = _weights(zoo.load(str(base_dir)).model)
    demos = collect_demos(2, seed=0)
    offline = offline_buffer(demos, env.envs[0])
    np.testing.assert_allclose(offline.actions[: offline.size(), 0], np.clip(demos["actions"], -1, 1), atol=1e-6)
    model = resfit_td3(env, hidden=(32, 32), learning_starts=10, batch_size=16, critic_warmup=10_000,
                       offline_buffer=offline, actor_lr_ratio=0.01, seed=0)
    actor0 = _weights(model.actor)
    model.learn(40)
    assert model.actor.optimizer.param_groups[0]["lr"] == pytest.approx(1e-6)  # 1e-4 x 0.01, as in ResFiT
    assert model.critic.optimizer.param_groups[0]["lr"] == pytest.approx(1e-4)
    assert all(torch.equal(actor0[k], v) for k, v in model.actor.state_dict().items()), "actor moved in warm-up"
    stored = model.replay_buffer.actions[: model.replay_buffer.size(), 0]
    observations = model.replay_buffer.observations[: model.replay_buffer.size(), 0]
    assert (np.abs(stored) <= 1).all()
    # the stored action is the combined one: base (in the observation) plus at most `scale` of residual
    assert (np.abs(stored - observations[:, -4:]) <= 0.1 + 1e-6).all()
    model.critic_warmup = 0
    model.learn(20, reset_num_timesteps=False)
    assert any(not torch.equal(actor0[k], v) for k, v in model.actor.state_dict().items()), "actor never trained"
    after = env.envs[0].base.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_mismatched_action_space_is_a_named_error(base_dir):
    import gymnasium as gym

    env = gym.make("Pendulum-v1")
    with pytest.raises(ValueError, match="not a Box of the base"):
        ResidualEnv(env, FrozenBase(zoo.load(str(base_dir))))
