"""ResiP's PPO details as in ``ankile/robust-rearrangement`` (MIT, commit 41c99a0).

Reward scaling: ``src/gym/env_rl_wrapper.py: RunningMeanStdClip`` (prior mean 0, variance 1, count
1e-4; divide by ``sqrt(var + 1e-8)`` without centring; clip 5). Networks:
``src/models/residual.py: build_mlp, layer_init`` with ``src/config/actor/residual_diffusion.yaml``
(critic head orthogonal gain 0.25, bias 0.25; Kaiming hidden layers; actor head zero, no bias).
GAE: ``src/train/residual_ppo.py`` with ``truncation_as_done true``. Optimisers: AdamW, critic lr 5e-3.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import DummyVecEnv

import zoo
from domains.robot.envs import make_fetch_push
from domains.robot.residual import FrozenBase, ResidualEnv
from domains.robot.resip import ResipRewards, resip_ppo
from zoo.recipe import RecipeError
from zoo.train import run

RECIPES = Path(__file__).resolve().parents[3] / "domains" / "robot" / "recipes"


def _venv(base_dir, n=2, steps=20):
    make = lambda: ResidualEnv(make_fetch_push(max_episode_steps=steps), FrozenBase(zoo.load(str(base_dir))))
    return DummyVecEnv([make] * n)


def test_reward_scale_is_the_running_std_of_all_rewards_with_the_authors_prior(base_dir):
    """After batches x_1..x_N the running variance is that of the pooled rewards plus a prior
    pseudo-sample of weight 1e-4, mean 0 and variance 1 (the closed form of the parallel update)."""
    wrapper = ResipRewards(_venv(base_dir), clip=100.0)
    batches = [np.array([0.0, 1.0]), np.array([1.0, 1.0]), np.array([0.0, 0.0]), np.array([3.0, -1.0])]
    for i, batch in enumerate(batches):
        scaled = wrapper.scale(batch)
        seen = np.concatenate(batches[: i + 1])
        weight = 1e-4 + len(seen)
        mean = seen.sum() / weight
        var = (1e-4 * (1.0 + 0.0**2) + (seen**2).sum()) / weight - mean**2
        np.testing.assert_allclose(scaled, batch / np.sqrt(var + 1e-8), rtol=1e-5)
    assert wrapper.scale(np.zeros(2)).tolist() == [0.0, 0.0]  # divided, never centred


def test_reward_scale_clips_and_the_first_sparse_success_is_capped_at_five(base_dir):
    wrapper = ResipRewards(_venv(base_dir))
    # many zero rewards shrink the running std, so a rare success of 1 scales past the clip
    for _ in range(200):
        wrapper.scale(np.zeros(2))
    assert wrapper.scale(np.array([1.0, 0.0])).tolist() == [5.0, 0.0]


def test_truncation_is_a_done_without_bootstrap(base_dir):
    steps = 3
    kept, cleared = _venv(base_dir, 1, steps), ResipRewards(_venv(base_dir, 1, steps), normalize=False)
    for venv in (kept, cleared):
        venv.seed(0)
        venv.reset()
    for _ in range(steps):
        *_, done_k, info_k = kept.step(np.zeros((1, 4), np.float32))
        _, reward, done_c, info_c = cleared.step(np.zeros((1, 4), np.float32))
    assert done_k[0] and done_c[0] and not info_k[0]["is_success"]
    assert info_k[0]["TimeLimit.truncated"] and not info_c[0]["TimeLimit.truncated"]
    assert reward.tolist() == [0.0]  # normalize=False: the sparse reward as the environment gave it


def test_networks_are_initialised_as_the_authors(base_dir):
    model = resip_ppo(ResipRewards(_venv(base_dir)), hidden=(32, 32), n_steps=16, batch_size=16, seed=0)
    head = model.policy.value_net
    assert torch.allclose(head.bias, torch.full((1,), 0.25))
    assert torch.allclose(head.weight.norm(), torch.tensor(0.25), atol=1e-6)  # orthogonal row, gain 0.25
    for net in (model.policy.mlp_extractor.policy_net, model.policy.mlp_extractor.value_net):
        layers = [m for m in net if isinstance(m, torch.nn.Linear)]
        assert all(not layer.bias.any() for layer in layers)
    first = model.policy.mlp_extractor.value_net[0].weight  # Kaiming normal, fan-in: std sqrt(2 / fan_in)
    assert abs(float(first.detach().std()) - np.sqrt(2 / first.shape[1])) < 0.02
    actor, critic = model.policy.optimizer.param_groups
    assert isinstance(model.policy.optimizer, torch.optim.AdamW)
    assert actor["lr"] == pytest.approx(3e-4) and critic["lr"] == pytest.approx(5e-3)
    assert {id(p) for p in critic["params"]} == {id(p) for p in [*model.policy.mlp_extractor.value_net.parameters(),
                                                                 *model.policy.value_net.parameters()]}  # fmt: skip
    sb3 = resip_ppo(ResipRewards(_venv(base_dir)), hidden=(32, 32), n_steps=16, batch_size=16, network_init="sb3")
    assert not sb3.policy.value_net.bias.any()


def test_one_update_moves_actor_and_critic_at_their_own_rates(base_dir):
    model = resip_ppo(ResipRewards(_venv(base_dir)), hidden=(32, 32), n_steps=32, batch_size=32, n_epochs=1, seed=0)
    before = {k: v.clone() for k, v in model.policy.state_dict().items()}
    model.learn(64)
    after = model.policy.state_dict()
    assert not torch.equal(before["action_net.weight"], after["action_net.weight"])
    assert not torch.equal(before["value_net.weight"], after["value_net.weight"])
    assert torch.equal(before["action_net.bias"], after["action_net.bias"]) and torch.equal(
        before["log_std"], after["log_std"]
    )


def test_recipe_rejects_an_unknown_init_and_a_bad_clip(tmp_path):
    recipe = str(RECIPES / "fetch-push-resip-smoke.yaml")
    with pytest.raises(RecipeError, match="network_init"):
        run(recipe, ["algorithm.network_init=xavier"], output_dir=str(tmp_path / "a"))
    with pytest.raises(RecipeError, match="clip_reward"):
        run(recipe, ["algorithm.clip_reward=0"], output_dir=str(tmp_path / "b"))


def test_resume_keeps_the_running_reward_statistics(tmp_path):
    out = tmp_path / "run"
    recipe = str(RECIPES / "fetch-push-resip-smoke.yaml")
    run(recipe, ["training.steps=1"], output_dir=str(out))
    first = json.loads((out / "checkpoint-1" / "reward_normalizer.json").read_text())
    assert first["count"] == pytest.approx(64 + 1e-4)  # 2 envs x 32 steps, every reward counted
    run(recipe, ["training.steps=2"], resume=True, output_dir=str(out))
    second = json.loads((out / "checkpoint-2" / "reward_normalizer.json").read_text())
    assert second["count"] == pytest.approx(128 + 1e-4)


@pytest.mark.parametrize("reset", [False, True])
def test_reset_every_iteration_starts_each_rollout_from_fresh_episodes(base_dir, reset):
    """ResiP resets all environments and the base's queues before every iteration (``residual_ppo.py:340-343``)."""
    venv = _venv(base_dir, 2, steps=50)
    resets = [0, 0]
    for i, env in enumerate(venv.envs):
        original = env.reset

        def counted(*args, _i=i, _original=original, **kwargs):
            resets[_i] += 1
            return _original(*args, **kwargs)

        env.reset = counted
    model = resip_ppo(ResipRewards(venv), hidden=(16, 16), n_steps=8, batch_size=16, n_epochs=1,
                      reset_every_iteration=reset, seed=0)  # fmt: skip
    for _ in range(3):  # the engine's iterations: one learn call of n_envs x n_steps each
        model.learn(16, reset_num_timesteps=False)
    # the first learn resets once to start; 8-step rollouts of 50-step episodes never end one by themselves
    assert resets == ([1 + 3] * 2 if reset else [1, 1])
