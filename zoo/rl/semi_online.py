"""UI-S1 semi-online RL maths (arXiv 2509.11543): patch module, future returns, advantage, group filter.

UI-S1 trains a mobile GUI agent on *offline* trajectories while rolling them out *as if
online*: at every step the model's own answer stays in the dialogue, and the next screenshot
is the recorded one. This module holds the pure functions around that loop, each checked
number for number against the authors' code (``tests/rl/golden/ui_s1.json``, written by
``tests/rl/golden/make_ui_s1_golden.py`` from X-PLUG/MobileAgent@11cea575, folder ``UI-S1/``):

- :func:`patch_plan` — the *patch module* (``MultiRoundGenerator.apply_response``): a wrong
  step is replaced by the ground-truth action while the trajectory has made fewer than
  ``patch_threshold`` errors (``-1``: always); otherwise the trajectory ends there.
- :func:`step_discounted_returns` — ``core_uis1.compute_step_discounted_returns``.
- :func:`episode_advantage`, :func:`step_advantage`, :func:`ui_s1` — ``core_uis1.py``'s
  ``episode_norm_reward``, ``step_norm_reward`` and ``compute_uis1_outcome_advantage``;
  :mod:`zoo.algorithms` names ``ui_s1`` the ``ui-s1`` advantage estimator.
- :func:`future_reward_filter` — the dynamic filter inlined in ``dapo_ray_trainer.py::fit``
  (``filter_groups.metric=seq_future_reward``); the same ``fit``'s refill of the batch to
  ``train_batch_size`` prompts with further rollouts is :class:`zoo.rl.batching.GroupTopUp`.

The multi-turn rollout loop that calls them (building each turn's prompt from the history,
generating, scoring, patching, batching across trajectories) is
:mod:`zoo.engines.vlm.semi_online_rollout`; it needs a generation engine, these functions do not.

Shapes: one row per *step sample* (one generated turn of one trajectory), B rows in any
order. ``group_ids`` (B,) is the prompt (task) id shared by the n rollouts of one task
(upstream ``uid``); ``traj_ids`` (B,) tells the rollouts apart (``traj_uid``); ``step_ids``
(B,) is the 0-based turn index (``step_id``); ``matches`` (B,) is the reward's
``extract_match`` (type and arguments right). Ids are int tensors or sequences of hashables.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from zoo.rl.advantages import GroupIds, group_index, to_token_level
from zoo.rl.batching import GroupFilter

logger = logging.getLogger(__name__)

Mode = Literal["mean_std_norm", "mean_norm"]
MODES: tuple[str, ...] = ("mean_std_norm", "mean_norm")
GAMMA = 0.5  # scripts/train_example.sh: GAMMA=0.5
FILTER_STD_THRESHOLD = 0.3  # scripts/train_example.sh: DAPO_THRESHOLD=0.3
PATCH_THRESHOLD = 2  # scripts/train_example.sh: PATCH_THRESHOLD=2
_EPS = 1e-6  # core_uis1.compute_uis1_outcome_advantage default epsilon


# --- patch module ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PatchPlan:
    """What the semi-online rollout does with one trajectory, from :func:`patch_plan`.

    Attributes:
        rolled_out: how many steps are generated (and become training samples); the
            trajectory stops after step ``rolled_out - 1``.
        patched: one flag per rolled-out step: True where the model's wrong answer is
            replaced in the dialogue by the ground-truth action and thought.
        stopped_early: True when a mismatch past the patch budget ended the trajectory
            before its last ground-truth step.
    """

    rolled_out: int
    patched: tuple[bool, ...]
    stopped_early: bool


def check_patch_threshold(patch_threshold: int) -> int:
    """``patch_threshold`` if it is an int >= -1 (-1 = always patch), else a ValueError naming it."""
    if isinstance(patch_threshold, bool) or not isinstance(patch_threshold, int) or patch_threshold < -1:
        raise ValueError(f"patch_threshold must be an int >= -1 (-1 = always patch), got {patch_threshold!r}")
    return patch_threshold


def patch_step(hit: bool, errors: int, patch_threshold: int) -> tuple[bool, bool, int]:
    """One step of the patch module: ``(patched, finished, errors after the step)``.

    Reference: ``UI-S1/verl/utils/dataset/universal_multiround.py::MultiRoundGenerator.apply_response``,
    the body run per generated response. A match changes nothing. A mismatch is patched (the
    ground truth replaces the answer in the dialogue) while ``errors < patch_threshold`` or the
    threshold is -1, and the error count goes up; otherwise the trajectory is finished after this
    step (the step itself stays a training sample). This is the incremental form a rollout loop
    calls turn by turn; :func:`patch_plan` folds it over a whole trajectory.
    """
    if hit:
        return False, False, errors
    if patch_threshold == -1 or errors < patch_threshold:
        return True, False, errors + 1
    return False, True, errors


def patch_plan(matches: Sequence[bool], patch_threshold: int = PATCH_THRESHOLD) -> PatchPlan:
    """Which steps of one trajectory are patched with the ground truth, and where it stops.

    Reference: ``UI-S1/verl/utils/dataset/universal_multiround.py::MultiRoundGenerator.apply_response``
    (:func:`patch_step` per step). A matching step keeps the model's answer. A mismatching step is
    patched when the trajectory's error count so far is below ``patch_threshold`` (or the threshold
    is -1) and the count goes up by one; otherwise the trajectory is finished, that step
    included. ``patch_threshold=0`` (verl config default there) never patches: the
    rollout is fully on-policy and stops at the first error. A mismatch on the last step
    is still marked patched (upstream writes the ground truth even though no turn follows).

    Args:
        matches: per ground-truth step, whether the model's answer at that step would
            match (``extract_match``); only the prefix up to the stop is consulted.
        patch_threshold: errors that may be patched per trajectory; -1 = unlimited.

    Returns:
        :class:`PatchPlan`.
    """
    check_patch_threshold(patch_threshold)
    patched: list[bool] = []
    errors = 0
    for hit in matches:
        was_patched, finished, errors = patch_step(bool(hit), errors, patch_threshold)
        patched.append(was_patched)
        if finished:
            return PatchPlan(len(patched), tuple(patched), stopped_early=len(patched) < len(matches))
    return PatchPlan(len(patched), tuple(patched), stopped_early=False)


# --- returns --------------------------------------------------------------------------------


def _keys(ids: GroupIds, batch_size: int, name: str) -> list[Hashable]:
    keys = ids.reshape(-1).tolist() if isinstance(ids, torch.Tensor) else list(ids)
    if len(keys) != batch_size:
        raise ValueError(f"{name} has {len(keys)} entries but there are {batch_size} rewards; give one per sample")
    return keys


def _as_step_rewards(rewards: torch.Tensor | Sequence[float]) -> torch.Tensor:
    scores = torch.as_tensor(rewards, dtype=torch.float32)
    if scores.dim() != 1:
        raise ValueError(f"rewards must be one scalar per step sample, shape (B,), got {tuple(scores.shape)}")
    if bool(torch.isnan(scores).any()):
        raise ValueError(
            "a step reward is NaN (no score could be computed); UI-S1's returns chain steps of a "
            "trajectory, so drop that trajectory from the batch (zoo.rl.batching.failed finds them) first"
        )
    return scores


def step_discounted_returns(
    rewards: torch.Tensor | Sequence[float],
    traj_ids: GroupIds,
    step_ids: GroupIds,
    matches: torch.Tensor | Sequence[bool],
    *,
    gamma: float = GAMMA,
) -> torch.Tensor:
    """UI-S1's future return per step: ``R_t = r_t + gamma * R_{t+1}``, cut at every mismatch.

    Reference: ``UI-S1/uis1/core_uis1.py::compute_step_discounted_returns``. Within a
    trajectory, walking back from its last step: a matching step adds its reward to the
    discounted running return; a mismatching step gets just its own reward and resets the
    running return to 0, so no credit flows past an error to the steps before it.
    Float32 throughout, as upstream under NumPy 2.

    One deliberate difference: steps are ordered by ``step_ids`` within a trajectory, where
    upstream uses batch order (in its trainer the batch is concatenated step by step, so
    the two agree); here a shuffled batch gives the same returns.

    Args:
        rewards: (B,) step rewards (UI-S1's ``score``).
        traj_ids: (B,) trajectory id per sample.
        step_ids: (B,) step index per sample, unique within a trajectory.
        matches: (B,) bool, the reward's ``extract_match``.
        gamma: discount factor.

    Returns:
        (B,) float32 returns, in the input order.
    """
    scores = _as_step_rewards(rewards)
    batch = scores.shape[0]
    hits = _keys(torch.as_tensor(matches, dtype=torch.bool), batch, "matches")
    steps = _keys(step_ids, batch, "step_ids")
    trajectories: dict[Hashable, list[int]] = {}
    for row, traj in enumerate(_keys(traj_ids, batch, "traj_ids")):
        trajectories.setdefault(traj, []).append(row)
    returns = torch.empty_like(scores)
    zero = torch.zeros((), dtype=torch.float32)
    for traj, rows in trajectories.items():
        if len({steps[r] for r in rows}) != len(rows):
            raise ValueError(f"trajectory {traj!r} has a repeated step id in {[steps[r] for r in rows]}")
        running = zero
        for row in sorted(rows, key=lambda r: steps[r], reverse=True):
            # a mismatch keeps its own reward and passes nothing back to earlier steps
            running = scores[row] + gamma * running if hits[row] else zero
            returns[row] = running if hits[row] else scores[row]
    return returns


# --- advantages -----------------------------------------------------------------------------


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown UI-S1 advantage mode {mode!r}; expected one of {MODES}")


def _normalise(values: torch.Tensor, keys: list[Hashable], mode: str, eps: float, singleton_self: bool) -> torch.Tensor:
    """``values - mean_k`` (``mean_norm``) or ``(values - mean_k) / (std_k + eps)`` per key.

    Mean and unbiased std are ``torch.mean`` / ``torch.std`` of the key's values in batch
    order, the reductions upstream runs, so float32 results agree bit for bit. A key with
    one sample gets std 1 and mean 0 (episode level) or its own value (step level,
    ``singleton_self``: advantage 0), as upstream.
    """
    index = group_index(keys, values.shape[0])
    out = torch.empty_like(values)
    for g in range(int(index.max()) + 1 if index.numel() else 0):
        rows = (index == g).nonzero(as_tuple=True)[0]
        group = values[rows]
        if rows.numel() > 1:
            mean, std = group.mean(), group.std()
        else:
            mean = group[0] if singleton_self else torch.zeros((), dtype=values.dtype)
            std = torch.ones((), dtype=values.dtype)
        centred = group - mean
        out[rows] = centred / (std + eps) if mode == "mean_std_norm" else centred
    return out


def episode_advantage(
    rewards: torch.Tensor | Sequence[float], group_ids: GroupIds, *, mode: Mode = "mean_std_norm", eps: float = _EPS
) -> torch.Tensor:
    """UI-S1's episode-level term: each step reward normalised over *all* steps of its prompt.

    Reference: ``core_uis1.episode_norm_reward`` with its default
    ``compute_mean_std_cross_all_data=True`` (the trainer never changes it): every step
    sample of every rollout of the prompt ``uid`` enters the mean and std, so
    ``traj_index`` plays no part. A prompt with a single sample gets mean 0, std 1.

    Args:
        rewards: (B,) step rewards (the per-turn score, not a trajectory total).
        group_ids: (B,) prompt id per sample.
        mode: ``mean_std_norm`` divides by ``std + eps``; ``mean_norm`` only centres.
        eps: added to the std.

    Returns:
        (B,) float32.
    """
    _check_mode(mode)
    scores = _as_step_rewards(rewards)
    return _normalise(scores, _keys(group_ids, scores.shape[0], "group_ids"), mode, eps, singleton_self=False)


def step_advantage(
    step_returns: torch.Tensor | Sequence[float],
    group_ids: GroupIds,
    step_ids: GroupIds,
    *,
    mode: Mode = "mean_std_norm",
    eps: float = _EPS,
) -> torch.Tensor:
    """UI-S1's step-level term: future returns normalised within ``(prompt, step)``.

    Reference: ``core_uis1.step_norm_reward``. Upstream keys the groups by the string
    ``f"{uid}-{step_id}"``; the tuple used here is the same grouping without the
    (theoretical) collision of ids containing ``-``. A ``(prompt, step)`` reached by one
    rollout only gets advantage 0.

    Args:
        step_returns: (B,) from :func:`step_discounted_returns`.
        group_ids, step_ids: (B,) prompt id and step index per sample.
        mode, eps: as :func:`episode_advantage`.

    Returns:
        (B,) float32.
    """
    _check_mode(mode)
    values = _as_step_rewards(step_returns)
    batch = values.shape[0]
    keys = list(zip(_keys(group_ids, batch, "group_ids"), _keys(step_ids, batch, "step_ids")))
    return _normalise(values, keys, mode, eps, singleton_self=True)


def ui_s1(
    rewards: torch.Tensor | Sequence[float],
    group_ids: GroupIds,
    *,
    traj_ids: GroupIds | None = None,
    step_ids: GroupIds | None = None,
    matches: torch.Tensor | Sequence[bool] | None = None,
    gamma: float = GAMMA,
    mode: Mode = "mean_std_norm",
    eps: float = _EPS,
    episode_weight: float = 1.0,
    step_weight: float = 1.0,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """UI-S1 advantage: ``episode_weight * episode_adv + step_weight * step_adv``.

    Reference: ``core_uis1.compute_uis1_outcome_advantage`` fed as the trainer feeds it
    (``ray_trainer.compute_advantage``): episode term on the step rewards
    (:func:`episode_advantage`), step term on the discounted future returns
    (:func:`step_discounted_returns` then :func:`step_advantage`). Defaults are
    ``scripts/train_example.sh``'s: gamma 0.5, ``mean_std_norm``, both weights 1.0
    (``core_uis1`` itself defaults to ``mean_norm``). Upstream returns the same tensor as
    advantages and returns (no critic).

    ``traj_ids``, ``step_ids`` and ``matches`` are required: they come from a multi-turn
    rollout. The single-turn TRL trainer (:mod:`zoo.engines.vlm.trainer`) does not provide them,
    so selecting ``ui-s1`` there fails with this message rather than guessing.

    Args:
        rewards: (B,) step rewards.
        group_ids: (B,) prompt id per sample (upstream ``uid``).
        traj_ids, step_ids, matches: (B,) each; see the module docstring.
        gamma: discount of :func:`step_discounted_returns`.
        mode: ``mean_std_norm`` or ``mean_norm``.
        eps: added to each std.
        episode_weight, step_weight: the two terms' weights.
        mask: optional (B, T) response mask; when given, returns verl's token layout.

    Returns:
        (B,) float32 advantages, or (B, T) ``adv[:, None] * mask``.
    """
    missing = [n for n, v in (("traj_ids", traj_ids), ("step_ids", step_ids), ("matches", matches)) if v is None]
    if missing:
        raise ValueError(
            f"the ui-s1 advantage needs {', '.join(missing)} (one per step sample, from a multi-turn "
            "semi-online rollout); pass them as keyword options, or use 'grpo' for single-turn training"
        )
    returns = step_discounted_returns(rewards, traj_ids, step_ids, matches, gamma=gamma)
    episode = episode_advantage(rewards, group_ids, mode=mode, eps=eps)
    step = step_advantage(returns, group_ids, step_ids, mode=mode, eps=eps)
    adv = episode_weight * episode + step_weight * step
    return adv if mask is None else to_token_level(adv, mask)


# --- dynamic filter -------------------------------------------------------------------------


def future_reward_filter(
    step_returns: torch.Tensor | Sequence[float],
    group_ids: GroupIds,
    step_ids: GroupIds,
    *,
    threshold: float = FILTER_STD_THRESHOLD,
) -> GroupFilter:
    """UI-S1's DAPO-style filter: keep prompts whose step-0 future returns spread enough.

    Reference: ``UI-S1/verl/trainer/ppo/dapo_ray_trainer.py::fit`` with
    ``filter_groups.metric=seq_future_reward``: per prompt, the population std
    (``np.std``, ddof 0) of the future returns at ``step_id == 0``; the prompt is kept when
    that std is strictly above ``threshold`` or it has a single step-0 sample. A prompt with
    no step-0 sample is dropped (upstream too). Computed in float32 like upstream;
    a std within rounding of the threshold may decide differently.

    The trainer's loop around it (roll out more batches until ``train_batch_size`` prompts are
    kept, then keep the first ``train_batch_size``) is :class:`zoo.rl.batching.GroupTopUp`.

    Args:
        step_returns: (B,) from :func:`step_discounted_returns`.
        group_ids, step_ids: (B,) prompt id and step index per sample.
        threshold: std threshold (0.3 in the authors' script).

    Returns:
        :class:`zoo.rl.batching.GroupFilter`: ``keep`` (B,) bool over the step samples.
    """
    values = _as_step_rewards(step_returns)
    batch = values.shape[0]
    prompts = _keys(group_ids, batch, "group_ids")
    firsts: dict[Hashable, list[int]] = {p: [] for p in prompts}
    for row, step in enumerate(_keys(step_ids, batch, "step_ids")):
        if step == 0:
            firsts[prompts[row]].append(row)
    kept = {p for p, rows in firsts.items() if len(rows) == 1 or (rows and _population_std(values[rows]) > threshold)}
    keep = torch.tensor([p in kept for p in prompts], dtype=torch.bool)
    dropped = len(firsts) - len(kept)
    if dropped:
        logger.debug("UI-S1 filter dropped %d of %d prompts (step-0 return std <= %g)", dropped, len(firsts), threshold)
    return GroupFilter(keep=keep, num_groups=len(firsts), num_dropped_groups=dropped)


def _population_std(values: torch.Tensor) -> float:
    """``np.std`` (ddof 0) in float32: mean, then mean of squared deviations, then sqrt."""
    return float(((values - values.mean()) ** 2).mean().sqrt())


#: What a caller must pass besides rewards and groups; trainers and the verl plugin read this to
#: refuse (rather than mis-call) an estimator that needs multi-turn rollout ids.
ui_s1.rollout_fields = ("traj_ids", "step_ids", "matches")
