"""Where every setting of a recipe that claims the authors' run comes from.

A recipe with ``reproduces: <entry>`` says it is that model's authors' training run. It then carries
a ``provenance:`` map with a row for every field the file sets: the dotted path of the field (a
parent path covers its subtree, e.g. ``rewards``) to its source, one of

* the authors' code: ``owner/repo@<commit>:path[:line[-line]]``;
* the paper: ``arXiv:<id> <section, table or equation>``;
* a page: an ``https://`` URL (a Hub card at a commit, a dataset card) and what it says;
* a difference: ``zoo: <why the zoo differs from the authors>``;
* a command-line change: ``user: --set key=value`` (written by :func:`record_overrides` into the run's
  ``recipe.yaml``, so a run directory says which settings were no longer the authors').

:func:`check` refuses a reproducing recipe with an uncited field, a row for a field the file does not
set, or a source in none of these forms; ``zoo info`` and model cards list the differences
(:func:`describe`) before the cited rows. The contract test ``tests/contract/test_provenance.py``
runs :func:`check` over every shipped recipe and keeps "the authors' settings" out of any text whose
recipe is not complete (:func:`claims_authors`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

#: Keys a recipe sets that describe the recipe itself rather than the run; they need no source.
UNCITED_KEYS = frozenset({"name", "engine", "description", "reproduces", "provenance", "changes"})

_CODE = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{7,40}:[^\s:]+(:\d+(-\d+)?)?(\s.*)?$")
_PAPER = re.compile(r"^arXiv:\d{4}\.\d{4,5}(v\d+)?\s+\S.*$")
_PAGE = re.compile(r"^https://\S+(\s.*)?$")
_DIFFERENCE = re.compile(r"^zoo:\s*\S.*$")
_USER = re.compile(r"^user:\s*\S.*$")
#: What a text says when it claims a run is the authors' own (checked against the recipe it names); "not the
#: authors' run" and "as in the authors' run" (one aspect that matches) claim nothing.
AUTHORS_CLAIM = re.compile(r"(?<!\bnot )(?<!\bin )the authors['’] (released )?(settings|run|recipe)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Row:
    """One provenance row: a field path and its source, with the source's kind."""

    field: str
    source: str

    @property
    def kind(self) -> str:
        """``code``, ``paper``, ``page``, ``zoo`` (a difference) or ``user`` (a command-line change)."""
        return source_kind(self.source)

    @property
    def differs(self) -> bool:
        """True for a row that says the run is not the authors' here (``zoo:`` or ``user:``)."""
        return self.kind in ("zoo", "user")

    @property
    def why(self) -> str:
        """A difference's reason: the text after ``zoo:`` or ``user:``."""
        return self.source.split(":", 1)[1].strip()


def source_kind(source: str) -> str:
    """The form of a provenance source; ``ValueError`` naming the forms when it is none of them."""
    text = str(source).strip()
    for kind, pattern in (("code", _CODE), ("paper", _PAPER), ("page", _PAGE), ("zoo", _DIFFERENCE), ("user", _USER)):
        if pattern.match(text):
            return kind
    raise ValueError(f"{text!r} is not a source: write owner/repo@<commit>:path[:line], arXiv:<id> <section>, "
                     "an https:// URL and what it says, or 'zoo: <why the zoo differs>'")  # fmt: skip


def set_fields(data: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths of the leaves a recipe mapping sets (a list or an empty mapping is one leaf)."""
    out: list[str] = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        if not prefix and key in UNCITED_KEYS:
            continue
        if isinstance(value, Mapping) and value:
            out.extend(set_fields(value, path + "."))
        else:
            out.append(path)
    return out


def _leaf(data: Mapping[str, Any], path: str) -> Any:
    """The value at dotted ``path`` of a mapping (tuples as lists, as YAML reads them)."""
    value: Any = data
    for part in path.split("."):
        value = value[part]
    return list(value) if isinstance(value, tuple) else value


def _covers(key: str, path: str) -> bool:
    return path == key or path.startswith(key + ".")


def check(data: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> list[str]:
    """What is wrong with a recipe mapping's provenance (empty when it is complete or claims nothing).

    A recipe without ``reproduces`` claims nothing and may carry a partial map (rows are still checked). A field the
    mapping sets to its class's default (``defaults``: dotted path -> value) needs no row: a run's resolved
    ``recipe.yaml`` writes every field, and must read back as the recipe it ran."""
    rows = data.get("provenance") or {}
    problems = []
    if not isinstance(rows, Mapping):
        return [f"provenance must map field paths to sources, got {type(rows).__name__}"]
    fields = set_fields(data)
    for key, source in rows.items():
        try:
            source_kind(source)
        except ValueError as err:
            problems.append(f"provenance.{key}: {err}")
        if not any(_covers(str(key), path) for path in fields):
            problems.append(f"provenance.{key}: the recipe sets no such field")
    if data.get("reproduces"):
        defaults = defaults or {}
        uncited = [path for path in fields if not any(_covers(str(key), path) for key in rows)
                   and not (path in defaults and _leaf(data, path) == defaults[path])]  # fmt: skip
        if uncited:
            problems.append(f"reproduces {data['reproduces']!r} but these fields have no provenance row: "
                            f"{', '.join(uncited)}")  # fmt: skip
    return problems


def rows(provenance: Mapping[str, str]) -> list[Row]:
    """The rows, differences first (``zoo:`` then ``user:``), then cited ones, each group in file order."""
    order = {"zoo": 0, "user": 1}
    found = [Row(str(key), str(value)) for key, value in provenance.items()]
    return sorted(found, key=lambda row: order.get(_kind_or_bad(row.source), 2))


def _kind_or_bad(source: str) -> str:
    try:
        return source_kind(source)
    except ValueError:
        return "bad"


def record_overrides(provenance: Mapping[str, str], overrides: Iterable[str]) -> dict[str, str]:
    """``provenance`` with a ``user:`` row for each ``key=value`` override: the rows of the field and of
    everything under it are replaced (a parent row keeps covering the rest of its subtree)."""
    out = dict(provenance)
    for override in overrides:
        key, _, value = override.partition("=")
        key = key.strip()
        if not key or key.split(".")[0] in UNCITED_KEYS:
            continue
        for replaced in [k for k in out if _covers(key, k)]:
            del out[replaced]
        out[key] = f"user: --set {key}={' '.join(value.split())}"  # one line, whatever the value held
    return out


def claims_authors(text: str) -> bool:
    """True when ``text`` says a run is the authors' own (their settings, their run, their recipe)."""
    return bool(AUTHORS_CLAIM.search(text))


def reproducing_recipes(entry: str) -> list[Path]:
    """The shipped recipes whose ``reproduces`` names ``entry`` (any domain's recipes folder).

    Cards and ``zoo info`` ask this for every entry, so each file is parsed once (again when it changes)."""
    from zoo.domains import discover

    found = []
    for domain in discover():
        for path in domain.recipe_files():
            stat = path.stat()
            if _reproduces(path, stat.st_mtime_ns, stat.st_size) == entry:
                found.append(path)
    return found


@cache
def _reproduces(path: Path, mtime_ns: int, size: int) -> str:
    """The ``reproduces`` of the recipe at ``path``; ``mtime_ns`` and ``size`` key the cache to its content."""
    from zoo.recipe_file import read_yaml

    return str(read_yaml(path).get("reproduces", ""))


def describe(provenance: Mapping[str, str], reproduces: str, *, cited_rows: bool = True) -> list[str]:
    """Lines for ``zoo info`` and cards: the differences first, then every cited row (unless ``cited_rows=False``)."""
    if not reproduces and not provenance:
        return []
    found = rows(provenance)
    diff = [row for row in found if row.differs]
    cited = [row for row in found if not row.differs]
    lines = [f"reproduces {reproduces}: {len(cited)} settings cited to the authors, {len(diff)} differ"
             if reproduces else f"{len(cited)} settings cited, {len(diff)} differences noted"]  # fmt: skip
    lines += [f"  differs  {row.field}: {row.why}" for row in diff]
    lines += [f"  cited    {row.field}: {row.source}" for row in cited] if cited_rows else []
    return lines
