"""A discrete action vocabulary for the driving VLA: each 0.5-s step of the plan is two tokens.

AutoVLA (arXiv 2506.13757) and ReflectDrive write a trajectory as tokens of an action codebook added to
the language model's vocabulary, so that one sampled token is one motion choice rather than one digit
of a coordinate. This codebook is the zoo's own, not either paper's (AutoVLA clusters 2,048 motion
primitives from real driving logs; ReflectDrive's is unpublished): a step is an arc of the unicycle
model, written as

* ``<dN>``: the distance travelled in the 0.5 s, ``N`` decimetres (0 .. 8.0 m, so at most 16 m/s);
* ``<cM>``: the arc's curvature, ``M`` thousandths of 1/m (-0.030 .. 0.030, radius 33 m and up;
  positive bends left, as the ego frame's heading turns).

Eight steps (16 tokens) roll out from the ego pose into NAVSIM's 8 poses ``(x, y, heading)``; every
decoded plan is kinematically smooth within a step. A plan that is not exactly representable (a lane
change, a plan from another format) is encoded greedily with error feedback: each step takes the token
pair whose end pose is nearest the target pose from the pose the previous tokens really reached, so the
rounding error does not accumulate over the 4 s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from domains.driving.scene import NUM_WAYPOINTS
from rewards.parsing import ParseError
from zoo.data import Sample

DISTANCE_STEP = 0.1  # [m] per 0.5 s: 0.2 m/s of speed
CURVATURE_STEP = 0.001  # [1/m]
DISTANCES = DISTANCE_STEP * np.arange(0, 81)
MAX_CURVATURE_INDEX = 30  # <c-30> .. <c30>: |curvature| <= 0.030 1/m
CURVATURES = CURVATURE_STEP * np.arange(-MAX_CURVATURE_INDEX, MAX_CURVATURE_INDEX + 1)
DISTANCE_TOKENS = [f"<d{i}>" for i in range(len(DISTANCES))]
CURVATURE_TOKENS = [f"<c{j}>" for j in range(-MAX_CURVATURE_INDEX, MAX_CURVATURE_INDEX + 1)]
#: The tokens a model writing this format adds to its vocabulary (``model.added_tokens`` of a recipe).
TOKENS = (*DISTANCE_TOKENS, *CURVATURE_TOKENS)
HEADING_WEIGHT = 2.0  # [m/rad] how much a heading error counts against a position error when encoding
_STEP = re.compile(r"<d(-?\d+)>\s*<c(-?\d+)>")
_ANY = re.compile(r"<[dc]-?\d+>")


def writes_tokens(text: str) -> bool:
    """Whether ``text`` is written in this vocabulary (it holds at least one action token)."""
    return _ANY.search(text) is not None


def roll_out(distances: Sequence[float], curvatures: Sequence[float]) -> np.ndarray:
    """The ``(n, 3)`` poses reached by driving arcs of the given lengths and curvatures from the origin."""
    x = y = heading = 0.0
    poses = []
    for s, k in zip(distances, curvatures, strict=True):
        x, y, heading = _arc(x, y, heading, np.float64(s), np.float64(k))
        poses.append([float(x), float(y), float(heading)])
    return np.asarray(poses).reshape(-1, 3)


def _arc(x: float | np.ndarray, y: float | np.ndarray, heading: float | np.ndarray, s: np.ndarray,
         k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """End pose of an arc of length ``s`` and curvature ``k`` (a straight segment where ``k`` is 0)."""
    turned = heading + s * k
    straight = np.abs(k) < 1e-9
    safe_k = np.where(straight, 1.0, k)
    dx = np.where(straight, s * np.cos(heading), (np.sin(turned) - np.sin(heading)) / safe_k)
    dy = np.where(straight, s * np.sin(heading), (np.cos(heading) - np.cos(turned)) / safe_k)
    return x + dx, y + dy, turned


def encode(waypoints: Sequence[Sequence[float]]) -> str:
    """The tokens whose roll-out follows ``waypoints`` most closely, step by step: 16 for a whole plan,
    fewer for its first poses (the prefix a refinement makes the model continue from)."""
    target = np.asarray(waypoints, dtype=float)
    if target.ndim != 2 or target.shape[1] != 3 or not 1 <= len(target) <= NUM_WAYPOINTS:
        raise ValueError(f"expected 1 to {NUM_WAYPOINTS} poses (x, y, heading), got an array of shape {target.shape}")
    s, k = np.meshgrid(DISTANCES, CURVATURES, indexing="ij")
    x = y = heading = 0.0
    out = []
    for tx, ty, th in target:
        ex, ey, eh = _arc(x, y, heading, s, k)
        error = (ex - tx) ** 2 + (ey - ty) ** 2 + (HEADING_WEIGHT * (eh - th)) ** 2
        i, j = np.unravel_index(int(np.argmin(error)), error.shape)
        x, y, heading = float(ex[i, j]), float(ey[i, j]), float(eh[i, j])
        out.append(DISTANCE_TOKENS[i] + CURVATURE_TOKENS[j])
    return "".join(out)


def decode(text: str) -> list[list[float]]:
    """The 8 poses of an answer written in this vocabulary, or :class:`ParseError` saying what is wrong."""
    steps = _STEP.findall(text)
    tokens = _ANY.findall(text)
    if len(steps) != NUM_WAYPOINTS or len(tokens) != 2 * NUM_WAYPOINTS:
        raise ParseError(f"expected {NUM_WAYPOINTS} steps written <dN><cM> ({2 * NUM_WAYPOINTS} action tokens); "
                         f"found {len(steps)} steps in {len(tokens)} action tokens")  # fmt: skip
    distances, curvatures = [], []
    for n, (d, c) in enumerate(steps, start=1):
        i, j = int(d), int(c)
        if not (0 <= i < len(DISTANCES) and abs(j) <= MAX_CURVATURE_INDEX):
            raise ParseError(f"step {n} <d{d}><c{c}> is outside the codebook "
                             f"({DISTANCE_TOKENS[0]}..{DISTANCE_TOKENS[-1]}, {CURVATURE_TOKENS[0]}..{CURVATURE_TOKENS[-1]})")
        distances.append(DISTANCES[i])
        curvatures.append(CURVATURES[j + MAX_CURVATURE_INDEX])
    return roll_out(distances, curvatures).round(6).tolist()  # 10.1, not 10.100000000000001


def tokens_answer(sample: Sample) -> str:
    """SFT answer format ``driving-action-tokens``: the sample's logged drive in this vocabulary."""
    return encode(sample.target["waypoints"])
