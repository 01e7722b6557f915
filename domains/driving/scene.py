"""Synthetic driving scenes in the ego frame, and the plain geometry the sub-metrics need.

A scene is what NAVSIM's metric cache holds, reduced to simple shapes: lanes as centreline
polylines with a width (NAVSIM: nuPlan map polygons of lanes, roadblocks, intersections,
carparks), agents as boxes moving at constant velocity (NAVSIM: logged or reactive agent tracks),
red lights as polygons. The frame is NAVSIM's ego frame: x forward, y left, heading
counter-clockwise, origin at the rear axle at t = 0. Scenes are plain JSON-able dicts so they
travel through TRL's dataset columns as a sample's ``target``.

Polygons here are convex (boxes), so intersection is the separating-axis test; NAVSIM uses
shapely's STRtree on the map's arbitrary polygons.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

# nuPlan's get_pacifica_parameters(), the ego vehicle NAVSIM scores with.
EGO_LENGTH = 5.176
EGO_WIDTH = 2.297
REAR_AXLE_TO_CENTER = 1.461
DT = 0.1  # [s] NAVSIM's scoring resolution (proposal_sampling 40 poses at 0.1 s)
HORIZON = 4.0  # [s] the agent's trajectory: 8 poses at 0.5 s (TrajectorySampling(4, 0.5))
WAYPOINT_DT = 0.5
NUM_WAYPOINTS = 8


@dataclass(frozen=True)
class Lane:
    """A lane: centreline polyline ``(N, 2)`` and width; ``on_route`` lanes count for DDC and progress."""

    id: str
    centerline: np.ndarray
    width: float = 3.5
    on_route: bool = True


@dataclass(frozen=True)
class Agent:
    """A box at ``(x, y, heading)`` at t = 0 moving at constant ``(vx, vy)``.

    ``kind``: ``vehicle``, ``pedestrian``, ``bicycle`` (nuPlan AGENT_TYPES: a collision scores NC 0)
    or ``static`` (a static object: NC 0.5).
    """

    id: str
    x: float
    y: float
    heading: float
    length: float = 4.5
    width: float = 2.0
    vx: float = 0.0
    vy: float = 0.0
    kind: str = "vehicle"

    @property
    def speed(self) -> float:
        return float(np.hypot(self.vx, self.vy))

    def pose_at(self, t: ArrayLike) -> tuple[Any, Any, float]:
        """``(x, y, heading)`` at time ``t`` (x and y are arrays for an array of times)."""
        t = np.asarray(t, dtype=float)
        return self.x + self.vx * t, self.y + self.vy * t, self.heading

    def polygon_at(self, t: ArrayLike) -> np.ndarray:
        """The box's corners at time ``t`` (``(4, 2)``, or ``(..., 4, 2)`` for an array of times)."""
        return box_corners(*self.pose_at(t), self.length, self.width)


@dataclass(frozen=True)
class Scene:
    """Lanes, agents, red-light polygons, the ego's speed and the route centreline (progress, LK)."""

    lanes: tuple[Lane, ...]
    agents: tuple[Agent, ...] = ()
    red_lights: tuple[np.ndarray, ...] = ()
    ego_speed: float = 0.0
    route: np.ndarray = field(default_factory=lambda: np.array([[0.0, 0.0], [100.0, 0.0]]))
    command: str = "go straight"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scene:
        """Read a scene dict (a sample's ``target["scene"]``); a missing key is a named error."""
        try:
            lanes = tuple(Lane(str(la["id"]), np.asarray(la["centerline"], dtype=float), float(la.get("width", 3.5)),
                               bool(la.get("on_route", True))) for la in data["lanes"])  # fmt: skip
            agents = tuple(Agent(**{k: (v if k in ("id", "kind") else float(v)) for k, v in a.items()})
                           for a in data.get("agents", []))  # fmt: skip
            lights = tuple(np.asarray(p, dtype=float).reshape(-1, 2) for p in data.get("red_lights", []))
            return cls(lanes, agents, lights, float(data["ego_speed"]), np.asarray(data["route"], dtype=float),
                       str(data.get("command", "go straight")))  # fmt: skip
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(
                f"not a driving scene dict ({err!r}); expected keys lanes, agents, ego_speed, route"
            ) from err

    @cached_property
    def key(self) -> bytes:
        """The scene's content as bytes: equal scenes read from equal dicts share it (a memo key)."""
        return pickle.dumps((self.lanes, self.agents, self.red_lights, self.ego_speed, self.route, self.command))

    def to_dict(self) -> dict[str, Any]:
        return {
            "lanes": [
                {"id": la.id, "centerline": la.centerline.round(3).tolist(), "width": la.width, "on_route": la.on_route}
                for la in self.lanes
            ],
            "agents": [
                {k: getattr(a, k) for k in ("id", "x", "y", "heading", "length", "width", "vx", "vy", "kind")}
                for a in self.agents
            ],
            "red_lights": [p.round(3).tolist() for p in self.red_lights],
            "ego_speed": self.ego_speed,
            "route": self.route.round(3).tolist(),
            "command": self.command,
        }


# --- geometry ------------------------------------------------------------------------------------


def box_corners(x: ArrayLike, y: ArrayLike, heading: ArrayLike, length: float, width: float) -> np.ndarray:
    """Corners ``(..., 4, 2)`` of boxes centred at ``(x, y)`` (scalars or arrays that broadcast: one heading may
    serve many centres), in NAVSIM's BBCoordsIndex order: front-left, rear-left, rear-right, front-right
    (corners 0 and 3 are the front bumper)."""
    x, y, heading = (np.asarray(v, dtype=float)[..., None] for v in (x, y, heading))
    c, s = np.cos(heading), np.sin(heading)
    lon = np.array([length / 2, -length / 2, -length / 2, length / 2])
    lat = np.array([width / 2, width / 2, -width / 2, -width / 2])
    return np.stack([lon * c - lat * s + x, lon * s + lat * c + y], axis=-1)


def convex_intersects_many(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether convex polygons ``a[i]`` and ``b[i]`` touch, for stacks ``(..., K, 2)`` and ``(..., M, 2)`` whose
    leading shapes broadcast (a polygon may be a segment, two points): the separating-axis test, every pair at once.
    The scorer's hot path: a trajectory meets every agent at 41 steps and TTC's four look-aheads."""
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a, b = np.broadcast_to(a, lead + a.shape[-2:]), np.broadcast_to(b, lead + b.shape[-2:])
    axes = []
    for poly in (a, b):
        edges = np.roll(poly, -1, axis=-2) - poly
        axes.append(np.stack([-edges[..., 1], edges[..., 0]], axis=-1))
    axes = np.concatenate(axes, axis=-2)  # (..., K + M, 2)
    pa = a[..., None, :, 0] * axes[..., :, None, 0] + a[..., None, :, 1] * axes[..., :, None, 1]  # (..., axes, K)
    pb = b[..., None, :, 0] * axes[..., :, None, 0] + b[..., None, :, 1] * axes[..., :, None, 1]
    separated = (pa.max(axis=-1) < pb.min(axis=-1)) | (pb.max(axis=-1) < pa.min(axis=-1))
    return ~(separated & axes.any(axis=-1)).any(axis=-1)  # a zero-length edge gives no axis


def convex_intersects(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two convex polygons (or a segment, two points) touch: :func:`convex_intersects_many` of one pair."""
    return bool(convex_intersects_many(np.asarray(a, dtype=float), np.asarray(b, dtype=float)))


def project_many(polyline: np.ndarray, points: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each of ``points`` ``(P, 2)``: ``(s, distance, within)``, the arc length of the closest point of
    ``polyline`` to it, the distance to that point, and whether that point lies strictly between the
    polyline's ends (the closest segment is the first of equally close ones)."""
    p = np.asarray(points, dtype=float).reshape(-1, 1, 2)
    starts, ends = polyline[:-1], polyline[1:]
    seg = ends - starts
    lengths = np.linalg.norm(seg, axis=1)
    t = np.clip(((p - starts) * seg).sum(axis=-1) / np.maximum(lengths**2, 1e-12), 0.0, 1.0)  # (P, S)
    dist = np.linalg.norm(starts + seg * t[..., None] - p, axis=-1)
    i = np.argmin(dist, axis=1)
    rows = np.arange(len(i))
    t_i = t[rows, i]
    s = np.concatenate([[0.0], np.cumsum(lengths)])[i] + t_i * lengths[i]
    within = ~(((i == 0) & (t_i <= 0.0)) | ((i == len(seg) - 1) & (t_i >= 1.0)))
    return s, dist[rows, i], within


def in_lane(lane: Lane, points: ArrayLike) -> np.ndarray:
    """Whether each of ``points`` ``(P, 2)`` lies on ``lane``'s surface (within half its width, between its ends)."""
    _, dist, within = project_many(lane.centerline, points)
    return within & (dist <= lane.width / 2)


# --- ego states ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class EgoStates:
    """The ego over the horizon at :data:`DT`: rear-axle poses, centre positions, local-frame
    velocity and acceleration (lon, lat), all shaped ``(T, ...)`` with ``T = 41``."""

    rear_axle: np.ndarray  # (T, 3) x, y, heading
    center: np.ndarray  # (T, 2)
    velocity: np.ndarray  # (T, 2) global vx, vy
    accel_local: np.ndarray  # (T, 2) longitudinal, lateral

    @property
    def speed(self) -> np.ndarray:
        return np.linalg.norm(self.velocity, axis=1)

    def window(self, start: int, stop: int | None) -> EgoStates:
        """The states of steps ``start:stop``."""
        sl = slice(start, stop)
        return EgoStates(self.rear_axle[sl], self.center[sl], self.velocity[sl], self.accel_local[sl])

    def corners(self, t: int | slice | np.ndarray = slice(None)) -> np.ndarray:
        """The ego's box corners ``(4, 2)`` at step ``t``, or ``(T, 4, 2)`` for a slice or an index array (every
        step by default)."""
        return box_corners(self.center[t, 0], self.center[t, 1], self.rear_axle[t, 2], EGO_LENGTH, EGO_WIDTH)


def ego_states(waypoints: np.ndarray, ego_speed: float) -> EgoStates:
    """Roll the agent's 8 rear-axle poses (0.5 s apart) out from the current pose at 0.1 s.

    NAVSIM interpolates the poses (``InterpolatedTrajectory``) and tracks them with an LQR
    controller on a kinematic bicycle model (``PDMSimulator``), which smooths the corners between
    poses. Here a cubic spline through the poses stands in for that tracker (the zoo's choice):
    it starts at the scene's ego speed along heading 0, so velocity and acceleration are the
    spline's derivatives instead of impulses at every pose.
    """
    from scipy.interpolate import CubicSpline

    waypoints = np.asarray(waypoints, dtype=float).reshape(NUM_WAYPOINTS, 3)
    poses = np.vstack([[0.0, 0.0, 0.0], waypoints])
    poses[:, 2] = np.unwrap(poses[:, 2])
    knots = np.arange(NUM_WAYPOINTS + 1) * WAYPOINT_DT
    times = np.arange(round(HORIZON / DT) + 1) * DT
    x = CubicSpline(knots, poses[:, 0], bc_type=((1, ego_speed), (2, 0.0)))
    y = CubicSpline(knots, poses[:, 1], bc_type=((1, 0.0), (2, 0.0)))
    heading = np.interp(times, knots, poses[:, 2])
    rear = np.stack([x(times), y(times), heading], axis=1)
    center = rear[:, :2] + REAR_AXLE_TO_CENTER * np.stack([np.cos(heading), np.sin(heading)], axis=1)
    velocity = np.stack([x(times, 1), y(times, 1)], axis=1)
    accel = np.stack([x(times, 2), y(times, 2)], axis=1)
    c, s = np.cos(heading), np.sin(heading)
    accel_local = np.stack([c * accel[:, 0] + s * accel[:, 1], -s * accel[:, 0] + c * accel[:, 1]], axis=1)
    return EgoStates(rear, center, velocity, accel_local)
