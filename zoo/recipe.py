"""The recipe machinery every engine shares: typed dataclasses from YAML, dotted CLI overrides.

A recipe is one typed dataclass per run. It names its engine (``engine: vlm-trl``); the engine
(:mod:`zoo.engines`) owns the recipe class with its algorithm settings and validation, and this
module owns what all of them share: reading YAML, converting values to the declared field types,
``--set`` overrides with close-match errors, the resolved ``recipe.yaml``, the output directory,
and the blocks every engine reuses (:class:`RewardSpec`, :class:`DataConfig`,
:class:`TrainingBase`). The shape follows cleanrl's "one dataclass of arguments, one docstring
per field"; there is no Hydra and no global config. ``zoo train RECIPE --set training.lr=1e-5``
is reproducible from the ``recipe.yaml`` the run writes next to its checkpoints.

YAML layout of a VLM recipe (the engine's recipe class says which sections exist)::

    name: gui-g1-tiny
    engine: vlm-trl
    model: {name: "tiny:qwen2_5_vl"}
    data: {name: synthetic-colour, kwargs: {n: 256, seed: 0}}
    rewards:
      - {name: gui-g1, weight: 1.0}
      - {name: format, weight: 0.1}
    algorithm: {loss_type: dapo, num_generations: 8, clip_high: 0.28}
    training: {lr: 1.0e-4, steps: 200, batch_size: 32}

Overrides are ``dotted.key=value`` strings; the value is parsed as YAML and then converted
to the field's declared type, so ``training.lr=1e-5`` is a float even though YAML 1.1 reads
``1e-5`` as a string. Unknown keys are errors that list the closest valid keys.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import yaml

from zoo import bounded_yaml
from zoo.authors_run import AuthorsRun
from zoo.recipe_file import RecipeError, read_yaml
from zoo_common.registry import Registry, UnknownNameError, close_matches

if TYPE_CHECKING:
    from rewards.base import Reward
    from zoo.data import Sample


@dataclass(frozen=True)
class DataConfig:
    """Where the prompts come from: a dataset a domain registered (``zoo.data.DATASETS``)."""

    name: str = ""
    """Registered dataset name (``zoo.data.DATASETS.list()``), e.g. ``synthetic-colour``."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Passed to the loader: path, split, n, seed, ..."""
    max_samples: int | None = None
    """Keep only the first N samples (after the loader's own ordering); ``None`` keeps all."""
    eval_name: str | None = None
    """Optional held-out dataset evaluated at the end (same registry)."""
    eval_kwargs: dict[str, Any] = field(default_factory=dict)
    """Loader arguments for ``eval_name``."""
    system_prompt: str | None = None
    """A system message prepended to every prompt (the paper's system prompt), or ``None``."""
    allow_eval_data: bool = False
    """Train on evaluation data on purpose (a split named test, or a benchmark's own files, see
    :attr:`zoo.domains.Domain.eval_datasets`); needs :attr:`eval_data_reason`. Numbers measured on that
    data after training are then not held-out results."""
    eval_data_reason: str = ""
    """Why this recipe trains on evaluation data (required with :attr:`allow_eval_data`)."""

    def __post_init__(self) -> None:
        """A permission to train on evaluation data says why; whether the data *is* evaluation data asks the
        domains, which the engine's check step does (:func:`zoo.engines.checks.check_training_data`)."""
        if self.allow_eval_data and not self.eval_data_reason.strip():
            raise RecipeError("data.allow_eval_data: true needs data.eval_data_reason (why this run trains on "
                              "evaluation data)")  # fmt: skip

    def load(self) -> list[Sample]:
        """The samples, from the dataset registry (domains' loaders are found on first use)."""
        from zoo.data import load_dataset, take

        samples = load_dataset(self.name, **self.kwargs)
        if self.max_samples is not None:
            samples = take(samples, self.max_samples)
        return list(samples)


@dataclass(frozen=True)
class RewardSpec:
    """One reward term; the run's reward is the weighted sum of all terms."""

    name: str = ""
    """Registered reward name (``rewards.list()``)."""
    weight: float = 1.0
    """Weight of this term in the sum; each term is also logged on its own."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Arguments for parameterised rewards (thresholds, judge settings)."""

    def build(self) -> Reward:
        """The registered reward, configured (:meth:`configure`). The domains' rewards are found by the reward
        table's own discovery (importing the ``zoo`` package adds it)."""
        from rewards.base import get

        return self.configure(get(self.name))

    def configure(self, reward: Any) -> Reward:
        """``reward`` (what the table holds under :attr:`name`, which an engine's check looked up) built with
        ``kwargs``: a class is called with them, an object with ``with_options`` hands out a configured copy."""
        if self.kwargs:
            if isinstance(reward, type):
                return reward(**self.kwargs)
            if callable(getattr(reward, "with_options", None)):
                return reward.with_options(**self.kwargs)
            raise RecipeError(f"reward {self.name!r} takes no options, but the recipe gives kwargs={self.kwargs}")
        return reward() if isinstance(reward, type) else reward


class ChoiceConfig:
    """A config family whose concrete dataclass is chosen by one of its fields (``algorithm.method``).

    A method's settings are its own typed dataclass, registered under the method's name, as LeRobot
    registers a policy's config under its ``type``: the recipe reader builds the class the
    ``choice_field`` names, so a key another method takes is an unknown key here, named with this
    method's valid keys, and no method reads a field it does not own. A family's base class declares
    ``choices`` (a :class:`~zoo_common.registry.Registry`) and the field's default; subclasses register with
    :meth:`register`. A family whose methods live in plug-ins overrides :meth:`locate`, so that picking one
    imports that method's module alone; a name nothing locates falls to the registry's own discovery.
    """

    choice_field: ClassVar[str] = "method"
    choices: ClassVar[Registry[type]]

    @classmethod
    def locate(cls, name: str) -> None:
        """Import the module that registers ``name``'s class, when the family knows it (none here: a family's
        built-in methods are registered beside it)."""

    @classmethod
    def register(cls, name: str) -> typing.Callable[[type], type]:
        """Class decorator: ``name`` (the ``choice_field`` value) selects the decorated config class."""

        def add(config: type) -> type:
            if not (isinstance(config, type) and issubclass(config, cls) and dataclasses.is_dataclass(config)):
                raise TypeError(f"{config!r} must be a dataclass subclass of {cls.__name__}")
            return cls.choices.register(name, config)

        return add

    @classmethod
    def chosen(cls, data: dict[str, Any], where: str) -> type:
        """The registered class for the ``choice_field`` value in ``data`` (the base's default when absent)."""
        default = next(f.default for f in dataclasses.fields(cls) if f.name == cls.choice_field)
        name = data.get(cls.choice_field, default)
        cls.locate(str(name))
        try:
            config = cls.choices.get(str(name))
        except UnknownNameError as err:
            raise RecipeError(f"{where}{cls.choice_field}: {err}") from None
        if not issubclass(config, cls):
            raise RecipeError(f"{where}{cls.choice_field}={name!r} is a {config.__name__}, not a {cls.__name__}")
        return config


@dataclass(frozen=True, kw_only=True)
class TrainingBase:
    """Optimiser steps, seed, checkpoints and output: the training fields every engine has."""

    lr: float = 1e-6
    """Peak learning rate."""
    steps: int = 100
    """Optimiser steps to run."""
    seed: int = 0
    """Seed for data order, sampling and initialisation."""
    save_steps: int = 50
    """Write a checkpoint every N optimiser steps (``--resume`` continues from the newest complete one)."""
    save_total_limit: int | None = 2
    """Keep at most N checkpoints; ``None`` keeps all."""
    logging_steps: int = 1
    """Log metrics every N optimiser steps."""
    output_dir: str = "runs/{name}"
    """Run directory; ``{name}`` is replaced by the recipe name."""

    def __post_init__(self) -> None:
        if self.steps < 1 or self.save_steps < 1 or self.logging_steps < 1:
            raise RecipeError("training.steps, training.save_steps and training.logging_steps must be >= 1")


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """What every recipe has: a name, the engine that runs it, a description. Engines subclass it."""

    name: str
    """Run name; used in the default output directory."""
    engine: str
    """The engine that runs the recipe (``zoo engines``): ``vlm-trl``, ``vlm-verl``, ..."""
    description: str = ""
    """One line on what the recipe reproduces (paper, table)."""
    reproduces: str = ""
    """The registry entry whose authors' training run this recipe claims to be (``""``: it claims none).
    Such a recipe needs a :attr:`provenance` row for every field it sets (:mod:`zoo.provenance`)."""
    launch: str = ""
    """The accelerate config a multi-GPU run of this recipe uses (``zoo/launch/<launch>.yaml``, :mod:`zoo.launch`;
    ``""``: one process). ``zoo train RECIPE --plan`` prints each config's memory per GPU; engine ``vlm-verl``
    launches on Ray and does not read it."""
    processes: int | None = None
    """The processes (GPUs) the recipe is sized for: its batch settings are per process, so this many give the run it
    describes (GUI-G1's authors train on 4). ``null``: the launch config's ``num_processes``. ``zoo train --plan``
    sizes for it and prints the launch line with it."""
    authors_run: AuthorsRun | None = None
    """For a recipe that ``reproduces`` an entry: the authors' batch per round, the code of the release and the
    differences that are no field (:mod:`zoo.authors_run`)."""
    provenance: dict[str, Any] = field(default_factory=dict)
    """Field path -> where its value comes from: ``owner/repo@commit:path[:line]``, ``arXiv:<id> <section>``,
    an ``https://`` page, or ``zoo: <why the zoo differs>``, alone or as ``{authors: <their value>, source: ...}``;
    ``{unset: why}`` where the authors have no such setting (:mod:`zoo.provenance`); ``zoo train --set`` adds
    ``user:`` rows."""
    changes: tuple[dict[str, Any], ...] = ()
    """A run's history (written into its ``recipe.yaml``, never by hand): each ``{step, before}`` says that a
    ``zoo train --resume --resume-changes`` at that step changed the settings, and ``before`` holds their values
    until then (dotted paths); the fields above are the settings the run trains with now."""

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise RecipeError(f"name={self.name!r}: give the run a non-empty name without '/'")
        if self.processes is not None and self.processes < 1:
            raise RecipeError(f"processes={self.processes}: a run has at least one process (or null: the launch's)")
        self.validate()

    def validate(self) -> None:
        """Engine-specific checks; raise :class:`RecipeError` with the fix."""

    @classmethod
    def from_dict(cls, data: dict[str, Any], overrides: list[str] | tuple[str, ...] = ()) -> Recipe:
        """Build from a plain mapping, after applying ``key=value`` overrides.

        What a recipe claims (``reproduces``) and cites (``provenance``) is the file's: an override of either is
        refused. Whether the rows cover the resolved recipe is the engine's check (:mod:`zoo.engines.checks`), and
        :func:`zoo.engines.reading.load_recipe` records each override as a ``user:`` row."""
        data = _deepcopy(data)
        for override in overrides:
            if override.partition("=")[0].strip().split(".")[0] in ("reproduces", "provenance"):
                raise RecipeError(f"--set {override.partition('=')[0].strip()}: what a recipe claims and cites is the "
                                  "recipe file's; --set records its own changes as user: rows")  # fmt: skip
            _apply_override(cls, data, override)
        return _build(cls, data, "")

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Recipe:
        """Read a recipe file of this class; ``overrides`` like ``["training.lr=1e-5"]`` win over the file."""
        return cls.from_dict(read_yaml(path), overrides)

    def to_dict(self) -> dict[str, Any]:
        """Plain, YAML-safe mapping (tuples become lists)."""
        return plain(dataclasses.asdict(self))

    def to_yaml(self, path: str | Path | None = None) -> str:
        """The resolved recipe as YAML; written to ``path`` when given, whole or not at all (a full disk
        leaves a resumed run's previous ``recipe.yaml`` as it was, not truncated)."""
        text = yaml.safe_dump(self.to_dict(), sort_keys=False)
        if path is not None:
            tmp = Path(f"{path}.tmp")
            try:
                tmp.write_text(text)
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
        return text

    @property
    def output_dir(self) -> Path:
        """``training.output_dir`` with ``{name}`` filled in."""
        return Path(self.training.output_dir.format(name=self.name))  # type: ignore[attr-defined]


def import_named(key: str, target: str, expected: type | tuple[type, ...] = object) -> Any:
    """The object a recipe value ``"package.module:NAME"`` names (a sampler class, a token list), or a
    :class:`RecipeError` naming the recipe ``key``: recipes name code by import string, never by a pickled
    object, and only code of the installed packages or the registered domains (:mod:`zoo.import_strings`),
    so a recipe handed over with a ``helpers.py`` beside it does not run that file. An object that is not
    an instance of ``expected`` (``type`` for a class, ``(list, tuple)`` for a token list) is refused too,
    before the engine calls it (``os:system`` resolves, but is no sampler class)."""
    from zoo.import_strings import ImportStringError, resolve

    try:
        found = resolve(target, what=f"recipe key {key}")
    except ImportStringError as err:
        raise RecipeError(str(err)) from None
    if not isinstance(found, expected):
        wanted = " or ".join(t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,)))
        raise RecipeError(f"{key}={target!r} names a {type(found).__name__}; it must name a {wanted}")
    return found


# --- schema-driven construction -------------------------------------------------------------


def field_types(cls: type) -> dict[str, Any]:
    """Field name -> declared type of the dataclass ``cls`` (string annotations resolved)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _build(cls: type, data: Any, where: str) -> Any:
    if isinstance(data, cls):
        return data
    if not isinstance(data, dict):
        raise RecipeError(f"{where or 'recipe'} must be a mapping of {cls.__name__} fields, got {data!r}")
    if issubclass(cls, ChoiceConfig):
        cls = cls.chosen(data, where)
    schema = field_types(cls)
    unknown = [k for k in data if k not in schema]
    if unknown:
        raise RecipeError(_unknown_message(unknown[0], schema, where))
    kwargs = {k: _coerce(schema[k], v, f"{where}{k}") for k, v in data.items()}
    missing = [f.name for f in dataclasses.fields(cls) if f.name not in kwargs and _required(f)]
    if missing:
        raise RecipeError(f"{where.rstrip('.') or 'recipe'} is missing required key(s): {', '.join(where + m for m in missing)}")
    try:
        return cls(**kwargs)
    except RecipeError:
        raise
    except (TypeError, ValueError) as err:
        raise RecipeError(f"{where or 'recipe'}: {err}") from err


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _unknown_message(key: str, schema: dict[str, Any], where: str) -> str:
    close = close_matches(key, list(schema))
    hint = f" Did you mean {', '.join(where + c for c in close)}?" if close else ""
    return f"unknown recipe key {where + key!r}.{hint} Valid keys here: {', '.join(schema)}."


def _coerce(tp: Any, value: Any, where: str) -> Any:
    """Convert a YAML value to the declared field type, or raise a RecipeError naming the key."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(inner[0], value, where)
    if origin is Literal:
        if value not in args:
            close = difflib.get_close_matches(str(value), [str(a) for a in args], n=2, cutoff=0.4)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise RecipeError(f"{where}={value!r} is not one of {list(args)}.{hint}")
        return value
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, where + ".")
    if origin is tuple:
        items = value if isinstance(value, list | tuple) else [value]
        item_tp = args[0]
        if dataclasses.is_dataclass(item_tp) and item_tp is RewardSpec:
            items = [{"name": v} if isinstance(v, str) else v for v in items]
        return tuple(_coerce(item_tp, v, f"{where}[{i}]") for i, v in enumerate(items))
    if origin is dict:
        if not isinstance(value, dict):
            raise RecipeError(f"{where} must be a mapping, got {value!r}")
        return dict(value)
    if tp is Any:
        return value
    return _scalar(tp, value, where)


def _scalar(tp: type, value: Any, where: str) -> Any:
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
            return value.lower() in ("true", "yes", "1")
        raise RecipeError(f"{where} must be true or false, got {value!r}")
    if tp in (int, float):
        if isinstance(value, bool):
            raise RecipeError(f"{where} must be a number, got {value!r}")
        try:
            number = tp(value) if tp is float else int(str(value), 0) if isinstance(value, str) else int(value)
        except (TypeError, ValueError):
            raise RecipeError(f"{where} must be {tp.__name__}, got {value!r}") from None
        if tp is int and isinstance(value, float) and value != number:
            raise RecipeError(f"{where} must be an integer, got {value!r}")
        return number
    if tp is str:
        if isinstance(value, dict | list):
            raise RecipeError(f"{where} must be a string, got {value!r}")
        return str(value)
    return value


# --- dotted overrides --------------------------------------------------------------------------


def _apply_override(cls: type, data: dict[str, Any], override: str) -> None:
    """Set ``a.b.c=value`` inside ``data`` after checking the path against the schema."""
    key, sep, raw = override.partition("=")
    if not sep or not key.strip():
        raise RecipeError(f"override {override!r} must look like key.path=value (e.g. training.lr=1e-5)")
    parts = key.strip().split(".")
    try:
        value = bounded_yaml.load(raw) if raw.strip() else ""
    except bounded_yaml.YAMLLimitError as err:
        raise RecipeError(f"override {key.strip()!r}: the value {err}") from err
    except (yaml.YAMLError, RecursionError) as err:
        raise RecipeError(f"override {override!r}: the value is not valid YAML ({err})") from err
    node: Any = data
    tp: Any = cls
    for depth, part in enumerate(parts):
        where = ".".join(parts[:depth])
        prefix = where + "." if where else ""
        last = depth == len(parts) - 1
        _check_container(tp, node, where, key.strip())
        if isinstance(tp, type) and issubclass(tp, ChoiceConfig):
            tp = tp.chosen(node, prefix)
        if dataclasses.is_dataclass(tp):
            schema = field_types(tp)
            if part not in schema:
                raise RecipeError(_unknown_message(part, schema, prefix))
            tp = _strip_optional(schema[part])
        elif typing.get_origin(tp) is tuple:
            if not part.isdigit():
                raise RecipeError(f"{prefix}{part}: index a list with a number, e.g. {prefix}0")
            index, tp = int(part), typing.get_args(tp)[0]
            if index >= len(node):
                raise RecipeError(f"{prefix}{part}: list {where!r} has only {len(node)} item(s)")
            if last:
                node[index] = value
                return
            if isinstance(node[index], str):  # the ``- reward-name`` shorthand
                node[index] = {"name": node[index]}
            node = node[index]
            continue
        elif typing.get_origin(tp) is dict:
            tp = Any
        if last:
            node[part] = value
            return
        child = node.get(part)
        if child is None:
            child = {}
            node[part] = child
        node = child


def _check_container(tp: Any, node: Any, where: str, key: str) -> None:
    """Refuse to descend into a value that has no keys (``training.lr.x=1``) or holds the wrong shape."""
    is_list = typing.get_origin(tp) is tuple
    if not (dataclasses.is_dataclass(tp) or is_list or typing.get_origin(tp) is dict or tp is Any):
        raise RecipeError(
            f"override {key!r}: {where} is a {getattr(tp, '__name__', tp)} value with no keys inside; "
            f"set it whole, e.g. {where}=VALUE"
        )
    if not isinstance(node, list if is_list else dict):
        raise RecipeError(
            f"override {key!r}: {where or 'the recipe'} holds {node!r}, not a {'list' if is_list else 'mapping'}; "
            "fix the recipe file or override the whole value"
        )


def _strip_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return inner[0] if len(inner) == 1 else tp
    return tp


def _deepcopy(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _deepcopy(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_deepcopy(v) for v in data]
    return data


def plain(data: Any) -> Any:
    """``data`` with tuples turned into lists, as YAML writes it."""
    if isinstance(data, dict):
        return {k: plain(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [plain(v) for v in data]
    return data
