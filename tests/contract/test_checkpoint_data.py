"""Nothing in a shipped checkpoint folder names code to import: its files are weights and data.

``zoo load``, ``zoo card`` and ``zoo push`` read these folders; a ``"package.module:attr"`` string in
one would be code a colleague's copy could swap. The one exception is a recipe recorded as it ran
(``measurements.recipe*`` of the training record): history of the run, which no command resolves.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from zoo.hub import CHECKPOINTS_DIR

IMPORT_STRING = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")
JSON_FILES = sorted(p for p in CHECKPOINTS_DIR.rglob("*.json") if p.is_file())


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")
    elif isinstance(value, str):
        yield where, value


def code_named(value: Any) -> list[str]:
    """``where: string`` for every string in ``value`` that names an importable module's attribute."""
    found = []
    for where, text in _strings(value, ""):
        if re.match(r"^\.measurements\.recipe", where) or not IMPORT_STRING.match(text):
            continue
        module = text.split(":")[0]
        try:
            importable = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            importable = False
        if importable:
            found.append(f"{where}: {text}")
    return found


def test_the_scan_finds_a_hook() -> None:
    assert code_named({"card": "lab.gui.card:write_card", "model": {"name": "tiny:qwen2_5_vl"}}) == [
        ".card: lab.gui.card:write_card"]  # fmt: skip


@pytest.mark.parametrize("path", JSON_FILES, ids=lambda p: str(p.relative_to(CHECKPOINTS_DIR)))
def test_no_checkpoint_file_names_code(path: Path) -> None:
    assert code_named(json.loads(path.read_text())) == []
