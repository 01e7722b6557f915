"""``training.vec_env``: environments in worker processes train the same policy as environments stepped in process.

Each method's CPU smoke recipe runs twice with the same ``algorithm.n_envs`` and seed, once with
``vec_env: dummy`` and once with ``vec_env: subproc``; ``metrics.csv`` (every cell but ``cpu_minutes``)
and every file of ``final/`` must be identical. stable-baselines3 guarantees the same seeds reach the same
environments in both layouts; the zoo's :class:`~zoo.engines.policy.envs.EnvWorkers` adds the same dtypes
(a plain ``SubprocVecEnv`` hands float64 rewards where ``DummyVecEnv`` hands float32, which the last
test shows). All four methods are identical, the residual ones included: their base policy runs in the
workers, and ResFiT's offline buffer and both residuals' exports read an environment built in the learner's
process (:func:`~zoo.engines.policy.envs.single_env`). A run interrupted after a checkpoint and resumed with
workers equals the uninterrupted one.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="the policy engine needs the `robot` or `driving` extra")

import gymnasium as gym
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from tests.engines.run_dirs import assert_same_final, interrupted_copy, metric_rows
from zoo.engines.policy.envs import EnvFactory, EnvWorkers, single_env, training_envs
from zoo.engines.policy.methods import POLICY_METHODS
from zoo.engines.policy.state import require_restorable
from zoo.engines.reading import load_recipe
from zoo.recipe import RecipeError
from zoo.train import run

ROOT = Path(__file__).resolve().parents[2]
ROBOT, DRIVING = ROOT / "domains" / "robot" / "recipes", ROOT / "domains" / "driving" / "recipes"
STEPS = 2
CASES = {  # name: (smoke recipe, the simulator's package)
    "resip": (ROBOT / "fetch-push-resip-smoke.yaml", "gymnasium_robotics"),
    "resfit": (ROBOT / "fetch-push-resfit-smoke.yaml", "gymnasium_robotics"),
    "dppo": (ROBOT / "fetch-push-dppo-smoke.yaml", "gymnasium_robotics"),
    "carl": (DRIVING / "carl-highway-smoke.yaml", "highway_env"),
}


def train(name: str, vec_env: str, output_dir: Path, resume: bool = False) -> Path:
    overrides = [f"training.steps={STEPS}", "training.save_steps=1", f"training.vec_env={vec_env}"]
    return run(str(CASES[name][0]), overrides, output_dir=str(output_dir), resume=resume)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """``get(name, vec_env)``: the run of a smoke recipe in that layout, made once."""
    done: dict[tuple[str, str], Path] = {}

    def get(name: str, vec_env: str) -> Path:
        pytest.importorskip(CASES[name][1])
        if (name, vec_env) not in done:
            done[name, vec_env] = train(name, vec_env, tmp_path_factory.mktemp(f"{name}-{vec_env}") / "run")
        return done[name, vec_env]

    return get


def assert_same_run(first: Path, second: Path) -> None:
    """Same ``metrics.csv`` cells (but ``cpu_minutes``) and a byte-identical ``final/``."""
    rows = metric_rows(first)
    assert [row["step"] for row in rows] == [str(s) for s in range(1, STEPS + 1)] and float(rows[-1]["env_steps"]) > 0
    assert metric_rows(second) == rows
    assert_same_final(first, second)


@pytest.mark.parametrize("name", sorted(CASES))
def test_workers_train_the_same_policy_as_one_process(name, trained):
    assert_same_run(trained(name, "dummy"), trained(name, "subproc"))


def test_a_resumed_run_with_workers_is_the_uninterrupted_run(trained, tmp_path):
    """ResiP: the episodes under way (its base's chunk queue, the simulator) come back from the workers."""
    out = trained("resip", "subproc")
    cut = interrupted_copy(out, tmp_path / "run", 1)
    train("resip", "subproc", cut, resume=True)
    assert_same_run(out, cut)


def test_a_bad_vec_env_is_a_recipe_error():
    recipe = CASES["resip"][0]
    assert load_recipe(recipe).training.vec_env == "dummy"
    assert load_recipe(recipe, ["training.vec_env=subproc"]).training.vec_env == "subproc"
    with pytest.raises(RecipeError, match=r"training\.vec_env='fork' is not one of \['dummy', 'subproc'\]"):
        load_recipe(recipe, ["training.vec_env=fork"])
    with pytest.raises(RecipeError, match=r"training\.vec_env='threads': choose one of \['dummy', 'subproc'\]"):
        training_envs(EnvFactory(POLICY_METHODS.get("resip-ppo"), load_recipe(recipe)), 1, "threads")


def test_workers_step_as_one_process_does_and_the_checks_reach_them():
    """Rewards and observations in ``DummyVecEnv``'s dtypes (a plain ``SubprocVecEnv`` differs), a local
    environment for the methods, and the refusal of an environment whose episodes a checkpoint cannot hold."""
    make = functools.partial(gym.make, "CartPole-v1")
    actions = np.array([1, 0])
    dummy, workers, plain = DummyVecEnv([make] * 2), EnvWorkers([make] * 2), SubprocVecEnv([make] * 2, "forkserver")
    try:
        steps = []
        for venv in (dummy, workers, plain):
            venv.seed(3)
            steps.append((venv.reset(), *venv.step(actions)[:2]))
        (obs0, obs1, rewards), (w_obs0, w_obs1, w_rewards) = steps[0], steps[1]
        assert rewards.dtype == w_rewards.dtype == np.float32 and steps[2][2].dtype == np.float64
        assert obs1.dtype == w_obs1.dtype and np.array_equal(obs0, w_obs0) and np.array_equal(obs1, w_obs1)
        assert single_env(workers) is single_env(workers) and single_env(dummy) is dummy.envs[0]
        assert isinstance(single_env(workers).unwrapped, gym.Env)
        with pytest.raises(TypeError, match="SubprocVecEnv holds no environment in this process"):
            single_env(plain)
        with pytest.raises(RecipeError, match="TimeLimit has no get_state"):
            require_restorable(workers, "cart-pole")
    finally:
        for venv in (dummy, workers, plain):
            venv.close()


def test_a_worker_that_cannot_build_its_environment_is_a_clear_error():
    with pytest.raises(RuntimeError, match="an environment worker failed to build its environment"):
        EnvWorkers([functools.partial(gym.make, "CartPole-v1", no_such_setting=1)])
