"""The highway-env route stand-in: measurements, route completion, off-road and TTC tests, the built-in driver."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("highway_env", reason="the driving RL parts need the `driving` extra: pip install -e '.[driving]'")

from domains.driving.carl_env import OBS_DIM, kinematics, make_highway_carl, make_highway_route, ttc_violation
from domains.driving.carl_reward import DrivingMeasurement


def run(env, action, seed=0, steps=400):
    env.reset(seed=seed)
    trace = []
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(np.asarray(action, dtype=np.float32))
        trace.append((obs, reward, terminated, truncated, info))
        if terminated or truncated:
            break
    return trace


def test_steps_report_a_measurement_and_a_flat_observation():
    env = make_highway_route(vehicles=3)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (OBS_DIM,) and env.observation_space.shape == (OBS_DIM,) and np.isfinite(obs).all()
    _, _, _, _, info = env.step(np.zeros(2, np.float32))
    m = info["driving"]
    assert isinstance(m, DrivingMeasurement)
    assert 0 < m.route_completion < 5 and m.speed_limit == 30.0 and m.center_distance < 0.1 and m.on_route
    assert not (m.collision or m.off_road or m.red_light or m.blocked)  # highway-env has no traffic lights


def test_route_completion_reaches_100_and_ends_the_episode_as_a_success():
    trace = run(make_highway_carl(vehicles=0, route_length=60.0), [0.0, 0.0])
    _, _, terminated, truncated, info = trace[-1]
    assert truncated and not terminated and info["is_success"] and info["route_completion"] == 100.0
    assert sum(r for _, r, *_ in trace) == pytest.approx(100.0, abs=1e-6)  # alone on the road, no penalty applies


def test_steering_off_the_road_terminates_with_reason_off_road():
    _, reward, terminated, _, info = run(make_highway_carl(vehicles=0), [0.0, 1.0])[-1]
    assert terminated and info["termination"] == "off_road" and reward == 0.0 and not info["is_success"]


def test_standing_still_is_blocked():
    trace = run(make_highway_carl(vehicles=0, blocked_seconds=2.0), [-1.0, 0.0])
    assert trace[-1][4].get("termination") == "blocked"


def test_builtin_driver_ignores_actions():
    a = run(make_highway_route(driver="idm"), [1.0, 1.0], seed=3, steps=20)
    b = run(make_highway_route(driver="idm"), [-1.0, -1.0], seed=3, steps=20)
    np.testing.assert_allclose(np.stack([s[0] for s in a]), np.stack([s[0] for s in b]))
    assert a[-1][4]["route_completion"] > 10


def test_kinematics_by_finite_differences():
    # speeds 20, 22, 23 m/s and headings 0, 0, 0.1 rad at 5 Hz (dt 0.2 s)
    out = kinematics([(20.0, 0.0), (22.0, 0.0), (23.0, 0.1)], 0.2)
    assert out["lon_acceleration"] == pytest.approx(5.0)  # (23 - 22) / 0.2
    assert out["yaw_rate"] == pytest.approx(0.5)  # 0.1 / 0.2
    assert out["lat_acceleration"] == pytest.approx(11.5)  # 23 * 0.5
    assert out["lon_jerk"] == pytest.approx(-25.0)  # (5 - 10) / 0.2
    assert out["yaw_acceleration"] == pytest.approx(2.5)  # (0.5 - 0) / 0.2
    assert out["jerk"] == pytest.approx((np.hypot(5.0, 11.5) - 10.0) / 0.2)
    assert kinematics([(20.0, 0.0)], 0.2) == {}


def test_ttc_forecast_flags_a_slow_vehicle_ahead_only():
    from highway_env.road.road import Road, RoadNetwork
    from highway_env.vehicle.kinematics import Vehicle

    road = Road(RoadNetwork.straight_road_network(2), np_random=np.random.default_rng(0))
    ego = Vehicle(road, [0.0, 0.0], speed=30.0)
    # 12 m ahead at 10 m/s: at 0.5 s the ego's front (x = 17.5) passes the other's rear (x = 14.5)
    assert ttc_violation(ego, [ego, Vehicle(road, [12.0, 0.0], speed=10.0)])
    assert not ttc_violation(ego, [ego, Vehicle(road, [60.0, 0.0], speed=10.0)])  # 1 s is not enough to reach it
    assert not ttc_violation(ego, [ego, Vehicle(road, [12.0, 4.0], speed=10.0)])  # next lane
    assert not ttc_violation(ego, [ego, Vehicle(road, [-8.0, 0.0], speed=40.0)])  # behind: not the ego's TTC


@pytest.mark.parametrize(("kwargs", "message"), [({"driver": "robot"}, "driver"), ({"route_length": 0}, "route_length"),
                                                 ({"reward": {"ttc_factr": 0.5}}, "reward"),
                                                 ({"simulation_frequency": 7}, "multiple")])  # fmt: skip
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_highway_carl(**kwargs)


def test_route_lanes_outside_the_road_are_named():
    env = make_highway_route(route_lanes=(0, 5))
    with pytest.raises(ValueError, match="route_lanes"):
        env.reset(seed=0)
