"""The recipe reference as a YAML reference: per engine, every key a recipe file can set, inherited ones included.

Each row is one dotted key (``training.steps``, ``rewards[].weight``, ``algorithm.clip_range``) with its type, its
default, the first sentence of the field's docstring and the shipped recipes (``domains/*/recipes/*.yaml``) that
set it. Keys come from the engine's recipe dataclass walked field by field (``dataclasses.fields`` includes what
``Recipe`` and ``TrainingBase`` define); a block chosen by a field (``algorithm.method``, a
:class:`zoo.recipe.ChoiceConfig`) lists the base's keys, then each registered method's own. Methods
(``validate``, ``build``) are no keys and never appear.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import html
import inspect
import re
import textwrap
import types
import typing
from collections.abc import Iterator
from typing import Any

#: A value absent from a recipe mapping (``None`` is a value a recipe can set).
_ABSENT = object()


@dataclasses.dataclass(frozen=True)
class Key:
    """One settable key: ``path`` (dotted), ``type`` as text, ``default`` as a table cell, ``doc`` its first sentence."""

    path: str
    type: str
    default: str
    doc: str


def recipe_reference(recipes: list[tuple[str, dict[str, Any]]], cell: typing.Callable[[Any], str]) -> str:
    """The whole page: one section per engine of ``zoo.engines.ENGINES``, each a table of its keys.

    ``recipes`` are ``(path, mapping)`` of the shipped recipe files; ``cell`` makes text safe in a table cell.
    """
    from zoo.engines import ENGINES

    lines = [
        "# Recipe reference",
        "",
        "A recipe is a YAML file; its `engine:` picks the dataclass it is read into. Below, per engine, every key a "
        "recipe can set (dotted: `training.steps` is `steps:` inside the `training:` block; `rewards[].name` is "
        "`name:` of each item of the `rewards:` list), with its type, its default, what it means (the field's "
        "docstring) and the shipped recipes that set it (`domains/*/recipes/*.yaml`). Generated from the "
        "dataclasses at build time; `zoo train RECIPE --set key=value` overrides any of them.",
        "",
    ]
    for name in ENGINES.list():
        engine = ENGINES.get(name)
        cls = engine.recipe_class()
        own = [(path, raw) for path, raw in recipes if raw.get("engine") == name]
        lines += [f"## `{name}`", "", f"{cell(engine.summary.rstrip('.'))}. Recipe class: `{cls.__module__}.{cls.__qualname__}`; "
                  f"{len(own)} shipped recipe{'s' if len(own) != 1 else ''}.", ""]  # fmt: skip
        lines += _table(list(keys(cls)), own, cell)
        for field_path, base in _choice_fields(cls):
            for method in base.choices.list():
                chosen = base.choices.get(method)
                extra = [k for k in keys(chosen, f"{field_path}.") if k.path not in {b.path for b in keys(base, f'{field_path}.')}]
                if not extra:
                    continue
                users = [(p, raw) for p, raw in own if _lookup(raw, f"{field_path}.{base.choice_field}") == method]
                lines += [f"### `{field_path}.{base.choice_field}: {method}`", "",
                          f"The keys `{chosen.__qualname__}` adds to the `{field_path}:` block above.", ""]  # fmt: skip
                lines += _table(extra, users, cell)
    return "\n".join(lines) + "\n"


def keys(cls: type, prefix: str = "") -> Iterator[Key]:
    """Every settable key of dataclass ``cls``, depth first; a nested dataclass block gives its own keys."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        nested, is_list = _nested(hint)
        path = f"{prefix}{field.name}"
        if nested is not None:
            yield from keys(nested, f"{path}[]." if is_list else f"{path}.")
            continue
        yield Key(path, type_text(hint), _default(field), docs.get(field.name, ""))


def _choice_fields(cls: type, prefix: str = "") -> Iterator[tuple[str, type]]:
    """``(dotted path, base class)`` of each block whose class a field of it chooses (``algorithm``)."""
    from zoo.recipe import ChoiceConfig

    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        nested, is_list = _nested(hints[field.name])
        if nested is None:
            continue
        path = f"{prefix}{field.name}{'[]' if is_list else ''}"
        if issubclass(nested, ChoiceConfig):
            yield path, nested
        yield from _choice_fields(nested, f"{path}.")


def _nested(hint: Any) -> tuple[type | None, bool]:
    """The dataclass a field holds (itself, optional, or a list/tuple of it) and whether it is a list of them."""
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return hint, False
    if origin in (list, tuple) and args and dataclasses.is_dataclass(args[0]) and isinstance(args[0], type):
        return args[0], True
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _nested(inner[0])
    return None, False


def type_text(hint: Any) -> str:
    """A type as a YAML writer reads it: ``int | None``, ``dict[str, Any]``, ``'hf' | 'vllm'``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_text(a) for a in args)
    if hint is type(None):
        return "None"
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join('...' if a is Ellipsis else type_text(a) for a in args)}]"
    return getattr(hint, "__name__", str(hint).replace("typing.", ""))


def _default(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "required"
    if dataclasses.is_dataclass(value):  # a chosen block's default: name what chose it
        return type(value).__name__
    return _code(repr(value))


def _code(text: str) -> str:
    """Inline code for a table cell: HTML, so that a ``|`` in it (``int | None``) neither splits the row nor shows the
    backslash a Markdown code span would keep."""
    return f"<code>{html.escape(text).replace('|', '&#124;')}</code>"


def field_docs(cls: type) -> dict[str, str]:
    """Field name -> first sentence of its docstring, over ``cls`` and its bases (a base's field keeps its words).

    Dataclass fields are documented by the string under them (an attribute docstring, read from the source with
    ``ast``) or, in classes that write them so, by the ``Attributes:`` section of the class docstring.
    """
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__[:-1]):
        docs.update(_attributes_section(klass.__doc__ or ""))
        docs.update(_attribute_docstrings(klass))
    return {name: first_sentence(text) for name, text in docs.items()}


@functools.cache
def _attribute_docstrings(klass: type) -> dict[str, str]:
    try:
        source = textwrap.dedent(inspect.getsource(klass))
    except (OSError, TypeError):  # a class built at run time has no source
        return {}
    body = next((n.body for n in ast.parse(source).body if isinstance(n, ast.ClassDef)), [])
    found = {}
    for node, after in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):  # fmt: skip
            found[node.target.id] = inspect.cleandoc(after.value.value)
    return found


def _attributes_section(doc: str) -> dict[str, str]:
    """``name: text`` items of a Google-style ``Attributes:`` section (``a, b: text`` documents both)."""
    section = re.search(r"^\s*Attributes:\n(.*?)(?:\n\s*\n|\Z)", inspect.cleandoc(doc), flags=re.DOTALL | re.MULTILINE)
    found: dict[str, str] = {}
    if section is None:
        return found
    for item in re.finditer(r"^\s{4}([\w, ]+):\s*(.*?)(?=^\s{4}[\w, ]+:|\Z)", section.group(1), re.DOTALL | re.MULTILINE):
        for name in item.group(1).split(","):
            found[name.strip()] = " ".join(item.group(2).split())
    return found


def first_sentence(text: str) -> str:
    """The docstring's first sentence (up to ". " or the first blank line), on one line."""
    paragraph = " ".join(text.split("\n\n")[0].split())
    match = re.search(r"(?<!e\.g)(?<!i\.e)(?<!\bvs)\.(\s|$)", paragraph)
    return paragraph[: match.start() + 1] if match else paragraph


def _lookup(raw: Any, path: str) -> Any:
    """The value at dotted ``path`` in a recipe mapping, or :data:`_ABSENT`; through a list (``rewards[].name``),
    the first item's that has it."""
    head, _, rest = path.partition(".")
    name = head.removesuffix("[]")
    if not isinstance(raw, dict) or name not in raw:
        return _ABSENT
    value = raw[name]
    if not rest:
        return value
    if head.endswith("[]"):
        found = (_lookup(item, rest) for item in value or [])
        return next((v for v in found if v is not _ABSENT), _ABSENT)
    return _lookup(value, rest)


def _table(rows: list[Key], recipes: list[tuple[str, dict[str, Any]]], cell: typing.Callable[[Any], str]) -> list[str]:
    lines = ["| key | type | default | what it is | set by |", "|---|---|---|---|---|"]
    for key in rows:
        users = [path for path, raw in recipes if _lookup(raw, key.path) is not _ABSENT]
        lines.append(f"| `{key.path}` | {_code(key.type)} | {key.default} | {cell(key.doc)} | "
                     f"{_set_by(users, len(recipes))} |")  # fmt: skip
    return [*lines, ""]


def _set_by(users: list[str], total: int) -> str:
    """The recipes that set a key: all of them, none, or their names (file stems; past four, the rest on hover)."""
    if not users:
        return "—"
    if len(users) == total and total > 1:
        return f"all {total}"
    stems = [path.rsplit("/", 1)[-1].removesuffix(".yaml") for path in users]
    shown = ", ".join(f"`{stem}`" for stem in stems[:4])
    rest = stems[4:]
    return shown + (f', <span title="{", ".join(rest)}">+{len(rest)} more</span>' if rest else "")
