"""ResFiT's residual TD3 against the authors' code (``amazon-science/residual-offpolicy-rl``, CC-BY-NC-4.0, commit 66262b0).

The action scaler and the critic loss are compared with the authors' functions, ported below from
``resfit/rl_finetuning/utils/normalization.py:36-132`` (``ActionScaler``) and
``resfit/rl_finetuning/off_policy/rl/q_agent.py:377-388`` (``update_critic``, MSE branch); the actor
with ``build_fc`` of ``resfit/rl_finetuning/off_policy/rl/actor.py:12-28`` on the same weights; the
update cadence and the warm-ups with what ``config/rlpd.py``, ``config/residual_td3.py`` and
``scripts/train_residual_td3.py`` set.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import DummyVecEnv
from torch import nn

import zoo
from domains.robot.envs import collect_demos, make_fetch_push
from domains.robot.residual import (
    FrozenBase,
    ResidualEnv,
    offline_buffer,
    resfit_action_limits,
    resfit_critic_loss,
    resfit_td3,
)
from zoo.recipe import RecipeError
from zoo.train import run


class AuthorsActionScaler:
    """``ActionScaler`` of ``resfit/rl_finetuning/utils/normalization.py`` (lines 36-132), printing and devices left out."""

    def __init__(self, action_min: torch.Tensor, action_max: torch.Tensor, action_scale: float = 1.0,
                 min_range_per_dim: float = 1e-1) -> None:  # fmt: skip
        action_mid = (action_min + action_max) / 2
        action_half_range = (action_max - action_min) / 2
        min_half_range = torch.tensor(min_range_per_dim / 2)
        action_half_range = torch.maximum(action_half_range, min_half_range)
        expanded_half_range = action_half_range * (1 + action_scale)
        self.min, self.max = action_mid - expanded_half_range, action_mid + expanded_half_range
        self._range = torch.maximum(self.max - self.min, torch.tensor(1e-8))

    def scale(self, action: torch.Tensor) -> torch.Tensor:
        action_clamped = torch.clamp(action, self.min, self.max)
        return 2.0 * (action_clamped - self.min) / self._range - 1.0

    def unscale(self, scaled_action: torch.Tensor) -> torch.Tensor:
        scaled_clamped = torch.clamp(scaled_action, -1.0, 1.0)
        return self.min + (scaled_clamped + 1.0) * (self.max - self.min) / 2.0


def authors_critic_loss(q_all: torch.Tensor, target_q: torch.Tensor) -> torch.Tensor:
    """``q_agent.py:377-388``: ``q_all`` ``[K, B]``, ``target_q`` ``[B]``, uniform sampling."""
    td_errors = torch.abs(q_all - target_q.unsqueeze(0)).mean(dim=0)
    return (td_errors**2).mean()


def authors_build_fc(in_dim: int, hidden_dim: int, action_dim: int, num_layer: int, layer_norm: int, dropout: float,
                     use_layer_norm: bool = True) -> nn.Sequential:  # fmt: skip
    """``build_fc`` of ``resfit/rl_finetuning/off_policy/rl/actor.py:12-28``, written again from those lines."""
    dims = [in_dim] + [hidden_dim] * num_layer
    layers: list[nn.Module] = []
    for i in range(len(dims) - 1):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if use_layer_norm and layer_norm == 1:
            layers.append(nn.LayerNorm(dims[i + 1]))
        if use_layer_norm and layer_norm == 2 and i == num_layer - 1:
            layers.append(nn.LayerNorm(dims[i + 1]))
        layers.append(nn.Dropout(dropout))
        layers.append(nn.ReLU())
    layers.append(nn.Linear(dims[-1], action_dim))
    layers.append(nn.Tanh())
    return nn.Sequential(*layers)


def _weighted(module: nn.Module) -> list[nn.Module]:
    return [m for m in module.modules() if isinstance(m, nn.Linear | nn.LayerNorm)]


@pytest.fixture(scope="module")
def demos():
    return collect_demos(3, seed=0)


def _env(base_dir, limits=None, scale=0.1):
    return ResidualEnv(make_fetch_push(max_episode_steps=20), FrozenBase(zoo.load(str(base_dir))), "resfit", scale,
                       action_limits=limits)  # fmt: skip


def test_action_scaling_matches_the_authors_scaler(base_dir, demos):
    actions = demos["actions"].astype(np.float64)
    assert np.ptp(actions[:, 3]) == 0, "the constant gripper dimension exercises the minimum range"
    authors = AuthorsActionScaler(torch.tensor(actions.min(0)), torch.tensor(actions.max(0)), action_scale=0.1)
    low, high = resfit_action_limits(actions, 0.1)
    np.testing.assert_allclose(low, authors.min.numpy(), atol=1e-12)
    np.testing.assert_allclose(high, authors.max.numpy(), atol=1e-12)
    env = _env(base_dir, (low, high))
    probe = np.random.default_rng(0).uniform(-1.6, 1.6, (64, 4))  # inside and outside the widened range
    np.testing.assert_allclose(env.to_unit(probe), authors.scale(torch.tensor(probe)).numpy(), atol=1e-12)
    np.testing.assert_allclose(env.from_unit(probe), authors.unscale(torch.tensor(probe)).numpy(), atol=1e-12)


def test_critic_loss_matches_the_authors_and_differs_from_a_sum_of_mses():
    generator = torch.Generator().manual_seed(0)
    q_all, target = torch.randn(5, 7, 1, generator=generator), torch.randn(7, 1, generator=generator)
    ours = resfit_critic_loss(q_all, target)
    torch.testing.assert_close(ours, authors_critic_loss(q_all.squeeze(-1), target.squeeze(-1)))
    assert not torch.isclose(ours, sum(((q - target) ** 2).mean() for q in q_all))


def test_env_executes_the_clamped_sum_and_reports_it_unclamped(base_dir, demos):
    low, high = resfit_action_limits(demos["actions"], 0.1)
    env = _env(base_dir, (low, high))
    obs, _ = env.reset(seed=0)
    base = obs[28:].astype(np.float64)
    residual = np.where(base >= 0, 1.0, -1.0)  # the edge of the residual's box: every sum leaves [-1, 1]
    np.testing.assert_allclose(env.combined(residual), base + residual, atol=1e-7)
    assert (env.action_space.low == -1).all() and (env.action_space.high == 1).all()
    _, _, _, _, info = env.step(residual.astype(np.float32))
    np.testing.assert_allclose(info["combined_action"], base + residual, atol=1e-6)
    assert np.abs(info["combined_action"]).max() > 1, "the stored sum is not clamped (residual_env_wrapper.py:145)"
    np.testing.assert_allclose(env.from_unit(base + residual), env.from_unit(np.clip(base + residual, -1, 1)))


def test_networks_optimisers_and_defaults_are_the_authors(base_dir, demos):
    env = DummyVecEnv([lambda: _env(base_dir, resfit_action_limits(demos["actions"], 0.1))])
    model = resfit_td3(env, hidden=(16, 16), learning_starts=10, seed=0)
    assert (model.gradient_steps, model.policy_delay, model.n_steps) == (4, 4, 3)
    assert (model.batch_size, model.learning_starts, model.critic_warmup, model.buffer_size) == (256, 10, 10_000, 200_000)
    assert model.target_policy_noise == 0.05 and model.target_noise_clip == 0.3 and model.tau == 0.005
    critics = model.critic.q_networks
    assert len(critics) == 10 and [type(m) for m in critics[0]] == [nn.Linear, nn.LayerNorm, nn.ReLU] * 2 + [nn.Linear]
    mu = list(model.actor.mu)
    assert [type(m).__name__ for m in mu] == ["Linear", "LayerNorm", "ReLU"] * 2 + ["Linear", "Tanh", "_Scale"]
    assert mu[-1].scale == 0.1 and not mu[6].weight.any() and not mu[6].bias.any()
    torch.testing.assert_close(mu[3].weight @ mu[3].weight.T, torch.eye(16), atol=1e-5, rtol=0)  # orthogonal
    assert not mu[3].bias.any() and (mu[4].weight == 1).all() and not mu[4].bias.any()  # LayerNorm: PyTorch's init
    for optimizer in (model.actor.optimizer, model.critic.optimizer):
        assert isinstance(optimizer, torch.optim.AdamW) and optimizer.defaults["weight_decay"] == 0.01
    plain = resfit_td3(env, hidden=(8, 8), critic_layer_norm=False, n_critics=2).critic.q_networks[0]
    assert not any(isinstance(m, nn.LayerNorm) for m in plain)
    with pytest.raises(ValueError, match="multiple of actor_updates_per_step"):
        resfit_td3(env, updates_per_step=4, actor_updates_per_step=3)


def test_warmups_cadence_and_storage_follow_the_authors_and_the_base_never_changes(base_dir, demos):
    limits = resfit_action_limits(demos["actions"], 0.1)
    env = DummyVecEnv([lambda: _env(base_dir, limits)])
    before = {k: v.clone() for k, v in zoo.load(str(base_dir)).model.state_dict().items()}
    offline = offline_buffer(demos, env.envs[0], n_steps=3, gamma=0.99)
    np.testing.assert_allclose(offline.actions[: offline.size(), 0], env.envs[0].to_unit(demos["actions"]), atol=1e-6)
    model = resfit_td3(env, hidden=(16, 16), n_critics=3, learning_starts=10, critic_warmup=6, batch_size=8,
                       offline_buffer=offline, seed=0)  # fmt: skip
    actor0 = {k: v.clone() for k, v in model.actor.state_dict().items()}
    model.learn(10)  # the random warm-up only: no update yet
    assert model._n_updates == 0 and all(torch.equal(actor0[k], v) for k, v in model.actor.state_dict().items())
    stored = model.replay_buffer.actions[:10, 0] - model.replay_buffer.observations[:10, 0, -4:]
    assert np.abs(stored).max() <= 0.2 + 1e-6 and np.abs(stored).max() > 0.1  # uniform +-0.2 residual, stored sum
    model.learn(4, reset_num_timesteps=False)  # 4 steps: critic warm-up block, then 4 critic + 1 actor updates each
    steps = {name: {int(s["step"]) for s in opt.state.values()} for name, opt in
             (("critic", model.critic.optimizer), ("actor", model.actor.optimizer))}  # fmt: skip
    assert steps == {"critic": {6 + 4 * 4}, "actor": {4}} and model._n_updates == 22
    assert model.actor.optimizer.param_groups[0]["lr"] == pytest.approx(1e-6)  # 1e-4 x 0.01, as in ResFiT
    assert any(not torch.equal(actor0[k], v) for k, v in model.actor.state_dict().items()), "actor never trained"
    after = env.envs[0].base.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_a_recipe_without_demonstrations_is_refused_in_one_line(tmp_path):
    recipe = Path(__file__).resolve().parents[3] / "domains" / "robot" / "recipes" / "fetch-push-resfit-smoke.yaml"
    with pytest.raises(RecipeError, match="offline_episodes >= 1"):
        run(str(recipe), ["algorithm.offline_episodes=0"], output_dir=str(tmp_path / "run"))


@pytest.mark.parametrize("layer_norm", [True, False])
def test_actor_computes_what_the_authors_build_fc_computes_on_the_same_weights(base_dir, demos, layer_norm):
    env = DummyVecEnv([lambda: _env(base_dir, resfit_action_limits(demos["actions"], 0.1))])
    actor = resfit_td3(env, hidden=(16, 16), n_critics=2, actor_layer_norm=layer_norm, seed=0).actor
    authors = authors_build_fc(32, 16, 4, num_layer=2, layer_norm=1, dropout=0.0, use_layer_norm=layer_norm)
    ours = _weighted(actor.mu)
    assert [type(m) for m in ours] == [type(m) for m in _weighted(authors)]
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for mine, theirs in zip(ours, _weighted(authors), strict=True):  # random weights, the zero output layer too
            mine.weight.copy_(torch.randn(mine.weight.shape, generator=generator))
            mine.bias.copy_(torch.randn(mine.bias.shape, generator=generator))
            theirs.load_state_dict(mine.state_dict())
    obs = torch.randn(64, 32, generator=generator) * 3
    with torch.no_grad():
        expected = authors(obs) * 0.1  # actor.py:168-172: mu * action_scale
        torch.testing.assert_close(actor(obs), expected)
        assert expected.abs().max() > 0.05


def test_exported_residual_keeps_the_actors_layer_norms(base_dir, demos, tmp_path):
    from domains.robot.algorithms import RESFIT_TD3

    env = DummyVecEnv([lambda: _env(base_dir, resfit_action_limits(demos["actions"], 0.1))])
    model = resfit_td3(env, hidden=(16, 16), n_critics=2, seed=0)
    generator = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for layer in _weighted(model.actor.mu):
            layer.weight.add_(torch.randn(layer.weight.shape, generator=generator))
            layer.bias.add_(torch.randn(layer.bias.shape, generator=generator))
    pipe = zoo.load(str(RESFIT_TD3.export(model, zoo.load(str(base_dir)), None, tmp_path / "final")))
    assert pipe.config.extra["residual_layer_norm"] is True
    x = torch.randn(32, 32, generator=generator)
    with torch.no_grad():
        torch.testing.assert_close(pipe.model.scale * torch.tanh(pipe.model.residual(x)), model.actor(x))
