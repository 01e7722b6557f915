"""Reward maths and sandboxed renderers. Imports nothing of this project but ``zoo_common``.

One implementation per reward (``reward(predictions, samples) -> list[RewardResult]``),
exposed to TRL with :func:`to_trl` and to verl with :mod:`rewards.verl_hook`. Rewards are
found by name: ``rewards.get("multiple-choice")``, ``rewards.list()``. The primitives register
on first lookup; a domain's rewards register when ``zoo`` discovers the domains (its discovery
hook, :func:`rewards.base.add_discovery_hook`). Model-written code is rendered only through
:func:`render` (a warm, walled-in worker pool, see :mod:`rewards.rendering`).

Importing ``rewards`` is cheap: the protocol types load now, everything else (the primitives,
the render pool, the adapters) on first attribute access.
"""

from __future__ import annotations

import importlib
from typing import Any

from rewards.base import (
    REWARDS,
    Reward,
    RewardResult,
    RewardSample,
    SampleReward,
    WeightedSum,
    add_discovery_hook,
    discover,
    get,
    register,
)
from rewards.base import list_rewards as list  # the documented `rewards.list()`

_LAZY = {
    "TRLReward": "rewards.adapters",
    "to_trl": "rewards.adapters",
    "RenderPool": "rewards.rendering",
    "RenderResult": "rewards.rendering",
    "render": "rewards.rendering",
    "render_many": "rewards.rendering",
}

__all__ = [
    "REWARDS", "RenderPool", "RenderResult", "Reward", "RewardResult", "RewardSample", "SampleReward",
    "TRLReward", "WeightedSum", "add_discovery_hook", "discover", "get", "list", "register", "render",
    "render_many", "to_trl",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rewards' has no attribute {name!r}")
