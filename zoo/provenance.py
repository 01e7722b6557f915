"""Where every setting of a recipe that claims the authors' run comes from, and whether it is theirs.

A recipe with ``reproduces: <entry>`` says it is that model's authors' training run. It then carries a
``provenance:`` map with a row for every setting of its *resolved* recipe (the fields it writes and the engine
defaults it leaves, i.e. what a run's ``recipe.yaml`` holds), except the few that cannot change what is trained
(:data:`RUN_NEUTRAL`). A row maps the dotted path of a field (a parent path covers its subtree, e.g. ``rewards``;
the most specific row wins) to one of three forms:

* a source string, one of

  * the authors' code: ``owner/repo@<commit>:path[:line[-line][,line...]]`` and what the lines say;
  * the paper: ``arXiv:<id> <section, table or equation>``;
  * a page: an ``https://`` URL (a Hub card at a commit, a dataset card) and what it says;
  * a difference: ``zoo: <why the zoo differs from the authors>``;
  * a command-line change: ``user: --set key=value`` (written by :func:`record_overrides` into the run's
    ``recipe.yaml``, so a run directory says which settings were no longer the authors');

* the authors' value with its source, ``{authors: <their value as they wrote it, or what their expression or flag
  sets>, source: <a source string>}``:
  a cited source (code, paper, page) then claims the recipe holds that value, and :func:`check` compares the two
  (numbers numerically, so ``1e-6`` equals ``1.0e-6``; strings, flags, lists and mappings exactly). On a ``zoo:``
  row it records what the zoo differs from. A cited row of a number or a flag must take this form; a plain cited
  string stays legal where the value is the zoo's own spelling of what the authors do (a dataset, reward or loss
  name the authors do not have, a list of reward specs) and the row says in words what it maps;
* not set by the authors, ``{unset: <why>}``: the authors' code has no such setting (a zoo feature left off, such
  as LoRA in a full fine-tune), so the zoo's value neither matches nor departs from theirs.

:func:`check` refuses a reproducing recipe with an uncovered setting, a row for a field the recipe does not have, a
row in none of these forms, or a cited value that is not the recipe's; ``zoo info``, model cards and the docs
pages count and list the differences (:func:`describe`, :func:`rows`) before the unset and cited rows. The contract
test ``tests/contract/test_provenance.py`` runs :func:`check` over every shipped recipe, resolved, and keeps "the
authors' settings" out of any text whose recipe is not complete (:func:`claims_authors`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

#: Keys a recipe sets that describe the recipe itself rather than the run; they need no source (``authors_run``
#: states the authors' batch, release commit and the differences that are not recipe fields, in words).
UNCITED_KEYS = frozenset({"name", "engine", "description", "reproduces", "provenance", "changes", "authors_run"})

#: Settings that cannot change what a run trains, so a reproducing recipe needs no row for them: where the run is
#: written, how often it saves and logs, how many CPU threads compute it, where the EMA copy lives (not its values),
#: and what it evaluates on held-out data (evaluation measures the weights, it does not train them). Paths cover
#: their subtrees.
RUN_NEUTRAL = frozenset({
    "training.output_dir", "training.save_steps", "training.save_total_limit", "training.logging_steps",
    "training.num_threads", "training.ema_device",
    "training.eval_every", "training.eval_seed", "training.eval_episodes", "algorithm.eval_num_steps",
    "data.eval_name", "data.eval_kwargs", "data.allow_eval_data", "data.eval_data_reason",
    "prompts.eval", "prompts.data.eval_name", "prompts.data.eval_kwargs", "prompts.data.allow_eval_data",
    "prompts.data.eval_data_reason",
})  # fmt: skip

_CODE = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{7,40}:[^\s:]+(:\d+(-\d+)?(,\d+(-\d+)?)*)?(\s.*)?$")
_PAPER = re.compile(r"^arXiv:\d{4}\.\d{4,5}(v\d+)?\s+\S.*$")
_PAGE = re.compile(r"^https://\S+(\s.*)?$")
_DIFFERENCE = re.compile(r"^zoo:\s*\S.*$")
_USER = re.compile(r"^user:\s*\S.*$")
_CITED = ("code", "paper", "page")
_FORMS = ("a source string, {authors: <their value>, source: <source>} or {unset: <why the authors' code has no "
          "such setting>}")  # fmt: skip
#: What a text says when it claims a run is the authors' own (checked against the recipe it names); "not the
#: authors' run" and "as in the authors' run" (one aspect that matches) claim nothing.
AUTHORS_CLAIM = re.compile(r"(?<!\bnot )(?<!\bin )the authors['’] (released )?(settings|run|recipe)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Row:
    """One provenance row: a field path, its source (or, for an unset row, why the authors have no such setting),
    and the authors' value when the row records it (``has_authors``)."""

    field: str
    source: str
    authors: Any = None
    has_authors: bool = False
    unset: bool = False

    @classmethod
    def parse(cls, field: str, value: Any) -> Row:
        """A row from its YAML value in one of the three forms; ``ValueError`` naming them (or the source forms)."""
        if isinstance(value, Mapping) and set(value) == {"unset"} and str(value["unset"] or "").strip():
            return cls(field, str(value["unset"]).strip(), unset=True)
        if isinstance(value, str):
            row = cls(field, value)
        elif isinstance(value, Mapping) and set(value) == {"authors", "source"} and isinstance(value["source"], str):
            row = cls(field, value["source"], authors=value["authors"], has_authors=True)
        else:
            raise ValueError(f"{value!r} is not a provenance row: write {_FORMS}")
        source_kind(row.source)
        return row

    @property
    def kind(self) -> str:
        """``code``, ``paper``, ``page``, ``zoo`` (a difference), ``user`` (a command-line change) or ``unset``."""
        return "unset" if self.unset else source_kind(self.source)

    @property
    def differs(self) -> bool:
        """True for a row that says the run is not the authors' here (``zoo:`` or ``user:``)."""
        return self.kind in ("zoo", "user")

    @property
    def cited(self) -> bool:
        """True for a row that says the setting is the authors' (their code, paper or a page)."""
        return self.kind in _CITED

    @property
    def why(self) -> str:
        """A difference's reason (the text after ``zoo:`` or ``user:``), or why the authors have no such setting."""
        return self.source if self.unset else self.source.split(":", 1)[1].strip()

    @property
    def text(self) -> str:
        """The row in one line, as docs pages and cards print it."""
        if self.unset:
            return f"not set by the authors: {self.source}"
        return f"authors: {self.authors!r}; {self.source}" if self.has_authors else self.source


def source_kind(source: str) -> str:
    """The form of a provenance source; ``ValueError`` naming the forms when it is none of them."""
    text = str(source).strip()
    for kind, pattern in (("code", _CODE), ("paper", _PAPER), ("page", _PAGE), ("zoo", _DIFFERENCE), ("user", _USER)):
        if pattern.match(text):
            return kind
    raise ValueError(f"{text!r} is not a source: write owner/repo@<commit>:path[:line[-line][,line]], "
                     "arXiv:<id> <section>, an https:// URL and what it says, or 'zoo: <why it differs>'")  # fmt: skip


def same_value(authors: Any, ours: Any) -> bool:
    """Whether the authors' value, as they wrote it, is the recipe's: numbers numerically (``1e-6`` written as a
    string by YAML still equals ``1.0e-6``), flags, strings and ``null`` exactly, lists and mappings item by item."""
    if isinstance(ours, Mapping) or isinstance(authors, Mapping):
        return (isinstance(ours, Mapping) and isinstance(authors, Mapping) and set(ours) == set(authors)
                and all(same_value(authors[k], ours[k]) for k in ours))  # fmt: skip
    if isinstance(ours, list | tuple) or isinstance(authors, list | tuple):
        return (isinstance(ours, list | tuple) and isinstance(authors, list | tuple) and len(ours) == len(authors)
                and all(same_value(a, b) for a, b in zip(authors, ours, strict=True)))  # fmt: skip
    if isinstance(ours, bool) or isinstance(authors, bool):
        return authors is ours
    a, b = _number(authors), _number(ours)
    if a is not None and b is not None and (isinstance(ours, int | float) or isinstance(authors, int | float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    return authors == ours


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a number or a string YAML left unparsed (``1e-6``), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value) if isinstance(value, str) else None
    except ValueError:
        return None


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


def _covering(found: list[Row], path: str) -> Row | None:
    """The most specific row whose field covers ``path``."""
    return max((row for row in found if _covers(row.field, path)), key=lambda row: len(row.field), default=None)


def check(data: Mapping[str, Any]) -> list[str]:
    """What is wrong with a recipe mapping's provenance (empty when it is complete or claims nothing).

    ``data`` is best the resolved recipe (:meth:`zoo.recipe.Recipe.to_dict`: every field, defaults included), as
    :meth:`zoo.recipe.Recipe.from_dict` passes it: then a reproducing recipe must cover every setting it runs with,
    not only those its file writes. Every recipe's rows must name its fields and take one of the row forms; a cited
    row must record the authors' value for a number or a flag, and a recorded value must be the recipe's."""
    table = data.get("provenance") or {}
    if not isinstance(table, Mapping):
        return [f"provenance must map field paths to sources, got {type(table).__name__}"]
    fields = set_fields(data)
    problems, found = [], []
    for key, value in table.items():
        try:
            row = Row.parse(str(key), value)
        except ValueError as err:
            problems.append(f"provenance.{key}: {err}")
            continue
        found.append(row)
        if not any(_covers(row.field, path) for path in fields):
            problems.append(f"provenance.{key}: the recipe has no such field")
        else:
            overridden = any(str(k) != row.field and _covers(row.field, str(k)) for k in table)
            problems += _value_problems(row, data, overridden)
    hidden: dict[str, list[str]] = {}  # a cited parent row without a value over numbers or flags it would hide
    for path in fields:
        row = _covering(found, path)
        if (row is not None and row.cited and row.field != path and not row.has_authors
                and _is_scalar(_leaf(data, path)) and not _neutral(path)):  # fmt: skip
            hidden.setdefault(row.field, []).append(path)
    problems += [f"provenance.{key}: it covers numbers or flags without the authors' value: give each its own row "
                 f"({', '.join(paths)})" for key, paths in hidden.items()]  # fmt: skip
    if data.get("reproduces"):
        uncovered = [path for path in fields
                     if not any(_covers(row.field, path) for row in found) and not _neutral(path)]  # fmt: skip
        if uncovered:
            problems.append(f"reproduces {data['reproduces']!r} but these settings have no provenance row (cite "
                            f"them, mark a difference or {{unset: why}}): {', '.join(uncovered)}")  # fmt: skip
    return problems


def _value_problems(row: Row, data: Mapping[str, Any], rows_under: bool) -> list[str]:
    """A cited row's value problems: a number or flag cited without the authors' value, or a recorded value that is
    not the recipe's (unless ``rows_under`` it, e.g. ``user:`` rows of ``--set``, take part of its subtree)."""
    if not row.cited:
        return []
    ours = _leaf(data, row.field)
    if not row.has_authors:
        if _is_scalar(ours):
            return [f"provenance.{row.field}: a cited number or flag records the authors' value: write "
                    f"{{authors: <their value>, source: {row.source!r}}}"]  # fmt: skip
        return []
    if rows_under or same_value(row.authors, ours):
        return []
    return [f"provenance.{row.field}: the authors' value is {row.authors!r} but the recipe's is {ours!r}; set the "
            "authors' value, or make the row a difference ('zoo: why')"]  # fmt: skip


def _neutral(path: str) -> bool:
    """Whether ``path`` is a setting that cannot change what a run trains (:data:`RUN_NEUTRAL`)."""
    return any(_covers(neutral, path) for neutral in RUN_NEUTRAL)


def _is_scalar(value: Any) -> bool:
    """A number or a flag: a value a cited row must record the authors' side of."""
    return isinstance(value, bool | int | float)


def rows(provenance: Mapping[str, Any]) -> list[Row]:
    """The rows, differences first (``zoo:`` then ``user:``), then the unset ones, then the cited ones, each group
    in file order; a malformed row raises ``ValueError`` (:func:`check` names them all)."""
    order = {"zoo": 0, "user": 1, "unset": 2}
    found = [Row.parse(str(key), value) for key, value in provenance.items()]
    return sorted(found, key=lambda row: order.get(row.kind, 3))


def record_overrides(provenance: Mapping[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
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


def describe(provenance: Mapping[str, Any], reproduces: str, *, cited_rows: bool = True) -> list[str]:
    """Lines for ``zoo info`` and cards: the differences first, then the settings the authors do not have, then
    every cited row with the authors' value where it records one (the last two unless ``cited_rows=False``)."""
    if not reproduces and not provenance:
        return []
    found = rows(provenance)
    diff = [row for row in found if row.differs]
    unset = [row for row in found if row.unset]
    cited = [row for row in found if row.cited]
    counts = f"{len(diff)} differ, {len(unset)} not set by the authors"
    lines = [f"reproduces {reproduces}: {len(cited)} settings cited to the authors, {counts}"
             if reproduces else f"{len(cited)} settings cited, {len(diff)} differences noted"]  # fmt: skip
    lines += [f"  differs  {row.field}: {row.why}" for row in diff]
    if cited_rows:
        lines += [f"  unset    {row.field}: {row.why}" for row in unset]
        lines += [f"  cited    {row.field}: {row.text}" for row in cited]
    return lines
