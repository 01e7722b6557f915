"""The driving VLA's GRPO reward: the PDMS-style score of the parsed trajectory in its scene.

``driving-pdms`` scores with v1 aggregation (NC · DAC · (5 EP + 5 TTC + 2 C) / 12), ``driving-epdms``
with v2 (NC · DAC · DDC · TLC · (5 EP + 5 TTC + 2 LK + 2 HC + 2 EC) / 16, EC = 1 on one frame).
Both normalise EP against the scene's planner proposal, as NAVSIM does against PDM-Closed, and both
are NAVSIM's aggregation over this project's synthetic-scene geometry (:mod:`domains.driving.metrics`),
not NAVSIM's nuPlan scorer. A malformed answer scores 0 with the parse failure as the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from domains.driving.prompts import read_waypoints
from rewards.base import RewardResult, SampleReward, register, require, text_of

COMPONENTS = ("nc", "dac", "ddc", "tlc", "ep", "ttc", "lk", "c", "hc")


class DrivingPDMS(SampleReward):
    """Score in [0, 1] of one trajectory; components are the sub-metrics (progress normalised).

    The sample's target needs ``scene`` (a :meth:`~domains.driving.scene.Scene.to_dict`) and
    ``reference`` (the planner proposal's 8 poses).
    """

    component_names = COMPONENTS

    def __init__(self, version: str = "v1") -> None:
        if version not in ("v1", "v2"):
            raise ValueError(f"version must be 'v1' (PDMS) or 'v2' (EPDMS), got {version!r}")
        self.version = version
        self.name = "driving-pdms" if version == "v1" else "driving-epdms"

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        from domains.driving.metrics import score
        from domains.driving.scene import Scene

        scene = Scene.from_dict(require(target, "scene", self.name))
        reference = np.asarray(require(target, "reference", self.name), dtype=float)
        waypoints = np.asarray(read_waypoints(text_of(prediction)), dtype=float)
        result = score(scene, waypoints, reference, self.version)
        return RewardResult(result["score"], {k: float(result[k]) for k in COMPONENTS})


register("driving-pdms", DrivingPDMS("v1"))
register("driving-epdms", DrivingPDMS("v2"))
