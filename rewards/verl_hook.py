"""verl's custom reward hook: point ``reward.custom_reward_function.path`` at this file.

verl's naive reward manager (verl 0.9.1, ``reward_manager/naive.py``) calls, per response,
``compute_score(data_source=, solution_str=, ground_truth=row["reward_model"]["ground_truth"],
extra_info=row["extra_info"])`` and accepts a float or a dict with ``"score"`` (the other keys
go to ``reward_extra_info``, one list per key, so every call here returns the same keys for a
given reward). ``data_source`` names the registered reward (``rewards.get``).

A ``None`` score (render worker died, judge timed out) has no honest float: verl writes the
value into a float tensor (``None`` fails there) and its GRPO advantage takes a plain mean/std
per group (a NaN would poison every response of the group), and it has no per-sample mask.
So by default :func:`compute_score` **raises** with the reason. Set the environment variable
``ZOO_VERL_ON_UNSCORED=<float>`` to score such samples with that value instead; the dict then
carries ``unscored=1.0`` and a warning is logged each time, so the substitution is never silent.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from rewards.adapters import as_target
from rewards.base import RewardSample, get

logger = logging.getLogger(__name__)
ON_UNSCORED_ENV = "ZOO_VERL_ON_UNSCORED"


class UnscoredSampleError(RuntimeError):
    """The reward could not be computed for a response and no fallback value was configured."""


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
                  **kwargs: Any) -> dict[str, float]:
    """Score one response with the reward registered as ``data_source``.

    Returns ``{"score": float, "unscored": 0.0 | 1.0, **components}``. ``ground_truth`` may
    be a dict, a JSON object string, or a bare answer (``{"answer": ground_truth}``).
    ``kwargs`` (verl's ``reward_kwargs``) are accepted and ignored.
    """
    reward = get(data_source)
    target = as_target(ground_truth, "ground_truth")
    sample = RewardSample(target=target, meta=dict(extra_info or {}))
    result = reward([solution_str], [sample])[0]
    components = {k: float(v) for k, v in result.components.items()}
    if result.score is not None:
        return {"score": float(result.score), "unscored": 0.0, **components}
    fallback = os.environ.get(ON_UNSCORED_ENV)
    if fallback is None:
        raise UnscoredSampleError(
            f"reward {data_source!r} could not score a response ({result.error}); verl cannot mask it. "
            f"Fix the cause, or set {ON_UNSCORED_ENV}=<float> to score such responses with that value."
        )
    logger.warning("reward %r unscored (%s); using %s=%s", data_source, result.error, ON_UNSCORED_ENV, fallback)
    return {"score": float(fallback), "unscored": 1.0, **components}
