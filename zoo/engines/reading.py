"""Read a recipe file into its engine's recipe class: the one step of reading that needs the engine table.

:mod:`zoo.recipe` is the reader (YAML, overrides, typed coercion, a method's own settings class) and imports no
engine; this module asks :data:`zoo.engines.ENGINES` which class a file's ``engine:`` reads into, moves a recipe
between two engines' classes (``zoo train --engine``) and records ``--set`` overrides as ``user:`` provenance rows.
Nothing here resolves a dataset, an entry, a loss or a reward: that is the engine's check step
(:meth:`zoo.engines.Engine.check_recipe`), which ``zoo train`` calls right after this.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from zoo import provenance
from zoo.engines import ENGINES
from zoo.recipe import Recipe, RecipeError, field_types, plain
from zoo.recipe_file import read_yaml


def load_recipe(path: str | Path, overrides: list[str] | tuple[str, ...] = (), engine: str | None = None) -> Recipe:
    """Read any recipe: ``engine=`` (or an ``engine=...`` override, or the file's ``engine``) picks the class; the
    other overrides (``training.lr=1e-5``) win over the file and, in a recipe that ``reproduces`` an entry, become
    ``user:`` rows of its provenance, so the run's ``recipe.yaml`` says which settings are no longer the authors'."""
    data = read_yaml(path)
    rest = []
    for override in overrides:
        key, _, value = override.partition("=")
        if key.strip() == "engine":
            engine = engine or value.strip()
        else:
            rest.append(override)
    written = data.get("engine")
    if engine is not None:
        data["engine"] = engine
    if not data.get("engine"):
        raise RecipeError(f"recipe {str(path)!r} names no engine; add e.g. `engine: vlm-trl` (see `zoo engines`)")
    spec = ENGINES.get(str(data["engine"]))
    data["engine"] = spec.name
    if written and written != engine and engine is not None and written in ENGINES:
        _move_between_engines(data, ENGINES.get(str(written)).recipe_class(), spec.recipe_class())
    if data.get("reproduces") and rest and isinstance(data.get("provenance") or {}, dict):
        data["provenance"] = provenance.record_overrides(data.get("provenance") or {}, rest)
    return spec.recipe_class().from_dict(data, rest)


def load_checked(path: str | Path, overrides: list[str] | tuple[str, ...] = (),
                 engine: str | None = None) -> tuple[Recipe, Any]:  # fmt: skip
    """:func:`load_recipe`, then its engine's check (:meth:`zoo.engines.Engine.check_recipe`), as ``zoo train`` does
    before it writes anything: the recipe and what the check resolved, or the first :class:`RecipeError`."""
    recipe = load_recipe(path, overrides, engine)
    return recipe, ENGINES.get(recipe.engine).check_recipe(recipe)


def _is_default(value: Any, default: Any) -> bool:
    """``value`` sets nothing but defaults (a mapping may leave keys out)."""
    if isinstance(value, dict) and isinstance(default, dict):
        return all(k in default and _is_default(v, default[k]) for k, v in value.items())
    return value == default


def _move_between_engines(data: dict[str, Any], source: type, target: type) -> None:
    """Drop the blocks only ``source``'s loop reads when they hold its defaults (a resolved ``recipe.yaml``
    writes every block), so ``--engine`` moves a recipe between loops; a block set to anything else is
    refused by name, since the target loop would ignore it."""
    own = {f.name: f for f in dataclasses.fields(source)}
    for key in sorted(set(own) - set(field_types(target))):
        if key not in data:
            continue
        factory = own[key].default_factory
        default = own[key].default if factory is dataclasses.MISSING else factory()
        if not _is_default(plain(data[key]), plain(dataclasses.asdict(default) if dataclasses.is_dataclass(default)
                                                   else default)):  # fmt: skip
            raise RecipeError(f"{key}: {data[key]!r} is read by {source.__name__}'s loop only; engine "
                              f"{data['engine']!r} would ignore it: remove it to move the recipe")  # fmt: skip
        del data[key]
        provenance_rows = data.get("provenance")
        if isinstance(provenance_rows, dict):  # the dropped block's rows cite settings the moved recipe no longer has
            for row in [r for r in provenance_rows if r == key or str(r).startswith(f"{key}.")]:
                del provenance_rows[row]
