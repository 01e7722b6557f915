"""CaRL's Beta-PPO on the ``policy`` engine: the Beta head, one step that changes parameters, export, resume."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("highway_env", reason="the driving RL parts need the `driving` extra: pip install -e '.[driving]'")

import torch

import zoo
from domains.driving.carl_policy import BetaDistribution
from zoo.train import run

RECIPES = Path(__file__).resolve().parents[3] / "domains" / "driving" / "recipes"


def beta_log_density(x: float, a: float, b: float) -> float:
    """log of x^(a-1) (1-x)^(b-1) / B(a, b), written out with log-gamma."""
    return (a - 1) * math.log(x) + (b - 1) * math.log(1 - x) - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))


def test_beta_head_concentrations_density_and_mean_action():
    # head outputs 0 -> alpha = beta = softplus(0) + 1 = 1 + ln 2; outputs (2, 0) -> alpha = 1 + ln(1 + e^2)
    dist = BetaDistribution(action_dim=2).proba_distribution(torch.tensor([[0.0, 2.0, 0.0, 0.0]]))
    a0, a1, b = 1 + math.log(2), 1 + math.log(1 + math.e**2), 1 + math.log(2)
    action = torch.tensor([[0.0, 0.5]])  # unit values 0.5 and 0.75
    expected = beta_log_density(0.5, a0, b) + beta_log_density(0.75, a1, b) - 2 * math.log(2)
    assert dist.log_prob(action).item() == pytest.approx(expected, abs=1e-5)
    assert dist.mode()[0].tolist() == pytest.approx([0.0, 2 * a1 / (a1 + b) - 1], abs=1e-6)  # the mean, as CaRL acts
    samples = dist.sample()
    assert samples.shape == (1, 2) and (samples.abs() <= 1).all()


@pytest.fixture(scope="module")
def carl_run(tmp_path_factory):
    return run(str(RECIPES / "carl-highway-smoke.yaml"), [], output_dir=str(tmp_path_factory.mktemp("carl") / "run"))


def test_training_changes_the_actor_from_its_seeded_start_and_logs(carl_run):
    from stable_baselines3.common.vec_env import DummyVecEnv

    from domains.driving.carl import CARL_PPO
    from domains.driving.carl_env import make_highway_carl
    from domains.driving.carl_policy import BetaPolicy
    from zoo.engines.reading import load_recipe

    recipe = load_recipe(str(RECIPES / "carl-highway-smoke.yaml"))
    trained = CARL_PPO.load(carl_run / "checkpoint-2", DummyVecEnv([lambda: make_highway_carl(vehicles=3)] * 2), recipe)
    assert isinstance(trained.policy, BetaPolicy) and not hasattr(trained.policy, "log_std")
    assert trained.clip_range(1.0) == 0.1 and trained.ent_coef == 0.01 and trained.num_timesteps == 128
    start = CARL_PPO.build(DummyVecEnv([lambda: make_highway_carl(vehicles=3)] * 2), recipe)  # same seed, no update
    assert not torch.allclose(trained.policy.action_net.weight, start.policy.action_net.weight)
    header = (carl_run / "metrics.csv").read_text().splitlines()[0].split(",")
    assert {"success_rate", "env_steps", "approx_kl", "entropy_loss"} <= set(header)


def test_exported_policy_acts_with_the_trained_mean_action(carl_run):
    from stable_baselines3.common.vec_env import DummyVecEnv

    from domains.driving.carl import CARL_PPO
    from domains.driving.carl_env import make_highway_carl
    from zoo.engines.reading import load_recipe

    pipe = zoo.load(str(carl_run / "final"))
    assert pipe.config.architecture == "beta-mlp"
    recipe = load_recipe(str(carl_run / "recipe.yaml"))
    model = CARL_PPO.load(carl_run / "checkpoint-2", DummyVecEnv([lambda: make_highway_carl(vehicles=3)] * 2), recipe)
    env = make_highway_carl(vehicles=3)
    obs, _ = env.reset(seed=4)
    for _ in range(5):
        expected, _ = model.predict(obs, deterministic=True)
        action = pipe.act(obs)
        np.testing.assert_allclose(action, expected, atol=1e-5)
        obs, *_ = env.step(action)
    assert pipe(np.stack([obs, obs])).actions.shape == (2, 1, 2)


def test_resume_continues_from_the_newest_checkpoint(tmp_path):
    out = tmp_path / "run"
    run(str(RECIPES / "carl-highway-smoke.yaml"), ["training.steps=1"], output_dir=str(out))
    run(str(RECIPES / "carl-highway-smoke.yaml"), ["training.steps=2"], resume=True, output_dir=str(out))
    assert [r.split(",")[0] for r in (out / "metrics.csv").read_text().splitlines()[1:]] == ["1", "2"]
    state = json.loads((out / "checkpoint-2" / "policy_state.json").read_text())
    assert state == {"iteration": 2, "env_steps": 128}  # 2 envs x 32 steps per iteration, continued


def test_a_base_policy_is_refused(tmp_path):
    with pytest.raises(ValueError, match="from scratch"):
        run(str(RECIPES / "carl-highway-smoke.yaml"), ["base.model=fetch-push-bc-tiny"], output_dir=str(tmp_path / "r"))


@pytest.mark.parametrize(("recipe", "expected"), [
    ("carl-highway.yaml", {"ent_coef": 0.01, "n_epochs": 3, "samples": 2048, "batch_size": 512, "decays": False,
                           "accumulation": "regular"}),  # CaRL's CARLA PPO: train_carl_py.sh:17
    ("carl-highway-nuplan.yaml", {"ent_coef": 0.0, "n_epochs": 2, "samples": 4096, "batch_size": 1024,
                                  "decays": True, "accumulation": "nuplan"}),  # default_gym.yaml, train_multi_gpu.sh
])  # fmt: skip
def test_each_carl_recipe_builds_the_ppo_of_its_simulator(recipe, expected):
    from stable_baselines3.common.vec_env import DummyVecEnv

    from domains.driving.carl import CARL_PPO
    from domains.driving.carl_env import make_highway_carl
    from zoo.engines.reading import load_recipe

    loaded = load_recipe(str(RECIPES / recipe))
    kwargs = loaded.env.kwargs
    env = DummyVecEnv([lambda: make_highway_carl(**kwargs)] * loaded.algorithm.n_envs)
    model = CARL_PPO.build(env, loaded)
    built = {"ent_coef": model.ent_coef, "n_epochs": model.n_epochs, "samples": model.n_steps * model.n_envs,
             "batch_size": model.batch_size, "decays": not isinstance(model.learning_rate, float),
             "accumulation": env.envs[0].config.accumulation}  # fmt: skip
    assert built == expected
    # both runs clip the value loss and weigh CaRL's 0.5 * max(...) by its vf_coef 0.5 (dd_ppo.py:1185-1208)
    assert (model.clip_range(1.0), model.vf_coef, model.gamma, model.gae_lambda) == (0.1, 0.5, 0.99, 0.95)
    assert model.clip_vloss
