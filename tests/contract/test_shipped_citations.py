"""Nothing the library ships cites a file outside the repository.

A user who installs the packages (pyproject's ``packages.find`` and ``package-data``) gets these files and
nothing else: a pointer to the project's research notes (``research/…``, ``shared/docs/…``) is a source
they cannot open. Sources are cited where the reader can reach them: the authors' code at a commit,
a paper, a page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
#: The shipped packages and file kinds (pyproject.toml: packages.find include, package-data "*").
PACKAGES = ("zoo_common", "zoo", "rewards", "domains", "lab")
SUFFIXES = {".py", ".yaml", ".json", ".md"}
#: A path into the notes beside the checkout; ``research/`` only as a path's own start, so that a repository
#: named ``owner/some-research`` or ``xiaomi-research/…`` is not one.
OUTSIDE = re.compile(r"shared/docs|\.\./shared|(?<![\w./-])research/[\w.-]+")


def shipped_files() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*")
                  if p.suffix in SUFFIXES and p.is_file() and "__pycache__" not in p.parts)  # fmt: skip


def outside_citations(text: str) -> list[str]:
    """The citations of files outside the repository in ``text``."""
    return [m.group(0) for m in OUTSIDE.finditer(text)]


@pytest.mark.parametrize(
    ("text", "found"),
    [("facts: research/domain-driving-robot.md §2", ["research/domain-driving-robot.md"]),
     ("see ../shared/docs/STYLE.md", ["../shared"]),
     ("(`shared/docs/research/x.md`)", ["shared/docs"]),
     ("xiaomi-research/shuffle-r1@31d3ff0:README.md:47", []),
     ("om-ai-lab/VLM-R1@90052f4:src/eval/test_rec_r1.py:54", [])],
)  # fmt: skip
def test_the_scan_finds_notes_and_not_repositories(text: str, found: list[str]) -> None:
    assert outside_citations(text) == found


def test_no_shipped_file_cites_a_file_outside_the_repository() -> None:
    files = shipped_files()
    assert any(p.name == "entries.py" for p in files) and any(p.suffix == ".yaml" for p in files)
    hits = [f"{p.relative_to(ROOT)}:{n}: {c}" for p in files
            for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            for c in outside_citations(line)]  # fmt: skip
    assert not hits, "cite a source the user can reach, not the project's notes:\n" + "\n".join(hits)
