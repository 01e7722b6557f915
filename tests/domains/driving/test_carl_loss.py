"""CaRL's PPO loss and episode ends on stable-baselines3, against CaRL's own formulas ported here.

Reference: ``jkli-2/CaRL@829e7ee:CARLA/team_code/dd_ppo.py`` (CaRL's CleanRL-style PPO): ``done =
termination or truncation`` (line 943), GAE (lines 994-1006), advantage normalisation with the
Bessel-corrected std (1166-1177), clipped policy loss (1180-1182), value loss ``0.5 * max(unclipped, clipped)``
for ``clip_vloss 1`` (1185-1197) or ``0.5 * MSE`` for ``clip_vloss 0`` (1205) and
``loss = pg - ent_coef * H + v_loss * vf_coef`` (1207-1208); coefficients
from ``jkli-2/CaRL@65a0d57:CARLA/team_code/train_carl_py.sh:17`` (clip 0.1, ent 0.01, vf 0.5, gamma
0.99, lambda 0.95). :func:`carls_loss` and :func:`carls_gae` are those lines, reduced to one process
(``world_size`` 1) and to the tensors stable-baselines3's rollout buffer holds.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="the driving RL parts need the `driving` extra")

import gymnasium as gym
import torch
from stable_baselines3.common.vec_env import DummyVecEnv

from domains.driving.carl_policy import carl_ppo, carl_ppo_loss

CLIP, ENT, VF, GAMMA, LAMBDA = 0.1, 0.01, 0.5, 0.99, 0.95


class Episodes(gym.Env):
    """Reward 1 a step; the episode ends after ``length`` steps, by truncation (a time limit) or termination."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def __init__(self, length: int, truncate: bool) -> None:
        self.length, self.truncate, self.t = length, truncate, 0

    def _obs(self) -> np.ndarray:
        return np.array([self.t / self.length, np.sin(self.t), 1.0], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        end = self.t == self.length
        return self._obs(), 1.0, end and not self.truncate, end and self.truncate, {}


def collected(truncation_as_done: bool = True, learning_rate: float = 3e-4):
    """A CaRL PPO with one rollout of 2 x 16 steps collected (episodes of 5 and 7 steps, truncated and terminated)."""
    env = DummyVecEnv([lambda: Episodes(5, truncate=True), lambda: Episodes(7, truncate=False)])
    torch.manual_seed(0)
    model = carl_ppo(env, hidden=(16, 16), n_steps=16, batch_size=32, n_epochs=1, learning_rate=learning_rate,
                     truncation_as_done=truncation_as_done, max_grad_norm=1e9, seed=0)  # fmt: skip
    _, callback = model._setup_learn(32, None)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=model.n_steps)
    return model


def carls_gae(rewards, values, dones, next_value, next_done, gamma=GAMMA, lam=LAMBDA):
    """dd_ppo.py:994-1006 (``dones[t]`` is the done *before* step t, ``next_done`` the last step's)."""
    steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    lastgaelam = 0.0
    for t in reversed(range(steps)):
        if t == steps - 1:
            nextnonterminal = 1.0 - next_done
            nextvalues = next_value
        else:
            nextnonterminal = 1.0 - dones[t + 1]
            nextvalues = values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma * lam * nextnonterminal * lastgaelam
    return advantages, advantages + values


def carls_loss(newlogprob, entropy, newvalue, b_logprobs, b_advantages, b_returns, b_values=None,
               clip_coef=CLIP, ent_coef=ENT, vf_coef=VF, clip_vloss=True):  # fmt: skip
    """dd_ppo.py:1162-1208 for one minibatch, ``norm_adv 1``, one process; ``b_values`` the rollout's values."""
    logratio = newlogprob - b_logprobs
    ratio = logratio.exp()
    mb_advantages = b_advantages
    advantage_mean = mb_advantages.mean()
    advantage_std = torch.sum(torch.square(mb_advantages - advantage_mean)) / (torch.numel(mb_advantages) - 1)
    mb_advantages = (mb_advantages - advantage_mean) / (torch.sqrt(advantage_std) + 1e-8)
    pg_loss1 = -mb_advantages * ratio
    pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
    pg_loss = torch.max(pg_loss1, pg_loss2).mean()
    if clip_vloss:  # dd_ppo.py:1185-1197
        newvalue = newvalue.view(-1)
        v_clipped = b_values + torch.clamp(
            newvalue - b_values,
            -clip_coef,
            clip_coef,
        )
        v_loss_clipped = (v_clipped - b_returns) ** 2
        v_loss_unclipped = (newvalue - b_returns) ** 2
        v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
        v_loss = 0.5 * v_loss_max.mean()
    else:  # dd_ppo.py:1204-1205
        newvalue = newvalue.view(-1)
        v_loss = 0.5 * ((newvalue - b_returns) ** 2).mean()
    entropy_loss = entropy.mean()
    return pg_loss - ent_coef * entropy_loss + v_loss * vf_coef


def moved_values(new_values: torch.Tensor) -> torch.Tensor:
    """Rollout values 0.3 away from ``new_values`` on even rows (beyond the clip 0.1), 0.05 away on odd rows."""
    offsets = torch.where(torch.arange(new_values.numel()) % 2 == 0, 0.3, 0.05).to(new_values.dtype)
    signs = torch.where(torch.arange(new_values.numel()) % 4 < 2, 1.0, -1.0).to(new_values.dtype)
    return new_values.detach() + signs * offsets


@pytest.mark.parametrize("clip_vloss", [True, False])
def test_the_loss_and_its_gradient_equal_carls_lines(clip_vloss):
    generator = torch.Generator().manual_seed(0)
    n = 12
    value = torch.randn(n, generator=generator, dtype=torch.float64, requires_grad=True)
    log_prob = torch.randn(n, generator=generator, dtype=torch.float64, requires_grad=True)
    old_log_prob = (log_prob + 0.2 * torch.randn(n, generator=generator, dtype=torch.float64)).detach()
    entropy = torch.rand(n, generator=generator, dtype=torch.float64, requires_grad=True)
    advantages, returns = torch.randn(n, generator=generator, dtype=torch.float64), torch.randn(n, generator=generator,
                                                                                                dtype=torch.float64)
    old_value = moved_values(value)
    ours, terms = carl_ppo_loss(log_prob, entropy, value, old_log_prob, old_value, advantages, returns,
                                clip_coef=CLIP, ent_coef=ENT, vf_coef=VF, clip_vloss=clip_vloss)  # fmt: skip
    theirs = carls_loss(log_prob, entropy, value, old_log_prob, advantages, returns, old_value, clip_vloss=clip_vloss)
    torch.testing.assert_close(ours, theirs)
    ours_grads = torch.autograd.grad(ours, (value, log_prob, entropy))
    theirs_grads = torch.autograd.grad(theirs, (value, log_prob, entropy))
    for mine, reference in zip(ours_grads, theirs_grads, strict=True):
        torch.testing.assert_close(mine, reference)
    clipped_branch = (old_value + (value - old_value).clamp(-CLIP, CLIP) - returns) ** 2 > (value - returns) ** 2
    assert 0 < clipped_branch.sum() < n, "the case must take the clipped branch for some rows and not others"
    unclipped_v = 0.5 * ((value - returns) ** 2).mean().item()
    assert (terms["value_loss"] > unclipped_v) == clip_vloss and terms["value_loss"] >= unclipped_v


def test_truncated_and_terminated_episodes_end_unbootstrapped_as_in_carls_gae():
    model = collected()
    buffer = model.rollout_buffer
    assert (buffer.rewards == 1.0).all()  # no gamma * V(last state) added at the time limits
    with torch.no_grad():
        next_value = model.policy.predict_values(model.policy.obs_to_tensor(model._last_obs)[0]).flatten()
    advantages, returns = carls_gae(torch.tensor(buffer.rewards), torch.tensor(buffer.values),
                                    torch.tensor(buffer.episode_starts), next_value.double(),
                                    torch.tensor(model._last_episode_starts, dtype=torch.float64))  # fmt: skip
    np.testing.assert_allclose(buffer.advantages, advantages.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(buffer.returns, returns.numpy(), rtol=1e-5, atol=1e-5)


def test_bootstrapping_truncations_is_what_the_default_turns_off():
    bootstrapped = collected(truncation_as_done=False).rollout_buffer
    truncation_steps = np.flatnonzero(bootstrapped.rewards[:, 0] != 1.0)  # env 0 is truncated every 5th step
    assert truncation_steps.tolist() == [4, 9, 14]
    assert (bootstrapped.rewards[:, 1] == 1.0).all()  # terminations are never bootstrapped


@pytest.mark.parametrize("clip_vloss", [True, False])
def test_one_update_follows_the_gradient_of_carls_loss(clip_vloss):
    model = collected(learning_rate=1.0)
    model.clip_vloss = clip_vloss
    policy = model.policy
    # One minibatch of the whole rollout, one epoch, plain SGD at rate 1: the update is minus the gradient.
    policy.optimizer = torch.optim.SGD(policy.parameters(), lr=1.0)
    reference = copy.deepcopy(policy)
    buffer = model.rollout_buffer
    with torch.no_grad():  # old values away from the current ones, so that the value clip acts on some rows
        current = reference.predict_values(torch.as_tensor(buffer.observations.reshape(32, -1))).flatten()
    buffer.values = moved_values(current.double()).numpy().reshape(buffer.values.shape)
    data = next(buffer.get(batch_size=32))
    values, log_prob, entropy = reference.evaluate_actions(data.observations, data.actions)
    loss = carls_loss(log_prob, entropy, values, data.old_log_prob, data.advantages, data.returns, data.old_values,
                      clip_vloss=clip_vloss)  # fmt: skip
    loss.backward()
    before = {name: p.detach().clone() for name, p in policy.named_parameters()}
    model.train()
    for name, p in reference.named_parameters():
        torch.testing.assert_close(p - p.grad, dict(policy.named_parameters())[name].detach(), rtol=1e-4, atol=1e-6)
        assert not torch.equal(before[name], dict(policy.named_parameters())[name])
    assert model.vf_coef == VF and model.logger.name_to_value["train/value_loss"] > 0


def authors_linear_lr(learning_rate: float, update: int, num_updates: int) -> float:
    """CaRL's ``lr_schedule: linear`` (``jkli-2/CaRL@5ba3dc4:nuPlan/carl_nuplan/planning/gym/training.py``,
    ``run_training``), written again: ``frac = 1.0 - (update - 1.0) / num_updates`` for ``update`` from 0."""
    frac = 1.0 - (update - 1.0) / num_updates
    return frac * learning_rate


def test_the_linear_schedule_decays_over_the_run_as_carls_training_loop():
    env = DummyVecEnv([lambda: Episodes(5, truncate=True), lambda: Episodes(7, truncate=False)])
    model = carl_ppo(env, hidden=(8, 8), n_steps=8, batch_size=16, n_epochs=1, learning_rate=2.5e-4,
                     lr_iterations=4, seed=0)  # fmt: skip
    rates = []
    for _ in range(4):  # one learn call per iteration, as the policy engine runs it
        model.learn(16, reset_num_timesteps=False)
        rates.append(model.policy.optimizer.param_groups[0]["lr"])
    assert rates == pytest.approx([authors_linear_lr(2.5e-4, update, 4) for update in range(4)])
    constant = carl_ppo(env, hidden=(8, 8), n_steps=8, batch_size=16, n_epochs=1, learning_rate=2.5e-4, seed=0)
    constant.learn(32, reset_num_timesteps=False)
    assert constant.policy.optimizer.param_groups[0]["lr"] == pytest.approx(2.5e-4)
