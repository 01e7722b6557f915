"""``--resume`` continues the same run: settings that differ from the run's ``recipe.yaml`` are refused unless the
user asks for them (``zoo train ... --resume --resume-changes``), and then recorded as a change at the step the run
resumes from, never as the settings the whole run had (review-reliability 10.8: a resume with another learning rate
rewrote ``recipe.yaml`` as if the run had always used it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zoo.recipe import Recipe

#: Settings a resume may change without it being a change of the run: where the run directory is, how the run is
#: placed on devices (``launch``: a sharded checkpoint resumes on one process where the engine allows; an engine that
#: cannot continue with another process count says so), the provenance rows (``--set`` adds ``user:`` rows beside the
#: values it changes, which are compared), and the history itself.
NOT_SETTINGS = ("training.output_dir", "launch", "provenance", "changes")
#: Settings a resume changes without being asked to, recorded all the same: the run's length (continuing a run for
#: more steps is what ``--resume`` is for; a schedule over the run's steps then changes from the resumed step on).
RECORDED_WITHOUT_ASKING = ("training.steps",)


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"training": {"lr": 1e-3}}`` as ``{"training.lr": 1e-3}`` (lists stay values)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{path}."))
        else:
            out[path] = value
    return out


def differences(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The settings whose values differ, by dotted path: ``{path: (before, after)}`` (absent: ``None``)."""
    old, new = flatten(before), flatten(after)
    paths = [p for p in dict.fromkeys([*old, *new]) if not any(p == n or p.startswith(f"{n}.") for n in NOT_SETTINGS)]
    return {p: (old.get(p), new.get(p)) for p in paths if old.get(p) != new.get(p)}


def continued(recipe: Recipe, recorded: Mapping[str, Any], *, step: int, accept: bool) -> Recipe:
    """``recipe`` as the resume of the run whose ``recipe.yaml`` held ``recorded``, with the run's history: changed
    settings are a :class:`~zoo.recipe.RecipeError` naming them, or with ``accept`` (and for
    :data:`RECORDED_WITHOUT_ASKING` always) one more entry of :attr:`~zoo.recipe.Recipe.changes` (``step`` and the
    values ``before``)."""
    from zoo.recipe import RecipeError

    history = tuple(recorded.get("changes") or ())
    changed = differences(recorded, recipe.to_dict())
    asked = {path: values for path, values in changed.items() if path not in RECORDED_WITHOUT_ASKING}
    if asked and not accept:
        listed = "; ".join(f"{path}: {old!r} -> {new!r}" for path, (old, new) in asked.items())
        raise RecipeError(f"--resume continues the run as it was, and these settings differ from its recipe.yaml: "
                          f"{listed}. Resume with the run's own settings (drop those --set, or zoo train "
                          f"RUN_DIR/recipe.yaml --resume), or add --resume-changes to continue with yours, recorded "
                          f"in recipe.yaml as a change at step {step}")  # fmt: skip
    if changed:
        history += ({"step": step, "before": {path: old for path, (old, _) in changed.items()}},)
    return dataclasses.replace(recipe, changes=history)
