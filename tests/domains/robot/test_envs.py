"""The FetchPush stand-in: flat observation, sparse success reward with optional shaping, demonstrations."""

from __future__ import annotations

import numpy as np
import pytest

from domains.robot.envs import FlatSparseSuccess, collect_demos, make_fetch_push, scripted_push


def test_sparse_reward_is_zero_until_success_and_shaping_adds_the_distance_decrease():
    sparse, shaped = make_fetch_push(), make_fetch_push(shaping=10.0)
    obs, _ = sparse.reset(seed=4)
    shaped_obs, _ = shaped.reset(seed=4)
    np.testing.assert_array_equal(obs, shaped_obs)
    assert obs.shape == (28,)
    for _ in range(5):
        action = scripted_push(obs)
        before = FlatSparseSuccess.object_goal_distance(obs)
        obs, reward, terminated, _, info = sparse.step(action)
        _, shaped_reward, *_ = shaped.step(action)
        assert reward == float(info["is_success"]) and terminated == info["is_success"]
        after = FlatSparseSuccess.object_goal_distance(obs)
        assert shaped_reward == pytest.approx(reward + 10.0 * (before - after), abs=1e-6)
    with pytest.raises(ValueError, match="shaping"):
        make_fetch_push(shaping=-1.0)


def test_demonstrations_keep_successful_episodes_that_end_on_success():
    demos = collect_demos(4, seed=0)
    ends = np.flatnonzero(np.diff(demos["episode_index"], append=-1))
    assert demos["rewards"][ends].tolist() == [1.0] * len(ends) and demos["terminals"][ends].all()
    assert demos["rewards"].sum() == len(ends)  # the only reward is the success at the end
