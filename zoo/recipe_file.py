"""A recipe file as a mapping, and the error every recipe problem raises.

Reading the file sits below both users of it: :mod:`zoo.recipe` types the mapping into an engine's
dataclass and checks its provenance with :mod:`zoo.provenance`, and :mod:`zoo.provenance` reads the
shipped recipes to find which of them reproduce an entry. Callers import both names from
:mod:`zoo.recipe`, where the rest of the recipe machinery is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from zoo import bounded_yaml


class RecipeError(ValueError):
    """A recipe file or override that does not fit the schema; the message says how to fix it."""


#: Largest recipe file read (bytes); the biggest shipped recipe is a few kB.
MAX_RECIPE_BYTES = 1 << 20


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A recipe file as a mapping; a missing, oversized or non-mapping file is a :class:`RecipeError`."""
    path = Path(path)
    if not path.is_file():
        raise RecipeError(f"recipe file {str(path)!r} does not exist; pass the path to a .yaml recipe")
    if path.stat().st_size > MAX_RECIPE_BYTES:
        raise RecipeError(f"recipe {str(path)!r} is {path.stat().st_size} bytes; a recipe is at most {MAX_RECIPE_BYTES}")
    try:
        data = bounded_yaml.load(path.read_text(encoding="utf-8")) or {}
    except bounded_yaml.YAMLLimitError as err:
        raise RecipeError(f"recipe {str(path)!r} {err}") from err
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as err:
        raise RecipeError(f"recipe {str(path)!r} is not valid YAML (or nested too deeply): {err}") from err
    if not isinstance(data, dict):
        raise RecipeError(f"recipe {str(path)!r} must be a YAML mapping, got {type(data).__name__}")
    return data
