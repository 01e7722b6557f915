"""Reward maths and sandboxed renderers. Imports nothing of this project but ``zoo_common``.

One implementation per reward (``reward(predictions, samples) -> list[RewardResult]``),
exposed to TRL with :func:`to_trl` and to verl with :mod:`rewards.verl_hook`. Rewards are
found by name: ``rewards.get("multiple-choice")``, ``rewards.list()``. The registry finds them
itself on the first lookup that misses: the primitives, then every distribution's ``zoo.rewards``
entry point (this project's points at ``zoo.domains``, which adds each domain's rewards module to
the registry's discovery). Model-written code is rendered only through :func:`render` (a warm,
walled-in worker pool, see :mod:`rewards.rendering`).

Importing ``rewards`` is cheap: the protocol types load now, everything else (the primitives,
the render pool, the adapters) on first attribute access.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from rewards.base import (
    REWARDS,
    Reward,
    RewardResult,
    RewardSample,
    SampleReward,
    WeightedSum,
    get,
    register,
)
from rewards.base import list_rewards as list  # the documented `rewards.list()`

logger = logging.getLogger(__name__)

#: Entry-point group of distributions that register rewards: each names a module whose import
#: registers them (or adds a discovery hook to :data:`REWARDS`), or a function that does.
PLUGIN_GROUP = "zoo.rewards"


def _discover_rewards() -> None:
    """The primitives, then each ``zoo.rewards`` entry point; a broken plug-in is logged and skipped."""
    import rewards.builtin  # noqa: F401  (registers the primitives)
    from zoo_common.plugins import installed_entry_points  # installed distributions only, not the working directory

    for point in installed_entry_points(PLUGIN_GROUP):
        try:
            loaded = point.load()
            if callable(loaded):
                loaded()
        except Exception:  # one broken distribution must not hide every other reward
            logger.exception("could not load the %r reward plug-in (%s); its rewards are unavailable",
                             point.name, point.value)  # fmt: skip


REWARDS.add_discovery(_discover_rewards)

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
    "TRLReward", "WeightedSum", "get", "list", "register", "render",
    "render_many", "to_trl",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rewards' has no attribute {name!r}")
