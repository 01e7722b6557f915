"""Seeded synthetic driving scenes, their logged drive and planner proposal, and the bird's-eye image a VLA sees.

Four kinds of scene on a three-lane road (two lanes in the ego's direction, one oncoming):
``cruise`` (free road), ``follow`` (a slower lead vehicle), ``stop`` (a stopped vehicle or a
static object ahead in the ego lane) and ``curve`` (the road bends). Every scene has two plans along
the ego lane centreline, both IDM speed profiles (Treiber's Intelligent Driver Model; parameters
chosen here to keep nuPlan's comfort limits):

- the *logged* drive, the demonstration SFT imitates: it holds the ego's current speed, slowing
  for a lead. It stands in for NAVSIM's human log, which scores PDMS 94.8 rather than 100 mostly
  through ego progress;
- the *planner* proposal, the zoo's stand-in for NAVSIM's PDM-Closed (IDM towards the speed
  limit), which EP is normalised against. A drive that imitates the log perfectly therefore
  loses progress wherever the road is free, as a human log does in NAVSIM: the headroom a reward
  can teach and imitation cannot.

The image is drawn in NAVSIM's ego frame turned to face up: the ego (red) near the bottom,
agents as boxes with a yellow line showing 1 s of their motion, so the speed of others is
visible in a single frame; the ego's own speed and the command are in the prompt, as NAVSIM
gives agents the ego status.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from domains.driving.scene import (
    DT,
    EGO_LENGTH,
    EGO_WIDTH,
    HORIZON,
    NUM_WAYPOINTS,
    WAYPOINT_DT,
    Agent,
    Lane,
    Scene,
    box_corners,
)

KINDS = ("cruise", "follow", "stop", "curve")
LANE_WIDTH = 3.5
ROAD_BEHIND, ROAD_AHEAD = 30.0, 120.0  # [m] extent of the lanes
METERS_PER_PIXEL = 0.6  # at 112 px the image shows ~62 m ahead of the ego
# IDM (the zoo's choice): desired gap, time headway, max acceleration, comfortable deceleration
IDM_S0, IDM_T, IDM_A, IDM_B = 4.0, 1.5, 1.2, 2.0
SPEED_LIMIT = 13.9  # [m/s] (50 km/h) on every synthetic road: the planner's IDM target speed
MAX_JERK = 2.0  # [m/s^3] the plans' acceleration changes at most this fast (nuPlan's lon. jerk limit is 4.13)
COLOURS = {"off": (40, 70, 40), "road": (90, 90, 90), "oncoming": (60, 60, 75), "mark": (220, 220, 220),
           "vehicle": (70, 130, 230), "static": (240, 150, 40), "pedestrian": (230, 80, 230),
           "bicycle": (80, 220, 220), "ego": (230, 40, 40), "light": (255, 0, 0), "motion": (250, 230, 60)}  # fmt: skip


def _lane_line(offset: float, curvature: float) -> np.ndarray:
    """A centreline ``offset`` metres left of the ego lane, straight or an arc of ``curvature`` (1/m)."""
    s = np.linspace(-ROAD_BEHIND, ROAD_AHEAD, 76)
    if curvature == 0.0:
        return np.stack([s, np.full_like(s, offset)], axis=1)
    radius = 1.0 / curvature  # signed: > 0 bends left
    r = radius - offset
    angle = np.where(s > 0, s / radius, 0.0)
    x = np.where(s > 0, r * np.sin(angle), s)
    y = np.where(s > 0, radius - r * np.cos(angle), offset)
    return np.stack([x, y], axis=1)


def _along(line: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points and headings at arc lengths ``s`` measured from the point nearest the origin."""
    seg = np.diff(line, axis=0)
    cum = np.concatenate([[0.0], np.cumsum(np.linalg.norm(seg, axis=1))])
    s0 = np.interp(0.0, line[:, 0], cum)  # lanes run along +x near the ego
    xy = np.stack([np.interp(s0 + s, cum, line[:, i]) for i in range(2)], axis=1)
    heading = np.interp(s0 + s, cum[:-1] + np.diff(cum) / 2, np.unwrap(np.arctan2(seg[:, 1], seg[:, 0])))
    return xy, heading


def idm_plan(speed: float, lead_gap: float | None, lead_speed: float, line: np.ndarray, desired: float) -> np.ndarray:
    """8 poses of IDM towards the ``desired`` speed along ``line``, behind a lead ``lead_gap`` metres ahead
    (bumper to bumper)."""
    s, v, a, positions = 0.0, speed, 0.0, []
    desired = max(desired, 1.0)
    for step in range(round(HORIZON / DT)):
        t = step * DT
        accel = IDM_A * (1 - (v / desired) ** 4)
        if lead_gap is not None:
            gap = max(lead_gap + lead_speed * t - s, 0.1)
            wanted = IDM_S0 + max(0.0, v * IDM_T + v * (v - lead_speed) / (2 * np.sqrt(IDM_A * IDM_B)))
            accel -= IDM_A * (wanted / gap) ** 2
        accel = float(np.clip(accel, -3.0, 2.0))
        a = float(np.clip(accel, a - MAX_JERK * DT, a + MAX_JERK * DT))
        v_next = max(0.0, v + a * DT)
        s += (v + v_next) / 2 * DT
        v = v_next
        positions.append(s)
    every = round(WAYPOINT_DT / DT)
    xy, heading = _along(line, np.array(positions[every - 1 :: every]))
    return np.column_stack([xy, heading])[:NUM_WAYPOINTS]


def make_scene(seed: int, kind: str | None = None) -> tuple[Scene, np.ndarray, np.ndarray]:
    """Scene ``seed`` (of ``kind``, else drawn from :data:`KINDS`), its logged drive and its planner
    proposal, both ``(8, 3)`` poses."""
    rng = np.random.default_rng(seed)
    kind = kind or KINDS[int(rng.integers(len(KINDS)))]
    if kind not in KINDS:
        raise ValueError(f"unknown scene kind {kind!r}; choose one of {KINDS}")
    curvature = float(rng.choice([-1, 1]) * rng.uniform(1 / 80, 1 / 40)) if kind == "curve" else 0.0
    ego_line = _lane_line(0.0, curvature)
    lanes = (Lane("ego", ego_line, LANE_WIDTH, True), Lane("left", _lane_line(LANE_WIDTH, curvature), LANE_WIDTH, True),
             Lane("oncoming", _lane_line(2 * LANE_WIDTH, curvature), LANE_WIDTH, False))  # fmt: skip
    speed = float(rng.uniform(5.0, 12.0))
    agents, lead_gap, lead_speed = [], None, 0.0
    if kind in ("follow", "stop"):
        gap = float(rng.uniform(40.0, 60.0) if kind == "stop" else rng.uniform(15.0, 30.0))
        lead_speed = 0.0 if kind == "stop" else float(rng.uniform(0.3, 0.7) * speed)
        static = kind == "stop" and rng.random() < 0.3
        length = 1.5 if static else 4.5
        centre = EGO_LENGTH - 1.461 + gap + length / 2  # rear axle 0: ego front at 3.715 m
        agents.append(Agent("lead", centre, 0.0, 0.0, length, 1.5 if static else 2.0, lead_speed, 0.0,
                            "static" if static else "vehicle"))  # fmt: skip
        lead_gap = gap
    for i in range(0 if kind == "curve" else int(rng.integers(0, 3))):  # traffic in the straight lanes beside
        s = float(rng.uniform(-10, 60))
        lane = lanes[1 + i % 2]
        (xy,), (heading,) = _along(lane.centerline, np.array([s]))
        v = float(rng.uniform(4, 12))
        if not lane.on_route:
            heading += np.pi
        agents.append(Agent(f"car{i}", float(xy[0]), float(xy[1]), float(heading), 4.5, 2.0,
                            float(v * np.cos(heading)), float(v * np.sin(heading))))  # fmt: skip
    command = "go straight" if curvature == 0 else ("turn left" if curvature > 0 else "turn right")
    scene = Scene(lanes, tuple(agents), (), speed, ego_line, command)
    logged = idm_plan(speed, lead_gap, lead_speed, ego_line, desired=speed)
    return scene, logged, idm_plan(speed, lead_gap, lead_speed, ego_line, desired=SPEED_LIMIT)


# --- rendering -----------------------------------------------------------------------------------


def _to_px(points: np.ndarray, size: int, scale: float) -> list[tuple[float, float]]:
    """Ego frame (x forward, y left) to pixels: forward is up, the ego's rear axle 12 % above the bottom."""
    cx, cy = size / 2, size * 0.88
    return [(cx - y / scale, cy - x / scale) for x, y in np.asarray(points).reshape(-1, 2)]


def render(scene: Scene, size: int = 112, trajectories: dict[str, np.ndarray] | None = None) -> Image.Image:
    """The bird's-eye image of ``scene``; ``trajectories`` (name -> ``(8, 3)``) are drawn on top,
    coloured in order light red, cyan, magenta, white, for the evaluation PNG."""
    scale = METERS_PER_PIXEL * 112 / size
    image = Image.new("RGB", (size, size), COLOURS["off"])
    draw = ImageDraw.Draw(image)
    lane_px = max(1, round(LANE_WIDTH / scale))
    for lane in scene.lanes:
        draw.line(_to_px(lane.centerline, size, scale), fill=COLOURS["road" if lane.on_route else "oncoming"],
                  width=lane_px)  # fmt: skip
    for lane in scene.lanes[:-1]:  # markings between lanes
        edge = lane.centerline + _normal(lane.centerline) * LANE_WIDTH / 2
        draw.line(_to_px(edge, size, scale), fill=COLOURS["mark"], width=1)
    for light in scene.red_lights:
        draw.polygon(_to_px(light, size, scale), fill=COLOURS["light"])
    for agent in scene.agents:
        draw.polygon(_to_px(agent.polygon_at(0.0), size, scale), fill=COLOURS.get(agent.kind, COLOURS["vehicle"]))
        if agent.speed > 0.1:
            draw.line(_to_px(np.array([agent.pose_at(0.0)[:2], agent.pose_at(1.0)[:2]]), size, scale),
                      fill=COLOURS["motion"], width=1)  # fmt: skip
    draw.polygon(_to_px(box_corners(1.461, 0.0, 0.0, EGO_LENGTH, EGO_WIDTH), size, scale), fill=COLOURS["ego"])
    palette = [(255, 120, 120), (0, 255, 255), (255, 0, 255), (255, 255, 255)]
    for i, (_, wps) in enumerate((trajectories or {}).items()):
        points = np.vstack([[0.0, 0.0], np.asarray(wps)[:, :2]])
        draw.line(_to_px(points, size, scale), fill=palette[i % len(palette)], width=max(1, size // 150))
        for px, py in _to_px(points[1:], size, scale):
            r = max(1, size // 120)
            draw.ellipse((px - r, py - r, px + r, py + r), fill=palette[i % len(palette)])
    return image


def _normal(line: np.ndarray) -> np.ndarray:
    d = np.gradient(line, axis=0)
    d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-9)
    return np.stack([-d[:, 1], d[:, 0]], axis=1)
