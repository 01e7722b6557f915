"""CaRL's reward on hand-computed cases: each soft penalty, off-route, termination reasons, the terminating step.

Reference: CaRL (arXiv 2504.17838), nuPlan reward builder of ``autonomousvision/CaRL`` (read in the
fork ``jkli-2/CaRL`` at commit d6890e6d, ``nuPlan/carl_nuplan/planning/gym/environment/reward_builder/
default_reward_builder.py``: ``_regular_accumulate``, ``_calculate_lane_distance``, ``_calculate_too_fast``;
``components/time_to_collision.py``: SUCCESS_TTC 1.0, FAIL_TTC 0.5, held once failed). The numbers
below are worked out by hand from those formulas, not produced by the code under test;
:func:`regular_accumulate` is the builder's own accumulation (lines 217-241, defaults of lines 126-132).
"""

from __future__ import annotations

import pytest

pytest.importorskip("gymnasium", reason="the driving RL parts need the `driving` extra: pip install -e '.[driving]'")

import gymnasium as gym
import numpy as np

from domains.driving.carl_reward import (
    CarlReward,
    CarlRewardConfig,
    DrivingMeasurement,
    PenaltyState,
    carl_step,
    comfort_share,
    lane_distance_factor,
    speeding_factor,
)


def measure(rc: float, **changes) -> DrivingMeasurement:
    """A clean step: on route, centred in a 4 m lane, at the limit, no TTC issue, comfortable."""
    fields = {"route_completion": rc, "speed": 30.0, "speed_limit": 30.0, "center_distance": 0.0,
              "border_distance": 2.0, "on_route": True, "ttc_violation": False} | changes  # fmt: skip
    return DrivingMeasurement(**fields)


def rewards(measurements: list[DrivingMeasurement], config: CarlRewardConfig | None = None) -> list[float]:
    state, config = PenaltyState(), config or CarlRewardConfig()
    return [carl_step(m, state, config).reward for m in measurements]


def test_clean_driving_earns_the_route_completion_increase():
    assert rewards([measure(1.5), measure(4.0)]) == pytest.approx([1.5, 2.5])


def test_progress_counts_once_when_driving_back_and_forth():
    # best-so-far completion: 10 -> 8 -> 9 -> 11 earns 10, 0, 0, 1
    assert rewards([measure(10.0), measure(8.0), measure(9.0), measure(11.0)]) == pytest.approx([10.0, 0.0, 0.0, 1.0])


@pytest.mark.parametrize(("speed", "factor"), [(29.0, 1.0), (30.0, 1.0), (31.115, 0.5), (32.23, 0.0), (40.0, 0.0)])
def test_speeding_factor_falls_linearly_to_zero_at_2_23_m_s_over(speed, factor):
    assert speeding_factor(speed, 30.0, 2.23) == pytest.approx(factor)
    assert rewards([measure(2.0, speed=speed)]) == pytest.approx([2.0 * factor])


def test_no_speed_limit_means_no_speeding_penalty():
    assert speeding_factor(50.0, None, 2.23) == 1.0


def test_lane_distance_factor_is_one_near_the_centre_and_half_at_the_border():
    # 4 m lane, threshold 0.5 m: d_c 1.25, d_border 0.75 -> (1.25 - 0.5) / (1.25 + 0.75 - 0.5) = 0.5 -> 1 - 0.25
    assert lane_distance_factor(1.25, 0.75, 0.5, 0.5) == pytest.approx(0.75, abs=1e-6)
    assert lane_distance_factor(0.4, 1.6, 0.5, 0.5) == 1.0
    assert lane_distance_factor(2.0, 0.0, 0.5, 0.5) == pytest.approx(0.5, abs=1e-6)
    assert rewards([measure(4.0, center_distance=1.25, border_distance=0.75)]) == pytest.approx([3.0], abs=1e-5)


def test_ttc_violation_halves_the_reward_for_the_rest_of_the_episode():
    steps = [measure(1.0), measure(2.0, ttc_violation=True), measure(3.0), measure(4.0)]
    assert rewards(steps) == pytest.approx([1.0, 0.5, 0.5, 0.5])


def test_ttc_penalty_held_for_a_number_of_steps_then_released():
    steps = [measure(1.0, ttc_violation=True), measure(2.0), measure(3.0), measure(4.0)]
    assert rewards(steps, CarlRewardConfig(ttc_hold_steps=2)) == pytest.approx([0.5, 0.5, 0.5, 1.0])


def test_comfort_is_the_share_of_the_six_limits_kept():
    assert comfort_share({"lon_acceleration": 2.0, "yaw_rate": 0.5}) == 1.0
    assert comfort_share({"lon_acceleration": -5.0}) == pytest.approx(5 / 6)  # below -4.05 m/s²
    assert comfort_share({"lon_acceleration": 2.5, "yaw_rate": -1.0}) == pytest.approx(4 / 6)  # above 2.40, |.| > 0.95
    assert rewards([measure(3.0, kinematics={"lat_acceleration": 5.0})]) == pytest.approx([2.5])
    assert rewards([measure(3.0, kinematics={"lat_acceleration": 5.0})], CarlRewardConfig(use_comfort=False)) == [3.0]


def test_soft_penalties_multiply():
    # 2 x speeding 0.5 x ttc 0.5 x lane 0.75 x comfort 5/6 = 0.3125
    step = measure(2.0, speed=31.115, ttc_violation=True, center_distance=1.25, border_distance=0.75,
                   kinematics={"jerk": 9.0})  # fmt: skip
    assert rewards([step]) == pytest.approx([0.3125], abs=1e-5)


def test_off_route_earns_nothing_but_does_not_end_the_episode():
    state, config = PenaltyState(), CarlRewardConfig()
    result = carl_step(measure(5.0, on_route=False), state, config)
    assert result.reward == 0.0 and not result.terminated and result.components["off_route"] == 0.0
    assert carl_step(measure(6.0), state, config).reward == pytest.approx(1.0)  # progress while off route is spent


def regular_accumulate(route_completion: float, soft_constraints: list[float], hard_constraints: list[bool],
                       collision: bool, terminal_penalty: float = 0.0, collision_terminal_penalty: float = 0.0,
                       reward_factor: float = 100.0) -> tuple[float, bool]:  # fmt: skip
    """``DefaultRewardBuilder._regular_accumulate`` (value accumulation of comfort and TTC), returning
    (reward, termination); ``route_completion`` is the step's completion gain as a fraction of the route."""
    termination = any(hard_constraints)
    terminal_penalty = collision_terminal_penalty if collision else terminal_penalty
    terminate_factor = 0.0 if termination else 1.0
    reward = route_completion * np.prod(soft_constraints) * terminate_factor + terminal_penalty
    return reward * reward_factor, termination


@pytest.mark.parametrize("reason", ["collision", "red_light", "off_road", "blocked"])
def test_hard_constraints_end_the_episode_and_the_step_earns_nothing_as_in_nuplans_builder(reason):
    result = carl_step(measure(7.0, **{reason: True}), PenaltyState(), CarlRewardConfig())
    expected, ends = regular_accumulate(0.07, [1.0] * 5, [True], collision=reason == "collision")
    assert (result.terminated, result.reason, result.reward) == (ends, reason, expected) == (True, reason, 0.0)


@pytest.mark.parametrize("changes", [{}, {"speed": 31.115}, {"ttc_violation": True}, {"center_distance": 1.0},
                                     {"on_route": False}, {"speed": 31.115, "ttc_violation": True}])  # fmt: skip
def test_a_regular_step_is_nuplans_accumulation_of_its_components(changes):
    result = carl_step(measure(2.5, **changes), PenaltyState(), CarlRewardConfig())
    soft = [v for k, v in result.components.items() if k != "progress"]
    expected, ends = regular_accumulate(result.components["progress"] / 100, soft, [False], collision=False)
    assert not ends and result.reward == pytest.approx(expected)


NUM_SCENARIO_ITERATIONS = 150  # default_reward_builder.py:60


def nuplan_accumulate(route_completion: float, too_fast: float, ttc: float, comfort: float, off_route: float,
                      lane_distance: float, hard_constraints: list[bool],
                      reward_factor: float = 100.0) -> float:  # fmt: skip
    """``DefaultRewardBuilder._nuplan_accumulate`` (``default_reward_builder.py:266-296``), written again from those
    lines; ``route_completion`` is the step's completion gain as a fraction of the route."""
    reward = 0.0
    if not any(hard_constraints):
        ttc = 1.0 if ttc == 1.0 else 0.0
        comfort = 1.0 if comfort == 1.0 else 0.0
        ttc /= NUM_SCENARIO_ITERATIONS
        speed = too_fast / NUM_SCENARIO_ITERATIONS
        comfort /= NUM_SCENARIO_ITERATIONS
        reward = (5 * route_completion + 5 * ttc + 4 * speed + 2 * comfort) / 16
        reward = reward * off_route * lane_distance * reward_factor
    return reward


@pytest.mark.parametrize("changes", [{}, {"speed": 31.115}, {"ttc_violation": True}, {"center_distance": 1.0},
                                     {"on_route": False}, {"kinematics": {"yaw_rate": 2.0}}, {"collision": True},
                                     {"speed": 31.115, "ttc_violation": True, "center_distance": 1.2}])  # fmt: skip
def test_the_nuplan_accumulation_is_carls_weighted_sum(changes):
    config = CarlRewardConfig(accumulation="nuplan")
    result = carl_step(measure(2.5, **changes), PenaltyState(), config)
    c = result.components
    expected = nuplan_accumulate(c["progress"] / 100, c["speeding"], c["ttc"], c["comfort"], c["off_route"],
                                 c["lane_distance"], [result.terminated])  # fmt: skip
    assert result.reward == pytest.approx(expected)


def test_the_nuplan_accumulation_pays_for_safe_steps_without_progress():
    # standing still, unpenalised: (5 + 4 + 2) / 150 / 16 x 100 a step; TTC and comfort lost: 4 / 150 / 16 x 100
    config = CarlRewardConfig(accumulation="nuplan")
    calm = carl_step(measure(0.0), PenaltyState(), config).reward
    lost = carl_step(measure(0.0, ttc_violation=True, kinematics={"jerk": 20.0}), PenaltyState(), config).reward
    assert (calm, lost) == pytest.approx((11 / 150 / 16 * 100, 4 / 150 / 16 * 100))
    assert carl_step(measure(0.0), PenaltyState(), CarlRewardConfig(accumulation="nuplan", episode_steps=300)).reward \
        == pytest.approx(calm / 2)


def test_an_unknown_accumulation_is_refused_in_one_line():
    from domains.driving.carl_env import make_highway_carl

    with pytest.raises(ValueError, match="env.kwargs.reward: accumulation='survival': choose 'regular' or 'nuplan'"):
        make_highway_carl(vehicles=1, reward={"accumulation": "survival"})


def test_collision_is_reported_before_other_simultaneous_infractions():
    result = carl_step(measure(1.0, off_road=True, collision=True), PenaltyState(), CarlRewardConfig())
    assert result.reason == "collision" and result.reward == 0.0


class Scripted(gym.Env):
    """Replays a list of measurements as ``info["driving"]`` (its own reward is a decoy 123)."""

    observation_space = gym.spaces.Box(-1, 1, (1,))
    action_space = gym.spaces.Box(-1, 1, (1,))

    def __init__(self, measurements: list[DrivingMeasurement | None], truncate_at: int | None = None) -> None:
        self.measurements, self.truncate_at, self.t = measurements, truncate_at, 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        m = self.measurements[self.t]
        self.t += 1
        return np.zeros(1, np.float32), 123.0, False, self.t == self.truncate_at, {"driving": m}


def test_wrapper_replaces_the_reward_and_terminates_with_the_reason():
    env = CarlReward(Scripted([measure(2.0), measure(3.0, ttc_violation=True), measure(4.0, collision=True)]))
    env.reset()
    out = [env.step(np.zeros(1)) for _ in range(3)]
    assert [r for _, r, *_ in out] == pytest.approx([2.0, 0.5, 0.0])
    assert [t for _, _, t, *_ in out] == [False, False, True]
    assert out[-1][4]["termination"] == "collision" and "termination" not in out[0][4]
    assert set(out[0][4]["carl"]) == {"progress", "speeding", "ttc", "comfort", "lane_distance", "off_route"}


def test_wrapper_resets_its_penalty_memory_between_episodes():
    env = CarlReward(Scripted([measure(10.0, ttc_violation=True), measure(20.0)]))
    env.reset()
    assert env.step(np.zeros(1))[1] == pytest.approx(5.0)
    env.reset()
    env.unwrapped.measurements = [measure(10.0)]
    assert env.step(np.zeros(1))[1] == pytest.approx(10.0)


def test_route_end_truncates_without_terminating():
    env = CarlReward(Scripted([measure(100.0)], truncate_at=1))
    env.reset()
    _, reward, terminated, truncated, _ = env.step(np.zeros(1))
    assert (reward, terminated, truncated) == (100.0, False, True)


def test_wrapper_names_a_missing_measurement():
    env = CarlReward(Scripted([None]))
    env.reset()
    with pytest.raises(TypeError, match="info\\['driving'\\]"):
        env.step(np.zeros(1))
