"""The ``policy`` engine on the robot recipes: runs, resumes, exports a policy that acts as trained."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import zoo
from zoo.engines.reading import load_recipe
from zoo.recipe import RecipeError
from zoo.train import run

RECIPES = Path(__file__).resolve().parents[3] / "domains" / "robot" / "recipes"


@pytest.fixture(scope="module")
def resip_run(tmp_path_factory):
    return run(str(RECIPES / "fetch-push-resip-smoke.yaml"), ["training.steps=2"],
               output_dir=str(tmp_path_factory.mktemp("resip") / "run"))  # fmt: skip


def test_exported_residual_acts_like_the_trained_model_with_the_base_queue(resip_run):
    from stable_baselines3.common.vec_env import DummyVecEnv

    from domains.robot.algorithms import RESIP_PPO
    from domains.robot.envs import make_fetch_push
    from domains.robot.residual import FrozenBase, ResidualEnv

    pipe = zoo.load(str(resip_run / "final"))
    assert type(pipe).__name__ == "ResidualPolicyPipeline" and pipe.config.action_chunk == 1
    recipe = load_recipe(str(resip_run / "recipe.yaml"))
    residual_env = lambda: RESIP_PPO.wrap(make_fetch_push(max_episode_steps=20), zoo.load("fetch-push-bc-tiny"), recipe)
    model = RESIP_PPO.load(resip_run / "checkpoint-2", DummyVecEnv([residual_env] * 2), recipe)
    assert model.policy.action_net.weight.abs().sum() > 0
    wrapped = ResidualEnv(make_fetch_push(max_episode_steps=20), FrozenBase(zoo.load("fetch-push-bc-tiny")))
    plain = make_fetch_push(max_episode_steps=20)
    robs, _ = wrapped.reset(seed=7)
    obs, _ = plain.reset(seed=7)
    pipe.reset()
    for _ in range(9):  # over two base chunks of 4
        residual, _ = model.predict(robs, deterministic=True)
        expected = wrapped.base.denormalize_action(wrapped.combined(residual))
        action = pipe.act(obs)
        np.testing.assert_allclose(action, expected, atol=1e-5)
        robs, *_ = wrapped.step(residual)
        obs, *_ = plain.step(action)
    assert pipe(np.stack([obs, obs])).actions.shape == (2, 1, 4)


def test_run_keeps_the_base_bit_identical_and_logs_success(resip_run):
    final = zoo.load(str(resip_run / "final")).model.base.state_dict()
    base = zoo.load("fetch-push-bc-tiny").model.state_dict()
    assert all(torch.equal(final[k], base[k]) for k in base)
    header = (resip_run / "metrics.csv").read_text().splitlines()[0].split(",")
    assert {"success_rate", "env_steps", "episodes", "approx_kl"} <= set(header)
    assert (resip_run / "success_rate_curve.png").is_file()


def test_resume_continues_from_the_newest_checkpoint(tmp_path):
    out = tmp_path / "run"
    run(str(RECIPES / "fetch-push-resip-smoke.yaml"), ["training.steps=1"], output_dir=str(out))
    run(str(RECIPES / "fetch-push-resip-smoke.yaml"), ["training.steps=2"], resume=True, output_dir=str(out))
    rows = (out / "metrics.csv").read_text().splitlines()[1:]
    assert [r.split(",")[0] for r in rows] == ["1", "2"]
    state = json.loads((out / "checkpoint-2" / "policy_state.json").read_text())
    assert state == {"iteration": 2, "env_steps": 128}  # 2 envs x 32 steps per iteration, continued


def test_resfit_run_exports_a_residual_clamped_to_the_demonstrations_widened_range(tmp_path):
    from domains.robot.algorithms import _demos
    from domains.robot.residual import resfit_action_limits

    out = run(str(RECIPES / "fetch-push-resfit-smoke.yaml"), [], output_dir=str(tmp_path / "run"))
    pipe = zoo.load(str(out / "final"))
    assert pipe.model.combine == "resfit"
    recipe = load_recipe(str(out / "recipe.yaml"))
    low, high = resfit_action_limits(_demos(recipe.algorithm.offline_episodes, recipe.training.seed)["actions"], 0.1)
    np.testing.assert_allclose(pipe.config.extra["action_low"], low)  # ResFiT's ActionScaler limits, not the env box
    np.testing.assert_allclose(pipe.config.extra["action_high"], high)
    from domains.robot.envs import make_fetch_push

    env = make_fetch_push(max_episode_steps=20)
    obs, _ = env.reset(seed=0)
    pipe.reset()
    for _ in range(5):
        action = pipe.act(obs)
        assert ((action >= low - 1e-5) & (action <= high + 1e-5)).all()
        obs, *_ = env.step(action)
    assert (out / "checkpoint-2" / "replay_buffer.npz").is_file()


def test_unknown_environment_is_a_named_error(tmp_path):
    with pytest.raises(RecipeError, match="not a registered environment"):
        run(str(RECIPES / "fetch-push-resip-smoke.yaml"), ["env.name=fetch-pull"], output_dir=str(tmp_path / "r"))
