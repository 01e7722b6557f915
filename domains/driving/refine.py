"""ReflectDrive-style inference-time refinement: flag unsafe waypoints, search a safe anchor,
regenerate the rest of the trajectory from it.

ReflectDrive (pixeli99/ReflectDrive, README only; no code released) describes two stages: an
external safety oracle flags unsafe trajectory points, a local search in the discretised action
space finds a "safe anchor", and diffusion inpainting regenerates the trajectory around it. The
oracle, the search and the regeneration are unpublished, so everything below is the zoo's own
reading of that description, for an autoregressive VLM:

* oracle: a waypoint is unsafe when the ego box there meets an agent (at that time) or leaves the
  drivable area. It reads the scene's ground truth, like ReflectDrive's privileged-oracle row.
* anchor: the first unsafe waypoint is moved on a 0.5 m grid (at most 2 m) to the nearest safe
  cell, nearer the ego first along x (slowing down is preferred to swerving at equal distance).
* regeneration: the model continues its answer from the waypoints before the anchor plus the
  anchor, written into the assistant turn (inpainting's counterpart for left-to-right decoding);
  repeated up to ``rounds`` times while a waypoint is still unsafe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from domains.driving.scene import EGO_LENGTH, EGO_WIDTH, REAR_AXLE_TO_CENTER, WAYPOINT_DT, Scene, box_corners, in_lane
from domains.driving.scene import convex_intersects as _intersects

GRID = 0.5  # [m]
RADIUS = 2.0  # [m]

Regenerate = Callable[[list[list[float]]], "list[list[float]] | None"]


def unsafe_waypoints(scene: Scene, waypoints: Sequence[Sequence[float]]) -> list[int]:
    """Indices (0-based) of the waypoints the oracle flags."""
    flagged = []
    for i, (x, y, h) in enumerate(waypoints):
        if not _safe(scene, i, x, y, h):
            flagged.append(i)
    return flagged


def _safe(scene: Scene, index: int, x: float, y: float, h: float) -> bool:
    t = (index + 1) * WAYPOINT_DT
    cx, cy = x + REAR_AXLE_TO_CENTER * np.cos(h), y + REAR_AXLE_TO_CENTER * np.sin(h)
    ego = box_corners(cx, cy, h, EGO_LENGTH, EGO_WIDTH)
    if any(_intersects(ego, agent.polygon_at(t)) for agent in scene.agents):
        return False
    return all(any(in_lane(lane, corner) for lane in scene.lanes) for corner in ego)


def safe_anchor(scene: Scene, index: int, pose: Sequence[float]) -> list[float] | None:
    """The nearest safe grid cell around ``pose`` (waypoint ``index``), or ``None`` within :data:`RADIUS`."""
    x, y, h = pose
    steps = np.arange(-RADIUS, RADIUS + GRID / 2, GRID)
    cells = sorted(((dx, dy) for dx in steps for dy in steps if np.hypot(dx, dy) <= RADIUS),
                   key=lambda c: (np.hypot(*c), abs(c[1]), c[0]))  # fmt: skip
    for dx, dy in cells:
        if _safe(scene, index, x + dx, y + dy, h):
            return [float(x + dx), float(y + dy), float(h)]
    return None


@dataclass
class Refinement:
    """What refinement did: the final waypoints, the flagged indices per round and the anchors."""

    waypoints: list[list[float]]
    flagged: list[list[int]] = field(default_factory=list)
    anchors: list[list[float]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.anchors)


def refine(scene: Scene, waypoints: Sequence[Sequence[float]], regenerate: Regenerate, rounds: int = 2) -> Refinement:
    """Refine ``waypoints`` in ``scene``; ``regenerate(prefix)`` returns a full 8-pose trajectory that
    starts with ``prefix`` (or ``None`` when the model's continuation does not parse)."""
    current = [list(map(float, w)) for w in waypoints]
    out = Refinement(current)
    for _ in range(rounds):
        flagged = unsafe_waypoints(scene, current)
        out.flagged.append(flagged)
        if not flagged:
            break
        first = flagged[0]
        anchor = safe_anchor(scene, first, current[first])
        if anchor is None:
            break
        out.anchors.append(anchor)
        proposal = regenerate([*current[:first], anchor])
        if proposal is None:
            break
        current = [list(map(float, w)) for w in proposal]
        out.waypoints = current
    return out
