"""The check step of the VLM engines: every name a recipe gives, resolved once, in the order the loop uses it.

``zoo train`` calls the engine's check right after reading the recipe (:meth:`zoo.engines.Engine.check_recipe`),
so a recipe whose names do not resolve is refused before anything is written or any weight loads, and ``--dry-run``
runs nothing else. The loops take what it returns instead of looking the names up again: the training data and
its eval-data refusal, the entry's input contract, the loss row and its clips, the advantage estimator, the rollout
plug-ins and backend, the rewards, the launch config and the provenance rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zoo.engines.checks import check_launch, check_provenance, check_training_data, resolve_rewards
from zoo.recipe import RecipeError
from zoo_common.registry import UnknownNameError

if TYPE_CHECKING:
    from zoo.algorithms import LossType
    from zoo.data import Sample
    from zoo.engines.vlm.recipe import (
        AlgorithmConfig,
        ModelConfig,
        SemiOnlineRecipe,
        VerlRecipe,
        VLMRecipe,
        VLMRLRecipe,
    )
    from zoo.engines.vlm.sft_recipe import SFTRecipe
    from zoo.kinds import VLMSpec


@dataclass(frozen=True)
class AlgorithmParts:
    """The ``algorithm:`` block's names resolved: what a GRPO-family loop computes advantages and the loss with."""

    loss: LossType
    """The loss table's row for ``algorithm.loss_type``."""
    clips: tuple[float, float]
    """``(clip_low, clip_high)``: the recipe's, or the loss's paper default where unset."""
    estimator: Callable[..., Any]
    """The advantage estimator ``algorithm.adv_estimator`` names."""
    policy_loss: Callable[..., Any]
    """The policy-loss function of the loss row (:data:`zoo.algorithms.POLICY_LOSSES`)."""


@dataclass(frozen=True)
class VLMChecked:
    """What a GRPO-family loop of a VLM uses, resolved by its engine's check."""

    contract: VLMSpec | None
    """``model.entry``'s input contract (its ``variant``'s system prompt), ``None`` without an entry."""
    algorithm: AlgorithmParts
    """The loss row, clips, estimator and policy loss."""
    rewards: tuple[Any, ...]
    """What the reward table holds under each ``rewards[i].name``, not yet built."""


@dataclass(frozen=True)
class SFTChecked:
    """What the ``vlm-sft`` loop uses, resolved by :func:`check_sft`."""

    contract: VLMSpec | None
    """``model.entry``'s input contract, ``None`` without an entry."""
    answer: Callable[[Sample], str]
    """The registered answer format ``data.answer_format``."""


def check_entry(model: ModelConfig, system_prompt: str | None, provenance: Mapping[str, Any]) -> VLMSpec | None:
    """``model.entry``'s contract; what it decides is decided there once: ``data.system_prompt`` beside it is a
    :class:`RecipeError`, and so are pixel limits other than the entry's unless ``provenance`` cites them (the
    authors train at another resolution than they infer at: Vision-R1 trains at 401408 pixels)."""
    spec = model.contract()
    if spec is None:
        return None
    if system_prompt:
        raise RecipeError(f"data.system_prompt and model.entry={model.entry!r} both set the system prompt; the "
                          "entry's is what zoo.load sends: drop data.system_prompt (or name one of its "
                          "prompts with model.variant)")  # fmt: skip
    for key in ("min_pixels", "max_pixels"):
        value = getattr(model, key)
        if value is not None and value != getattr(spec, key) and f"model.{key}" not in provenance:
            raise RecipeError(f"model.{key}={value}: model.entry={model.entry!r} decides it ({getattr(spec, key)}, "
                              "what zoo.load resizes to); remove one of them, or cite under provenance: why the "
                              f"authors train at another resolution than they infer at (model.{key})")  # fmt: skip
    return spec


def check_image_first(entry: str | None, spec: VLMSpec | None, loop: str) -> None:
    """The single-turn loops (``vlm-trl``, ``vlm-verl``, single-turn ``vlm-sft``) place each image before its
    text: an entry whose image follows its text (``image_first: false``, UI-S1's layout) is a
    :class:`RecipeError` there, since the run would not train what ``zoo.load`` asks. The multi-turn loops lay
    the screenshot out where the entry does and do not call this."""
    if spec is not None and (not spec.image_first or spec.image_inside):
        where = "between two texts" if spec.image_inside else "after the text"
        raise RecipeError(f"model.entry={entry!r} puts the image {where}; {loop} places images first, "
                          "so the run would not train what zoo.load asks")  # fmt: skip


def check_algorithm(alg: AlgorithmConfig) -> AlgorithmParts:
    """The loss row, its clips, the advantage estimator and the policy loss ``alg`` names, looked up once; a
    :class:`RecipeError` for a name no table holds or a dual clip on a sequence-level loss."""
    from zoo.algorithms import ADVANTAGE_ESTIMATORS, LOSS_TYPES, POLICY_LOSSES

    try:
        loss = LOSS_TYPES.get(alg.loss_type)
        estimator = ADVANTAGE_ESTIMATORS.get(alg.adv_estimator)
        policy_loss = POLICY_LOSSES.get(loss.loss)
    except UnknownNameError as err:
        raise RecipeError(f"algorithm: {err}") from None
    if loss.sequence_level and alg.dual_clip is not None:
        raise RecipeError(f"algorithm.dual_clip applies to token-level losses; loss_type={alg.loss_type!r} has none")
    low, high = loss.default_clip  # the loss's paper default where the recipe leaves a clip unset
    clips = (low if alg.clip_low is None else alg.clip_low, high if alg.clip_high is None else alg.clip_high)
    return AlgorithmParts(loss=loss, clips=clips, estimator=estimator, policy_loss=policy_loss)


def _check_rl(recipe: VLMRLRecipe, *, multi_turn: bool, image_first: bool) -> VLMChecked:
    """What every GRPO-family loop resolves, in its order: data, contract, loss row, estimator (a multi-turn one
    exactly when the loop is), rewards."""
    from zoo.algorithms import ADVANTAGE_ESTIMATORS

    check_training_data(recipe.data)
    contract = check_entry(recipe.model, recipe.data.system_prompt, recipe.provenance)
    if image_first:
        check_image_first(recipe.model.entry, contract, recipe.loop)
    alg = recipe.algorithm
    parts = check_algorithm(alg)
    if bool(getattr(parts.estimator, "rollout_fields", ())) != multi_turn:
        multi = [n for n in ADVANTAGE_ESTIMATORS.list() if getattr(ADVANTAGE_ESTIMATORS.get(n), "rollout_fields", ())]
        if multi_turn:
            raise RecipeError(f"algorithm.adv_estimator={alg.adv_estimator!r} is single-turn; engine vlm-semi-online "
                              f"runs the multi-turn estimators ({', '.join(multi)}): use engine: vlm-trl")  # fmt: skip
        raise RecipeError(f"algorithm.adv_estimator={alg.adv_estimator!r} needs a multi-turn rollout, "
                          f"which {recipe.loop} does not run; use engine: vlm-semi-online")  # fmt: skip
    return VLMChecked(contract=contract, algorithm=parts, rewards=resolve_rewards(recipe.rewards))


def _check_plugins(recipe: VLMRecipe) -> None:
    """Each rollout plug-in is registered, takes its kwargs and accepts the recipe; at most one picks the rows."""
    from zoo.engines.vlm.plugins import build_plugin

    selecting = []
    for i, spec in enumerate(recipe.algorithm.plugins):
        try:
            plugin = build_plugin(spec.name, spec.kwargs)
            plugin.check_recipe(recipe)
        except (UnknownNameError, TypeError, ValueError) as err:
            raise RecipeError(f"algorithm.plugins[{i}] ({spec.name}): {err}") from None
        selecting += [spec.name] if plugin.selects_rows else []
    if len(selecting) > 1:
        raise RecipeError(f"algorithm.plugins: {selecting} each choose the rows to train; keep one of them")


def _finish(recipe: VLMRLRecipe | SFTRecipe) -> None:
    """The last two checks of every VLM engine: the launch config exists and the provenance rows cover the recipe."""
    check_launch(recipe.launch)
    check_provenance(recipe)


def check_trl(recipe: VLMRecipe) -> VLMChecked:
    """Engine ``vlm-trl``: the shared names, then importance sampling against the loss row, the plug-ins and the
    rollout backend."""
    from zoo.engines.vlm.rollout import check_backend

    checked = _check_rl(recipe, multi_turn=False, image_first=True)
    if recipe.rollout.importance_sampling and checked.algorithm.loss.sequence_level:
        raise RecipeError(f"rollout.importance_sampling weights tokens; loss_type={recipe.algorithm.loss_type!r} is "
                          "sequence-level")  # fmt: skip
    _check_plugins(recipe)
    check_backend(recipe.rollout.backend)
    _finish(recipe)
    return checked


def check_semi_online(recipe: SemiOnlineRecipe) -> VLMChecked:
    """Engine ``vlm-semi-online``: the shared names with a multi-turn estimator, then the expert's answer format."""
    from zoo.data import ANSWER_FORMATS

    checked = _check_rl(recipe, multi_turn=True, image_first=False)
    try:
        ANSWER_FORMATS.canonical(recipe.multi_turn.expert_format)
    except UnknownNameError as err:
        raise RecipeError(f"multi_turn.expert_format: {err}") from None
    _finish(recipe)
    return checked


def check_verl(recipe: VerlRecipe) -> VLMChecked:
    """Engine ``vlm-verl``: the shared names (single-turn, images first); verl builds its own rollout."""
    checked = _check_rl(recipe, multi_turn=False, image_first=True)
    _finish(recipe)
    return checked


def check_sft(recipe: SFTRecipe) -> SFTChecked:
    """Engine ``vlm-sft``: the data and its answer format, the entry's contract (images first unless the data is
    trajectories, which the multi-turn dialogue lays out as the entry does)."""
    from zoo.data import answer_format

    check_training_data(recipe.data)
    try:
        answer = answer_format(recipe.data.answer_format)
    except UnknownNameError as err:
        raise RecipeError(f"data.answer_format: {err}") from None
    contract = check_entry(recipe.model, recipe.data.system_prompt, recipe.provenance)
    if not recipe.data.multi_turn:
        check_image_first(recipe.model.entry, contract, "the single-turn SFT loop")
    _finish(recipe)
    return SFTChecked(contract=contract, answer=answer)
