"""What a checkpoint this project trained records about its training: one typed :class:`TrainingRecord`.

Every ``checkpoints/<name>/training.json`` is this record, as data (like timm's ``PretrainedCfg``):
the stages that made the weights (recipe, seed, CPU minutes, the held-out curve), the comparisons
the release reports (a difference, its standard error and unit), the evaluation rows a card's
``model-index`` carries, and the card's narrative as markdown sections. The experiment that wrote
it (``lab/``) also keeps its raw numbers under ``measurements``, typed too (one row per release shape,
:mod:`zoo.measurements`), so nothing measured is lost in the typed view and no number is read by key.
A record names no code: :mod:`zoo.cards` renders every card from entry + record, and ``zoo push``
runs nothing a file in the folder names.

Reading is strict: an unknown key, a missing field or a wrong type is a :class:`RecordError` naming
the file and the field, so a hand-edited record fails when read, not halfway through a card. The same
strict reader, :func:`typed`, reads the other JSON a handed folder holds into its dataclass (a checkpoint's
completion marker, a policy checkpoint's counters), so a malformed file is one sentence, never a traceback.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zoo.measurements import Measurements
from zoo.measurements.common import OMIT_IF_NONE

#: ``schema`` of the records this module writes; a record of another schema is refused by name.
SCHEMA = "zoo.training-record/1"


class RecordError(ValueError):
    """JSON that is not the typed value it is read as (a ``training.json`` that is not a :class:`TrainingRecord`,
    a malformed checkpoint marker); the message names the file and the field."""


@dataclass(frozen=True)
class CurvePoint:
    """One point of a held-out curve: the metric after ``step`` optimiser steps."""

    step: int
    value: float


@dataclass(frozen=True)
class Stage:
    """One training stage of the release (the start, an RL run, its control, a base policy).

    Attributes:
        name: what the card calls it (``"GRPO, seed 0"``).
        role: ``start`` (what RL began from), ``rl``, ``control`` (the same budget spent another
            way), ``base`` (a frozen policy RL corrects) or ``pretrain``.
        recipe: the recipe file it ran (repository-relative), or ``""`` for a script stage.
        seed: its training seed.
        steps: optimiser steps (or iterations, for the policy engine).
        cpu_minutes: CPU time it took, as measured on the release machine.
        metric: the held-out metric of ``value`` and ``curve`` (``hit``, ``success_rate``, ...).
        value: the metric of the stage's final weights on the held-out set.
        curve: the held-out metric during training.
    """

    name: str
    role: str
    recipe: str = ""
    seed: int | None = None
    steps: int | None = None
    cpu_minutes: float | None = None
    metric: str = ""
    value: float | None = None
    curve: tuple[CurvePoint, ...] = ()


@dataclass(frozen=True)
class Comparison:
    """A difference the release reports: ``arm - baseline`` on the same held-out samples.

    Attributes:
        label: what is compared (``"GRPO - control, seed 0"``).
        difference: the mean difference.
        standard_error: its standard error (``None``: one number, no spread measured).
        unit: the metric's unit in words (``"held-out hit rate"``).
        n: the number of paired samples (or episodes) behind it.
    """

    label: str
    difference: float
    standard_error: float | None
    unit: str
    n: int | None = None

    @property
    def clears(self) -> bool:
        """More than two standard errors from zero (the release's own bar for "RL beats the control")."""
        return self.standard_error is not None and abs(self.difference) > 2 * self.standard_error


@dataclass(frozen=True)
class EvaluationRow:
    """One ``model-index`` result of the card (Hugging Face ``EvalResult`` fields)."""

    task_type: str
    dataset_type: str
    dataset_name: str
    metric_type: str
    value: float
    metric_name: str = ""
    task_name: str = ""
    dataset_split: str = ""


@dataclass(frozen=True)
class Section:
    """A ``## title`` section of the card, as markdown (the release renders it from its numbers)."""

    title: str
    markdown: str


@dataclass(frozen=True)
class TrainingRecord:
    """Everything ``checkpoints/<name>/training.json`` says about how ``entry``'s weights were made.

    Attributes:
        entry: the registry entry the checkpoint ships (``zoo.info(entry)``).
        summary: the card's opening paragraph.
        reproduce: the command that re-runs the release.
        stages: the training stages, in order.
        comparisons: the differences the release reports.
        evaluation: the card's ``model-index`` rows.
        sections: the card's sections after the summary, in order.
        tags: the card's Hub tags.
        base_model: the Hub ``base_model`` of the card, when the weights derive from one.
        measurements: the release's raw numbers (per-seed curves, per-sample scores) as its typed rows.
        schema: :data:`SCHEMA`.
    """

    entry: str
    summary: str
    reproduce: str
    stages: tuple[Stage, ...] = ()
    comparisons: tuple[Comparison, ...] = ()
    evaluation: tuple[EvaluationRow, ...] = ()
    sections: tuple[Section, ...] = ()
    tags: tuple[str, ...] = ()
    base_model: str | None = None
    measurements: Measurements | None = None
    schema: str = SCHEMA

    def __post_init__(self) -> None:
        if self.schema != SCHEMA:
            raise RecordError(f"schema {self.schema!r}: this version of the zoo reads {SCHEMA!r}")
        for number, where in _numbers(self):
            if not math.isfinite(number):
                raise RecordError(f"{self.entry}: {where} is {number}, not a finite number")

    def stage(self, role: str) -> list[Stage]:
        """The stages of one role, in order."""
        return [s for s in self.stages if s.role == role]

    def to_dict(self) -> dict[str, Any]:
        """The record as ``training.json`` stores it (tuples as lists, absent optional rows left out)."""
        return _json(self)

    def write(self, path: str | Path) -> Path:
        """Write the record as indented JSON (what ``checkpoints/<name>/training.json`` holds)."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n")
        return path

    @classmethod
    def from_dict(cls, data: Any, where: str = "training record") -> TrainingRecord:
        """Build a record from JSON data, refusing unknown keys, missing fields and wrong types."""
        return typed(cls, data, where)


def read_record(path: str | Path) -> TrainingRecord:
    """The :class:`TrainingRecord` in ``path`` (a ``training.json``); :class:`RecordError` names what is wrong."""
    from zoo.model_files import read_json

    path = Path(path)
    return TrainingRecord.from_dict(read_json(path), where=str(path))


def _numbers(record: TrainingRecord) -> list[tuple[float, str]]:
    found = [(s.value, f"stage {s.name!r} value") for s in record.stages if s.value is not None]
    found += [(p.value, f"stage {s.name!r} curve") for s in record.stages for p in s.curve]
    found += [(c.difference, f"comparison {c.label!r}") for c in record.comparisons]
    found += [(r.value, f"evaluation {r.metric_type!r}") for r in record.evaluation]
    return found


def _json(data: Any) -> Any:
    """``data`` as JSON: dataclasses as objects in field order, less a ``None`` marked :data:`OMIT_IF_NONE`."""
    if dataclasses.is_dataclass(data):
        return {f.name: _json(getattr(data, f.name)) for f in dataclasses.fields(data)
                if not (f.metadata.get(OMIT_IF_NONE) and getattr(data, f.name) is None)}  # fmt: skip
    if isinstance(data, Mapping):
        return {k: _json(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_json(v) for v in data]
    return data


def typed(tp: Any, data: Any, where: str) -> Any:
    """``data`` (parsed JSON) as an instance of the annotation ``tp``: dataclasses, tuples, mappings, unions, scalars.

    Strict: an unknown key, a missing field or a value of another type is a :class:`RecordError` naming ``where``
    (the file) and the field. A union takes the first of its types the value reads as (``int | float`` keeps an
    integer an ``int``); a union of dataclasses reads an object as the one whose fields fit its keys best, so an
    error names that class's field; a ``Mapping[str, V]`` checks every value as ``V``.
    """
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, Mapping):
            raise RecordError(f"{where}: expected an object, got {type(data).__name__}")
        hints = typing.get_type_hints(tp)
        fields = {f.name: f for f in dataclasses.fields(tp)}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise RecordError(f"{where}: unknown field(s) {unknown}; a {tp.__name__} has {sorted(fields)}")
        missing = [n for n, f in fields.items() if n not in data and f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING]  # fmt: skip
        if missing:
            raise RecordError(f"{where}: missing field(s) {missing} of {tp.__name__}")
        return tp(**{k: typed(hints[k], v, f"{where}.{k}") for k, v in data.items()})
    if origin in (typing.Union, types.UnionType):
        return _union(typing.get_args(tp), data, where)
    if origin is tuple:
        if not isinstance(data, list):
            raise RecordError(f"{where}: expected a list, got {type(data).__name__}")
        inner = typing.get_args(tp)[0]
        return tuple(typed(inner, v, f"{where}[{i}]") for i, v in enumerate(data))
    if origin is Mapping or tp is Any:
        if origin is Mapping and not isinstance(data, Mapping):
            raise RecordError(f"{where}: expected an object, got {type(data).__name__}")
        value_tp = typing.get_args(tp)[1] if origin is Mapping else Any
        if value_tp is Any:
            return data
        return {k: typed(value_tp, v, f"{where}.{k}") for k, v in data.items()}
    if tp is float and isinstance(data, (int, float)) and not isinstance(data, bool):
        return float(data)
    if isinstance(data, tp) and not (tp is int and isinstance(data, bool)):
        return data
    raise RecordError(f"{where}: expected {tp.__name__}, got {type(data).__name__} {data!r}")


def _misfit(tp: Any, data: Mapping[str, Any]) -> int:
    """How many of ``data``'s keys a dataclass ``tp`` lacks, plus how many of its required fields ``data`` lacks."""
    fields = {f.name: f for f in dataclasses.fields(tp)}
    required = {n for n, f in fields.items() if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING}  # fmt: skip
    return len(set(data) - set(fields)) + len(required - set(data))


def _union(options: tuple[Any, ...], data: Any, where: str) -> Any:
    """``data`` as the first of ``options`` it reads as (``None`` only where the union allows it)."""
    if data is None and type(None) in options:
        return None
    kinds = [o for o in options if o is not type(None)]
    if isinstance(data, Mapping) and len(kinds) > 1 and all(dataclasses.is_dataclass(k) for k in kinds):
        kinds = [min(kinds, key=lambda k: _misfit(k, data))]
    if len(kinds) == 1:
        return typed(kinds[0], data, where)
    for kind in kinds:
        try:
            return typed(kind, data, where)
        except RecordError:
            continue
    names = " or ".join(getattr(k, "__name__", str(k)) for k in kinds)
    raise RecordError(f"{where}: expected {names}, got {type(data).__name__} {data!r}")
