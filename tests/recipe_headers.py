"""What a recipe file's comment header says, for tests that hold a recipe to its own words."""

from __future__ import annotations

from pathlib import Path

#: The sentence a GPU recipe's header carries when the memory plan cannot size it (issue 53: a recipe that has no
#: per-GPU figure says why where a user reads it).
UNPLANNED = "`zoo train --plan` cannot size this recipe"


def header(path: str | Path) -> str:
    """The recipe file's leading comment lines, joined."""
    return "".join(line for line in Path(path).read_text().splitlines(keepends=True) if line.startswith("#"))


def says_unplanned(path: str | Path) -> bool:
    """Whether the recipe's header says that ``--plan`` cannot size it (and, in the same sentence, why)."""
    return UNPLANNED in header(path)
