"""PDM sub-metrics from simple geometry on a synthetic :class:`~.scene.Scene`, and the scores.

Each function mirrors one ``PDMScorer._calculate_*`` of ``autonomousvision/navsim`` (HEAD
0a380a90, ``navsim/planning/simulation/planner/pdm_planner/scoring/pdm_scorer.py``), with the
same thresholds. **Caveat**: NAVSIM evaluates them on nuPlan maps (lane, lane-connector,
roadblock, intersection and carpark polygons), logged or reactive agent tracks and an LQR-tracked
bicycle-model rollout. Here lanes are centreline + width, agents move at constant velocity, there
are no intersections (so nothing is exempted from DDC/LK/TTC for being in one), the trajectory is
scored as interpolated, and history comfort is padded with a constant-speed past instead of the
logged one. The numbers are PDMS-*style*: the aggregation is NAVSIM's, the geometry is not nuPlan's.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from domains.driving import comfort, pdms
from domains.driving.scene import (
    DT,
    NUM_WAYPOINTS,
    REAR_AXLE_TO_CENTER,
    WAYPOINT_DT,
    EgoStates,
    Scene,
    convex_intersects,
    convex_intersects_many,
    ego_states,
    in_lane,
    project_many,
)

AGENT_TYPES = ("vehicle", "pedestrian", "bicycle")  # nuPlan AGENT_TYPES: an at-fault hit scores NC 0, else 0.5
EGO_STOPPED_SPEED = 5e-2  # [m/s] get_collision_type's stopped_speed_threshold
TRACK_STOPPED_SPEED = 5e-2  # [m/s] is_track_stopped, as NAVSIM's scorer utils call it
TTC_STOPPED_SPEED = 5e-3  # [m/s] PDMScorerConfig.stopped_speed_threshold
TTC_OFFSETS = (0, 3, 6, 9)  # steps of 0.1 s: np.arange(0, int(1.0 * 10), 3)
DDC_HORIZON = 1.0  # [s]
DDC_COMPLIANCE, DDC_VIOLATION = 2.0, 6.0  # [m]
LK_DEVIATION, LK_WINDOW = 0.5, 2.0  # [m], [s]
HISTORY_STEPS = 20  # 2 s of constant-speed past for history comfort (NAVSIM pads with the logged past)


MEMO_SIZE = 4096
_MEMO: OrderedDict[tuple[bytes, bytes], dict[str, float]] = OrderedDict()
_MEMO_LOCK = threading.Lock()


@dataclass(frozen=True)
class Areas:
    """Per step: ego in several lanes at once, off the drivable area, centre outside on-route lanes."""

    multiple_lanes: np.ndarray
    non_drivable: np.ndarray
    oncoming: np.ndarray


def ego_areas(scene: Scene, states: EgoStates) -> Areas:
    """``_calculate_ego_area``: corner-in-lane counts decide "multiple lanes" and "non-drivable"."""
    corners = states.corners()  # (T, 4, 2)
    hits = np.stack([in_lane(lane, corners.reshape(-1, 2)).reshape(corners.shape[:2]) for lane in scene.lanes])
    per_lane = hits.sum(axis=2)  # (lanes, T): corners of the ego in each lane
    multiple = ((per_lane > 0).sum(axis=0) > 1) & ~(per_lane == 4).any(axis=0)
    off = hits.any(axis=0).sum(axis=1) < 4
    on_route = [in_lane(lane, states.center) for lane in scene.lanes if lane.on_route]
    oncoming = ~np.any(on_route, axis=0) if on_route else np.ones(len(states.center), bool)
    return Areas(multiple, off, oncoming)


def agent_boxes(scene: Scene, times: np.ndarray) -> np.ndarray:
    """Every agent's corners at ``times``: ``(agents, *times.shape, 4, 2)`` (the scene has at least one agent)."""
    return np.stack([agent.polygon_at(times) for agent in scene.agents])


def _angle_to(pose: np.ndarray, point: tuple[float, float]) -> float:
    vector = np.asarray(point) - pose[:2]
    norm = np.linalg.norm(vector)
    if norm < 1e-9:
        return 0.0
    return float(np.arccos(np.clip(vector @ [np.cos(pose[2]), np.sin(pose[2])] / norm, -1.0, 1.0)))


def is_ahead(pose: np.ndarray, point: tuple[float, float]) -> bool:
    return _angle_to(pose, point) < np.deg2rad(30.0)  # nuPlan idm utils is_agent_ahead


def is_behind(pose: np.ndarray, point: tuple[float, float]) -> bool:
    return _angle_to(pose, point) > np.deg2rad(150.0)  # nuPlan idm utils is_agent_behind


def no_at_fault_collision(scene: Scene, states: EgoStates, areas: Areas) -> tuple[float, set[str]]:
    """``_calculate_no_at_fault_collision`` with ``get_collision_type``: at fault when the track is
    stopped, the ego's front bumper hits it, or a lateral hit happens while the ego straddles lanes
    or leaves the road; 0 for agents, 0.5 for static objects. Returns the score and the ids of
    tracks hit without fault (TTC then ignores them, as NAVSIM's collided-track list does)."""
    if not scene.agents:
        return 1.0, set()
    ego = states.corners()
    boxes = agent_boxes(scene, np.arange(len(ego)) * DT)  # (agents, T, 4, 2)
    touching = convex_intersects_many(ego, boxes)  # (agents, T)
    score, ignored = 1.0, {a.id for a, hit in zip(scene.agents, touching[:, 0], strict=True) if hit}
    for t, a in sorted(zip(*np.nonzero(touching.T), strict=True)):  # in time order, as the scorer steps
        agent, poly = scene.agents[a], boxes[a, t]
        if agent.id in ignored:
            continue
        if states.speed[t] <= EGO_STOPPED_SPEED:
            kind = "stopped_ego"
        elif agent.speed <= TRACK_STOPPED_SPEED:
            kind = "stopped_track"
        elif is_behind(states.rear_axle[t], tuple(poly.mean(axis=0))):
            kind = "active_rear"
        elif convex_intersects(ego[t, [0, 3]], poly):
            kind = "active_front"
        else:
            kind = "active_lateral"
        straddling = areas.multiple_lanes[t] or areas.non_drivable[t]
        if kind in ("stopped_track", "active_front") or (straddling and kind == "active_lateral"):
            score = min(score, 0.0 if agent.kind in AGENT_TYPES else 0.5)
        else:
            ignored.add(agent.id)
    return score, ignored


def drivable_area_compliance(areas: Areas) -> float:
    return 0.0 if areas.non_drivable.any() else 1.0


def driving_direction_compliance(states: EgoStates, areas: Areas) -> float:
    """``_calculate_driving_direction_compliance``: metres driven outside on-route lanes within any
    1 s window; < 2 m → 1, < 6 m → 0.5, else 0."""
    step = np.zeros(len(states.center))
    step[1:] = np.linalg.norm(np.diff(states.center, axis=0), axis=1)
    step[~areas.oncoming] = 0.0
    horizon = int(DDC_HORIZON / DT)
    worst = max(step[max(0, t - horizon) : t + 1].sum() for t in range(len(step)))
    return 1.0 if worst < DDC_COMPLIANCE else 0.5 if worst < DDC_VIOLATION else 0.0


def traffic_light_compliance(scene: Scene, states: EgoStates) -> float:
    ego = states.corners()
    return 0.0 if any(convex_intersects_many(ego, light).any() for light in scene.red_lights) else 1.0


def progress(scene: Scene, states: EgoStates) -> float:
    """Metres along the route centreline from the first to the last centre, clipped at 0."""
    (start, end), _, _ = project_many(scene.route, states.center[[0, -1]])
    return max(0.0, float(end - start))


def time_to_collision(scene: Scene, states: EgoStates, areas: Areas, ignored: set[str]) -> float:
    """``_calculate_ttc``: the ego box projected 0, 0.3, 0.6, 0.9 s ahead at constant velocity must
    not meet an agent ahead (or one not behind while the ego straddles lanes or leaves the road)."""
    if not scene.agents:
        return 1.0
    ignored = set(ignored)
    steps = np.arange(len(states.center) - max(TTC_OFFSETS))
    offsets = np.array(TTC_OFFSETS)
    heading = states.rear_axle[steps, 2]
    shift = states.speed[steps, None] * np.stack([np.cos(heading), np.sin(heading)], axis=1)  # (T, 2)
    ego = states.corners(steps)[:, None] + (shift[:, None] * offsets[:, None] * DT)[:, :, None]  # (T, offsets, 4, 2)
    boxes = agent_boxes(scene, (steps[:, None] + offsets) * DT)  # (agents, T, offsets, 4, 2)
    touching = convex_intersects_many(ego, boxes) & (states.speed[steps] >= TTC_STOPPED_SPEED)[:, None]
    for t, o, a in sorted(zip(*np.nonzero(touching.transpose(1, 2, 0)), strict=True)):  # the scorer's loop order
        agent, poly = scene.agents[a], boxes[a, t, o]
        if agent.id in ignored:
            continue
        centroid = tuple(poly.mean(axis=0))
        straddling = areas.multiple_lanes[t] or areas.non_drivable[t]
        if is_ahead(states.rear_axle[t], centroid) or (straddling and not is_behind(states.rear_axle[t], centroid)):
            return 0.0
        ignored.add(agent.id)
    return 1.0


def lane_keeping(scene: Scene, states: EgoStates) -> float:
    """``_calculate_lane_keeping``: 0 once the centre stays > 0.5 m off the route centreline for 2 s."""
    required, run = int(np.ceil(LK_WINDOW / DT)), 0
    for off_centre in project_many(scene.route, states.center)[1] > LK_DEVIATION:
        run = run + 1 if off_centre else 0
        if run >= required:
            return 0.0
    return 1.0


def history_comfort(states: EgoStates, ego_speed: float) -> float:
    """``_calculate_history_comfort``: comfort of the trajectory padded with the past (here a
    constant-speed straight past at the current speed)."""
    past_t = -np.arange(HISTORY_STEPS, 0, -1) * DT
    past_rear = np.stack([ego_speed * past_t, np.zeros_like(past_t), np.zeros_like(past_t)], axis=1)
    past_center = past_rear[:, :2] + [[REAR_AXLE_TO_CENTER, 0.0]]
    padded = EgoStates(
        np.vstack([past_rear, states.rear_axle]), np.vstack([past_center, states.center]),
        np.vstack([np.tile([ego_speed, 0.0], (HISTORY_STEPS, 1)), states.velocity]),
        np.vstack([np.zeros((HISTORY_STEPS, 2)), states.accel_local]),
    )  # fmt: skip
    return comfort.is_comfortable(padded)


def sub_metrics(scene: Scene, waypoints: np.ndarray) -> dict[str, float]:
    """Every sub-metric of one trajectory (raw progress in metres, not yet normalised), remembered for the
    last :data:`MEMO_SIZE` (scene, trajectory) pairs: a GRPO group scores eight answers against one
    scene's reference, and the evaluation scores every answer under v1 and v2."""
    key = (scene.key, np.asarray(waypoints, dtype=float).tobytes())
    with _MEMO_LOCK:  # a reward may score on a background thread (zoo.engines.vlm.overlap) while another scores
        if key in _MEMO:
            _MEMO.move_to_end(key)
            return dict(_MEMO[key])
    out = _compute_sub_metrics(scene, waypoints)
    with _MEMO_LOCK:
        _MEMO[key] = out
        if len(_MEMO) > MEMO_SIZE:
            _MEMO.popitem(last=False)
    return dict(out)


def _compute_sub_metrics(scene: Scene, waypoints: np.ndarray) -> dict[str, float]:
    states = ego_states(waypoints, scene.ego_speed)
    areas = ego_areas(scene, states)
    nc, ignored = no_at_fault_collision(scene, states, areas)
    return {
        "nc": nc,
        "dac": drivable_area_compliance(areas),
        "ddc": driving_direction_compliance(states, areas),
        "tlc": traffic_light_compliance(scene, states),
        "progress": progress(scene, states),
        "ttc": time_to_collision(scene, states, areas, ignored),
        "lk": lane_keeping(scene, states),
        "c": comfort.is_comfortable(states),
        "hc": history_comfort(states, scene.ego_speed),
    }


def score(scene: Scene, waypoints: np.ndarray, reference: np.ndarray, version: str = "v1") -> dict[str, float]:
    """Score ``waypoints`` in ``scene`` with ``reference`` (the scene's planner proposal, standing in for
    PDM-Closed) as the other proposal EP is normalised against, as ``pdm_score.py`` does.

    Returns the agent's sub-metrics, ``ep`` and ``score`` (v1 PDMS, or v2 EPDMS with EC = 1:
    a single frame has no previous trajectory to compare with).
    """
    if version not in ("v1", "v2"):
        raise ValueError(f"version must be 'v1' (PDMS) or 'v2' (EPDMS), got {version!r}")
    rows = [sub_metrics(scene, reference), sub_metrics(scene, waypoints)]
    col = {k: np.array([r[k] for r in rows]) for k in rows[0]}
    agent = dict(rows[1])
    if version == "v1":
        out = pdms.pdms_v1(col["nc"], col["dac"], col["progress"], col["ttc"], col["c"], col["ddc"])
        return agent | {"ep": float(out["ep"][1]), "score": float(out["score"][1])}
    row = pdms.epdms_proposals(col["nc"], col["dac"], col["ddc"], col["tlc"], col["progress"], col["ttc"],
                               col["lk"], col["hc"])[1]  # fmt: skip
    return agent | {"ep": float(row.ep), "score": float(row.score())}


def straight_waypoints(speed: float, lateral: float = 0.0) -> np.ndarray:
    """Constant-speed straight poses (x, y, heading) at 0.5 s, ``lateral`` metres to the left."""
    t = np.arange(1, NUM_WAYPOINTS + 1) * WAYPOINT_DT
    return np.stack([speed * t, np.full_like(t, lateral), np.zeros_like(t)], axis=1)
