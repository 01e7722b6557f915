"""The checks every engine's ``check(recipe)`` shares: the parts of a recipe that name something outside it.

A recipe's own fields (numbers, enums, shapes) are checked when it is read (:mod:`zoo.recipe`); what its names
resolve to is checked here, once, by the engine's check step (:meth:`zoo.engines.Engine.check_recipe`), before
anything is written or loaded: the training data (which the domains may mark as a benchmark's), the rewards, the
launch config and the provenance rows. Each raises :class:`~zoo.recipe.RecipeError` with the fix.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from zoo import provenance
from zoo.recipe import DataConfig, Recipe, RecipeError, RewardSpec
from zoo_common.registry import UnknownNameError

logger = logging.getLogger(__name__)

#: Loader arguments that name a split or a benchmark category (``PubMed_test``, ``split: test``).
SPLIT_KEYS = ("split", "category", "subset")
#: Loader arguments that name the data's files or folder: one whose own name says test (``test_metadata.jsonl``,
#: ``refcoco_testA.json``, a ``test/`` folder) is a test split too; the folders above it are not read.
PATH_KEYS = ("path", "root", "annotations", "image_root")
#: "test" or "evaluation" starting a word (``test``, ``PubMed_test``, ``evaluation_std``), not inside one (``latest``).
_TEST_WORD = re.compile(r"(?<![a-z])(test|evaluation)")


def check_training_data(data: DataConfig, where: str = "data") -> None:
    """``data`` names a registered dataset, and one that is no evaluation data unless the recipe says why
    (``allow_eval_data`` with its reason): scores measured on it after training would be inflated, and a reader of
    the run could not tell. An empty ``name`` (prompts given inline) passes."""
    from zoo.data import DATASETS

    if data.name:
        try:
            DATASETS.canonical(data.name)
        except UnknownNameError as err:
            raise RecipeError(f"{where}.name: {err}") from None
    found = _eval_data(data.name, data.kwargs)
    if found and not data.allow_eval_data:
        raise RecipeError(
            f"{where} {', '.join(found)} is evaluation data: numbers measured on it after training are not "
            f"held-out results. Train on a training split (or your own data) and keep it for `zoo eval`, or "
            f"set {where}.allow_eval_data: true with {where}.eval_data_reason"
        )
    if found:
        logger.warning("training on evaluation data (%s): %s", ", ".join(found), data.eval_data_reason)


def _eval_data(name: str, kwargs: dict[str, Any]) -> list[str]:
    """What marks a training dataset as evaluation data: a split or file named test, or a dataset that
    reads a benchmark's own files (a domain's ``eval_datasets``)."""
    named = [f"{key}={kwargs[key]!r}" for key in SPLIT_KEYS if _TEST_WORD.search(str(kwargs.get(key, "")).lower())]
    named += [f"{key}={value!r}" for key, value in kwargs.items() if key in PATH_KEYS
              and any(_TEST_WORD.search(Path(str(one)).stem.lower()) for one in _as_list(value))]  # fmt: skip
    if _TEST_WORD.search(name.lower()) or (name and name in _benchmark_datasets()):
        named.append(f"dataset {name!r}")
    return named


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _benchmark_datasets() -> set[str]:
    from zoo.domains import discover

    return {name for domain in discover() for name in domain.eval_datasets}


def resolve_rewards(specs: Sequence[RewardSpec]) -> tuple[Any, ...]:
    """What the reward table holds under each spec's name, not yet built: building one may start a render pool or
    load an encoder, which is the loop's to do (:meth:`~zoo.recipe.RewardSpec.configure`)."""
    from rewards.base import get

    found = []
    for i, spec in enumerate(specs):
        try:
            found.append(get(spec.name))
        except UnknownNameError as err:
            raise RecipeError(f"rewards[{i}].name: {err}") from None
    return tuple(found)


def check_launch(launch: str) -> None:
    """A named launch config exists (``zoo/launch/<launch>.yaml``); ``""`` is one process."""
    if not launch:
        return
    from zoo.launch import LaunchConfigError, config_path

    try:
        config_path(launch)
    except LaunchConfigError as err:
        raise RecipeError(f"launch: {err}") from None


def check_provenance(recipe: Recipe) -> None:
    """The provenance rows cover the resolved recipe (every field, defaults included) when it ``reproduces`` an entry,
    and every row names a field of it in one of the row forms (:func:`zoo.provenance.check`)."""
    problems = provenance.check(recipe.to_dict())
    if problems:
        raise RecipeError("; ".join(problems))
