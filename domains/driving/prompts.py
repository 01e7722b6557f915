"""The driving VLA's prompt, its answer format and the parser of 8 waypoints.

The output is NAVSIM's agent output (``TrajectorySampling(time_horizon=4, interval_length=0.5)``):
8 poses ``(x, y, heading)`` in the ego frame at 0.5 s .. 4.0 s, metres and radians. The text
format is the zoo's own (no driving-VLA paper in this project's sources publishes one):
``(x,y,h),(x,y,h),...`` with x and y to 0.1 m and heading to 0.01 rad, optionally wrapped in
``<answer>...</answer>``. A model trained on the action vocabulary of :mod:`domains.driving.action_tokens`
writes the same plan as 16 tokens (``<d53><c0>...``); the parser reads either.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from rewards.parsing import ParseError
from zoo.data import Sample

NUM_WAYPOINTS = 8
MAX_DISTANCE = 150.0  # [m] no car covers more in 4 s (37 m/s); a larger value is a malformed answer
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_TRIPLE = re.compile(rf"[\(\[]\s*({_NUMBER})\s*,\s*({_NUMBER})\s*,\s*({_NUMBER})\s*[\)\]]")

DRIVING_USER = "{question}"


def question(ego_speed: float, command: str) -> str:
    """The instruction for one scene: ego status and command, as NAVSIM gives its agents."""
    return (
        f"Ego speed {ego_speed:.1f} m/s. Command: {command}. Plan the next 4 s: 8 waypoints (x,y,heading) "
        "every 0.5 s in the ego frame (x forward, y left, metres, radians)."
    )


def format_waypoints(waypoints: Sequence[Sequence[float]]) -> str:
    """``(x,y,h),...`` at the precision the parser's round trip keeps."""
    return ",".join(f"({x:.1f},{y:.1f},{h:.2f})" for x, y, h in waypoints)


def waypoints_answer(sample: Sample) -> str:
    """SFT answer format ``driving-waypoints``: the sample's logged drive in :func:`format_waypoints`."""
    return format_waypoints(sample.target["waypoints"])


def read_waypoints(text: str) -> list[list[float]]:
    """The 8 ``[x, y, heading]`` of ``text`` (triples or action tokens), or :class:`ParseError` saying what is wrong."""
    body = text
    if "<answer>" in text:
        match = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
        if match is None:
            raise ParseError("<answer> is opened but never closed")
        body = match.group(1)
    from domains.driving.action_tokens import decode, writes_tokens  # numpy: not imported by `zoo list`

    if writes_tokens(body):
        return decode(body)
    triples = _TRIPLE.findall(body)
    if len(triples) != NUM_WAYPOINTS:
        raise ParseError(f"expected {NUM_WAYPOINTS} waypoints written (x,y,heading); found {len(triples)}")
    out = []
    for i, triple in enumerate(triples, start=1):
        x, y, h = (float(v) for v in triple)
        if not all(math.isfinite(v) for v in (x, y, h)):
            raise ParseError(f"waypoint {i} has a non-finite value: {triple}")
        if math.hypot(x, y) > MAX_DISTANCE or abs(h) > 2 * math.pi:
            raise ParseError(f"waypoint {i} {triple} is out of range (|x,y| <= {MAX_DISTANCE} m, |heading| <= 2 pi)")
        out.append([x, y, h])
    return out


def parse_waypoints(text: str, question: str = "") -> dict[str, Any]:
    """Parser of the driving entries: ``{"trajectory": [[x, y, h] * 8]}`` or ``{"parse_error": why}``."""
    try:
        return {"trajectory": read_waypoints(text)}
    except ParseError as err:
        return {"parse_error": str(err)}
