"""Registers zoo's advantage estimators and policy losses in verl, so a cluster run uses the same maths.

verl imports this module in every process when ``VERL_USE_EXTERNAL_MODULES=zoo.engines.vlm.verl_plugin``
is set (``verl/__init__.py`` in verl 0.9.1; :mod:`zoo.engines.vlm.verl_engine` sets it for the driver and,
through Ray's ``runtime_env``, for every worker). The functions registered here are thin shims
from verl's call shapes to the pure functions of :mod:`zoo.rl.advantages` / :mod:`zoo.rl.losses`:

* advantage estimators ``zoo_<name>`` for every entry of ``ADVANTAGE_ESTIMATORS``: verl calls
  ``fn(token_level_rewards, response_mask, index, config, ...)`` and wants ``(advantages, returns)``
  of shape (B, T) (``verl/trainer/ppo/ray_trainer.py::compute_advantage``);
* a policy loss ``zoo_<name>`` for every entry of ``POLICY_LOSSES`` (``zoo_vanilla``, ``zoo_gspo``): verl calls ``fn(old_log_prob, log_prob,
  advantages, response_mask, loss_agg_mode, config, rollout_is_weights)`` and wants
  ``(loss, metrics)`` (``verl/workers/utils/losses.py``). Aggregation goes through verl's own
  ``agg_loss`` with the actor's ``global_batch_info`` so data-parallel normalisation is verl's.

Importing this module without verl installed is an error with the install command.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

import torch

from zoo.algorithms import ADVANTAGE_ESTIMATORS, POLICY_LOSSES

logger = logging.getLogger(__name__)

try:
    from verl.trainer.ppo import core_algos
except ImportError as err:  # pragma: no cover - exercised only where verl is missing
    raise ImportError(
        "zoo.engines.vlm.verl_plugin needs verl; install the optional extra on the GPU cluster: "
        "pip install 'rl-model-zoo[verl]'  (verl==0.9.1)"
    ) from err

PREFIX = "zoo_"


def _estimator_shim(name: str):
    fn = ADVANTAGE_ESTIMATORS.get(name)
    takes_std = "normalize_std" in inspect.signature(fn).parameters

    def estimator(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index=None, config=None, **_: Any):
        scores = token_level_rewards.sum(dim=-1)
        group_ids = list(index) if index is not None else list(range(scores.shape[0]))
        options = {}
        if takes_std and config is not None:
            options["normalize_std"] = bool(config.get("norm_adv_by_std_in_grpo", True))
        advantages = fn(scores, group_ids, mask=response_mask, **options).to(token_level_rewards.device)
        return advantages, advantages

    estimator.__name__ = f"{PREFIX}{name.replace('-', '_')}"
    estimator.__doc__ = f"verl shim over zoo.rl.advantages {name!r}."
    return estimator


def _aggregation(loss_agg_mode: str, config: Any):
    info = dict(getattr(config, "global_batch_info", None) or {})

    def agg(loss_mat: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return core_algos.agg_loss(loss_mat=loss_mat, loss_mask=mask, loss_agg_mode=loss_agg_mode, **info)

    return agg


def _clips(config: Any) -> tuple[float, float]:
    base = config.clip_ratio
    low = config.clip_ratio_low if config.clip_ratio_low is not None else base
    high = config.clip_ratio_high if config.clip_ratio_high is not None else base
    return low, high


def _metrics(stats: dict[str, torch.Tensor]) -> dict[str, float]:
    return {f"actor/pg_{k}" if k.startswith("clip") else f"actor/{k}": v.item() for k, v in stats.items()}


def _loss_shim(name: str) -> Any:
    """verl's policy-loss call shape over a zoo loss; a loss with a dual clip gets verl's ``clip_ratio_c``."""
    loss_fn = POLICY_LOSSES.get(name)
    dual_clip = "dual_clip" in inspect.signature(loss_fn).parameters

    def policy_loss(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode="token-mean", config=None,
                    rollout_is_weights=None):
        low, high = _clips(config)
        extra = {"dual_clip": config.get("clip_ratio_c", 3.0)} if dual_clip else {}
        loss, stats = loss_fn(
            log_prob,
            old_log_prob,
            advantages,
            response_mask,
            clip_low=low,
            clip_high=high,
            agg=_aggregation(loss_agg_mode, config),
            weights=rollout_is_weights,
            **extra,
        )
        return loss, _metrics(stats)

    policy_loss.__name__ = f"{PREFIX}{name}"
    return policy_loss


def register_losses() -> list[str]:
    """Register ``zoo_<name>`` in verl for every zoo policy loss; returns the verl names."""
    names = []
    for name in POLICY_LOSSES.list():
        verl_name = f"{PREFIX}{name}"
        core_algos.register_policy_loss(verl_name)(_loss_shim(name))
        names.append(verl_name)
    return names


def register_estimators() -> list[str]:
    """Register ``zoo_<name>`` in verl for every zoo estimator; returns the verl names."""
    names = []
    for name in ADVANTAGE_ESTIMATORS.list():
        if getattr(ADVANTAGE_ESTIMATORS.get(name), "rollout_fields", ()):
            continue  # needs multi-turn rollout ids that verl's estimator call does not carry
        shim = _estimator_shim(name)
        if shim.__name__ not in core_algos.ADV_ESTIMATOR_REGISTRY:
            core_algos.register_adv_est(shim.__name__)(shim)
        names.append(shim.__name__)
    return names


# Listing the tables discovers the domains' own losses and estimators (StableReinforce in domains/perception).
ESTIMATORS = register_estimators()
LOSSES = register_losses()
