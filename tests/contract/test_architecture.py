"""``ARCHITECTURE.md`` stays true: every file and symbol it names exists, every engine is in its table, every table it
calls a registry is one."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from zoo.engines import ENGINES

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "ARCHITECTURE.md").read_text()
# `path/to/file.py` or `path/to/file.py: symbol`
CITED = sorted(set(re.findall(r"`((?:zoo|rewards|domains|zoo_common|lab|tests)/[\w/.]+?\.py)(?:: (\w+))?`", TEXT)))


@pytest.mark.parametrize(("path", "symbol"), CITED, ids=[f"{p}:{s}" for p, s in CITED])
def test_every_cited_file_and_symbol_exists(path, symbol):
    assert (ROOT / path).is_file(), path
    if symbol:
        module = importlib.import_module(path.removesuffix(".py").replace("/", ".").removesuffix(".__init__"))
        assert hasattr(module, symbol), f"{path} has no {symbol}"


def test_engine_table_lists_every_engine_and_its_recipe_class():
    for name in ENGINES.list():
        engine = ENGINES.get(name)
        module, _, cls = engine.recipe.partition(":")
        assert f"| `{name}` |" in TEXT, f"ARCHITECTURE.md's engine table misses {name}"
        assert f"{module}.{cls}" in TEXT or cls in TEXT, f"ARCHITECTURE.md does not name {name}'s recipe class {cls}"


def test_every_table_it_calls_a_registry_is_one():
    """The "Tables" section's list: each dotted name imports and is a ``zoo_common`` Registry."""
    from zoo_common.registry import Registry

    section = TEXT.split("## Tables", 1)[1].split("\n## ", 1)[0]
    listed = section.split("first miss:", 1)[1].split("(each checked", 1)[0]
    tables = re.findall(r"`((?:zoo|rewards)\.[\w.]+\.[A-Z_]+)`", listed)
    assert len(tables) >= 15, tables
    for dotted in tables:
        module, _, name = dotted.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), name), Registry), dotted
