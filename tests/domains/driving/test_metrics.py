"""PDM sub-metrics on hand-built scenes: each case is set up so the NAVSIM rule decides it.

Rules from autonomousvision/navsim HEAD (0a380a90)
navsim/planning/simulation/planner/pdm_planner/scoring/pdm_scorer.py (``_calculate_*``),
pdm_scorer_utils.py (``get_collision_type``) and pdm_comfort_metrics.py (limits).
"""

from __future__ import annotations

import numpy as np
import pytest

from domains.driving import comfort
from domains.driving.metrics import score, straight_waypoints, sub_metrics
from domains.driving.scene import Agent, Lane, Scene, ego_states

ROUTE = np.array([[-30.0, 0.0], [150.0, 0.0]])


def road(*agents: Agent, speed: float = 10.0, oncoming: bool = True, lights=()) -> Scene:
    lanes = [Lane("ego", ROUTE, 3.5, True), Lane("left", ROUTE + [0, 3.5], 3.5, True)]
    if oncoming:
        lanes.append(Lane("oncoming", ROUTE + [0, 7.0], 3.5, False))
    return Scene(tuple(lanes), agents, tuple(np.asarray(p, float) for p in lights), speed, ROUTE)


def test_clean_constant_speed_drive_passes_everything():
    m = sub_metrics(road(), straight_waypoints(10.0))
    assert {k: m[k] for k in ("nc", "dac", "ddc", "tlc", "ttc", "lk", "c", "hc")} == dict.fromkeys(
        ("nc", "dac", "ddc", "tlc", "ttc", "lk", "c", "hc"), 1.0
    )
    assert m["progress"] == pytest.approx(40.0, abs=1e-6)  # 10 m/s for 4 s along the route


def test_hitting_a_stopped_vehicle_is_at_fault_and_a_static_object_halves():
    stopped = Agent("car", 25.0, 0.0, 0.0)  # the ego reaches it near t = 2 s
    assert sub_metrics(road(stopped), straight_waypoints(10.0))["nc"] == 0.0
    cone = Agent("cone", 25.0, 0.0, 0.0, 1.0, 1.0, kind="static")
    assert sub_metrics(road(cone), straight_waypoints(10.0))["nc"] == 0.5


def test_being_rear_ended_is_not_at_fault():
    chaser = Agent("chaser", -8.0, 0.0, 0.0, vx=20.0)  # faster car from behind hits the ego's rear
    assert sub_metrics(road(chaser), straight_waypoints(5.0, 0.0))["nc"] == 1.0


def test_leaving_the_road_fails_dac_and_oncoming_lane_fails_ddc():
    off = sub_metrics(road(oncoming=False), straight_waypoints(10.0, -5.0))
    assert off["dac"] == 0.0
    # centre in the oncoming lane for most of 4 s at 10 m/s: > 6 m within a 1 s window -> DDC 0
    wrong_way = sub_metrics(road(), straight_waypoints(10.0, 6.5))
    assert wrong_way["dac"] == 1.0 and wrong_way["ddc"] == 0.0


def test_ttc_fails_when_closing_in_on_a_slower_lead_without_contact():
    # With constant speeds TTC and NC decide alike (0.9 s of look-ahead + 3.1 s of steps = the 4 s
    # horizon); they differ when the ego brakes: 10 -> 5 m/s at -2.5 m/s^2 behind a 5 m/s lead whose
    # rear is 5.5 m ahead of the ego's front. The gap shrinks to 0.5 m (no contact), but at t = 1 s
    # the ego (7.5 m/s) projected 0.9 s ahead closes 2.25 m on a 1.75 m gap.
    t = np.arange(1, 9) * 0.5
    x = np.where(t <= 2, 10 * t - 1.25 * t**2, 15 + 5 * (t - 2))
    lead = Agent("lead", 4.05 + 5.5 + 2.25, 0.0, 0.0, vx=5.0)
    m = sub_metrics(road(lead), np.stack([x, 0 * t, 0 * t], axis=1))
    assert m["nc"] == 1.0 and m["ttc"] == 0.0


def test_red_light_and_lane_keeping():
    light = [[20, -1.7], [21, -1.7], [21, 1.7], [20, 1.7]]
    assert sub_metrics(road(lights=[light]), straight_waypoints(10.0))["tlc"] == 0.0
    # 1 m left of the centreline for the whole horizon: > 0.5 m for >= 2 s -> LK 0 (still in lanes)
    assert sub_metrics(road(), straight_waypoints(10.0, 1.0))["lk"] == 0.0


def test_comfort_limits():
    smooth = ego_states(straight_waypoints(10.0), 10.0)
    assert comfort.is_comfortable(smooth) == 1.0
    # from 10 m/s to standing in 0.5 s: far past the -4.05 m/s^2 longitudinal limit
    harsh = ego_states(np.tile([[2.5, 0.0, 0.0]], (8, 1)), 10.0)
    assert comfort.comfort_checks(harsh)["lon_accel"] is False
    assert comfort.two_frame_extended_comfort(smooth, smooth) == 1.0
    assert comfort.two_frame_extended_comfort(harsh, smooth) == 0.0


def test_score_versions_and_progress_against_reference():
    scene = road()
    slow = score(scene, straight_waypoints(10.0), straight_waypoints(10.0), "v1")
    assert slow["score"] == pytest.approx(1.0)
    # half the reference's progress but uncomfortable braking: EP 0.5 (ratio) and C 0
    half = score(scene, straight_waypoints(5.0), straight_waypoints(10.0), "v1")
    assert half["ep"] == pytest.approx(0.5, abs=0.02) and half["c"] == 0.0
    assert half["score"] == pytest.approx((5 * half["ep"] + 5) / 12)
    v2 = score(scene, straight_waypoints(5.0), straight_waypoints(10.0), "v2")
    assert v2["score"] == pytest.approx((5 * v2["ep"] + 5 + 2 * v2["lk"] + 2 * v2["hc"] + 2) / 16)
    with pytest.raises(ValueError, match="version"):
        score(scene, straight_waypoints(5.0), straight_waypoints(10.0), "v3")


def test_limits_are_navsims_and_the_logged_drive_keeps_them_at_answer_precision():
    """Limits as in autonomousvision/navsim HEAD (0a380a90) pdm_comfort_metrics.py. The synthetic
    logged drive (the SFT target), written at the answer format's precision (0.1 m, 0.01 rad), keeps them on held-out
    scenes, so comfort is reachable from the prompt alone; 0.5 m of spacing jitter between 0.5 s
    poses (what an imprecise planner writes) is several m/s^2 of acceleration and breaks them."""
    from domains.driving.data import EVAL_SEED, synthetic_driving
    from domains.driving.prompts import format_waypoints, read_waypoints

    limits = (comfort.MAX_ABS_MAG_JERK, comfort.MAX_ABS_LAT_ACCEL, comfort.MAX_LON_ACCEL, comfort.MIN_LON_ACCEL,
              comfort.MAX_ABS_YAW_ACCEL, comfort.MAX_ABS_LON_JERK, comfort.MAX_ABS_YAW_RATE)  # fmt: skip
    assert limits == (8.37, 4.89, 2.40, -4.05, 1.93, 4.13, 0.95)
    kept = []
    for sample in synthetic_driving(n=16, seed=EVAL_SEED):
        scene = Scene.from_dict(sample.target["scene"])
        written = np.array(read_waypoints(format_waypoints(sample.target["waypoints"])))
        kept.append(comfort.is_comfortable(ego_states(written, scene.ego_speed)))
    assert np.mean(kept) >= 0.9
    jitter = straight_waypoints(10.0) + np.array([[0.5 * (-1) ** i, 0.0, 0.0] for i in range(8)])
    assert comfort.is_comfortable(ego_states(jitter, 10.0)) == 0.0


def test_logged_drive_is_safe_but_leaves_progress_to_the_planner():
    """The synthetic data's design (``domains.driving.synthetic``): the logged drive SFT imitates never
    collides or leaves the road, yet on a free road it keeps its speed while the planner proposal
    (PDM-Closed's stand-in, IDM towards the limit) accelerates, so the log's EP falls below 1 there, as
    NAVSIM's human log does (PDMS 94.8); behind a lead both are held back."""
    from domains.driving.data import synthetic_driving

    by_kind: dict[str, list[float]] = {}
    for sample in synthetic_driving(n=24, seed=500):
        scene = Scene.from_dict(sample.target["scene"])
        logged, planner = np.array(sample.target["waypoints"]), np.array(sample.target["reference"])
        result = score(scene, logged, planner)
        assert result["nc"] == result["dac"] == 1.0
        assert sub_metrics(scene, planner)["progress"] >= sub_metrics(scene, logged)["progress"] - 0.1
        by_kind.setdefault(sample.meta["kind"], []).append(result["ep"])
    assert max(by_kind["cruise"]) < 0.95 and np.mean(by_kind["follow"]) > np.mean(by_kind["cruise"])
