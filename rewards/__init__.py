"""Reward maths and sandboxed renderers. Imports nothing else of this project.

One implementation per reward (``reward(predictions, samples) -> list[RewardResult]``),
exposed to TRL with :func:`to_trl` and to verl with :mod:`rewards.verl_hook`. Rewards are
found by name: ``rewards.get("multiple-choice")``, ``rewards.list()``; domains add theirs
through the ``zoo.rewards`` entry-point group. Model-written code is rendered only through
:func:`render` (a warm, walled-in worker pool, see :mod:`rewards.rendering`).
"""

from rewards.adapters import TRLReward, to_trl
from rewards.base import (
    REWARDS,
    Reward,
    RewardResult,
    RewardSample,
    SampleReward,
    WeightedSum,
    discover,
    get,
    register,
)
from rewards.base import list_rewards as list  # noqa: A001  (the documented `rewards.list()`)
from rewards.registry import Registry, UnknownNameError
from rewards import builtin as _builtin  # noqa: E402,F401  registers the primitives by name
from rewards.rendering import RenderPool, RenderResult, render, render_many

__all__ = [
    "REWARDS", "Registry", "RenderPool", "RenderResult", "Reward", "RewardResult", "RewardSample",
    "SampleReward", "TRLReward", "UnknownNameError", "WeightedSum", "discover", "get", "list", "register",
    "render", "render_many", "to_trl",
]
