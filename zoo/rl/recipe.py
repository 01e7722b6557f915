"""Training recipes: one typed dataclass per run, loaded from YAML, overridden from the CLI.

A recipe names everything a GRPO-family run needs — the model, the data (by registered
dataset name), the reward(s) with weights, the algorithm and the training knobs — so that
``zoo train domains/gui/recipes/gui-g1.yaml --set training.lr=1e-5`` is reproducible from the
``recipe.yaml`` the run writes next to its checkpoints. The shape follows cleanrl's "one
dataclass of arguments, one docstring per field"; there is no Hydra and no global config.

YAML layout (every section optional except ``name``, ``data`` and ``rewards``)::

    name: gui-g1-tiny
    model: {name: "tiny:qwen2_5_vl"}
    data: {name: synthetic-shapes, kwargs: {n: 256, seed: 0}}
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
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

LossType = Literal["grpo", "dr_grpo", "dapo", "bnpo", "gspo", "gui_g1"]
Engine = Literal["trl", "verl"]


class RecipeError(ValueError):
    """A recipe file or override that does not fit the schema; the message says how to fix it."""


@dataclass(frozen=True)
class ModelConfig:
    """Which policy to train."""

    name: str = "tiny:qwen2_5_vl"
    """A zoo model name (``zoo list``), a local directory with a transformers checkpoint, a Hugging Face
    repository id (``Qwen/Qwen2.5-VL-7B-Instruct``: the base models recipes start from), or
    ``tiny:qwen2_5_vl`` / ``tiny:qwen3_vl`` for a random tiny model built offline (CPU smoke runs)."""
    revision: str | None = None
    """Hub revision (commit or tag) when ``name`` resolves to a Hub repository; ``None`` uses the entry's pin."""
    dtype: str = "auto"
    """``auto`` (float32 on CPU, bfloat16 on GPU), ``float32``, ``bfloat16`` or ``float16``."""
    tiny: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for :func:`zoo.tiny.build_tiny_vlm` (``hidden``, ``layers``, ``seed``...) when
    ``name`` is ``tiny:*``. Without ``corpus`` the tokenizer is trained on the training prompts and targets."""


@dataclass(frozen=True)
class DataConfig:
    """Where the prompts come from: a dataset registered with :func:`zoo.data.register_dataset`."""

    name: str = ""
    """Registered dataset name (``zoo.data.DATASETS.list()``), e.g. ``synthetic-shapes``."""
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


@dataclass(frozen=True)
class RewardSpec:
    """One reward term; the run's reward is the weighted sum of all terms."""

    name: str = ""
    """Registered reward name (``rewards.list()``)."""
    weight: float = 1.0
    """Weight of this term in the sum; each term is also logged on its own."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Arguments for parameterised rewards (thresholds, judge settings)."""


@dataclass(frozen=True)
class AlgorithmConfig:
    """The GRPO-family algorithm: advantage estimator, surrogate loss and sampling."""

    loss_type: LossType = "grpo"
    """Loss aggregation by paper: ``grpo`` (per-sequence token mean), ``dr_grpo`` (sum / (B·L_max)),
    ``dapo`` (token mean over the batch), ``bnpo`` (token mean over the local batch), ``gspo``
    (sequence-level ratio, GSPO), ``gui_g1`` (token sum scaled by rate/64, GUI-G1)."""
    adv_estimator: str = "grpo"
    """Registered advantage estimator in :mod:`zoo.rl.advantages` (``grpo``, ``rloo``, ...)."""
    normalize_std: bool = True
    """Divide group-centred rewards by the group std (GRPO); ``False`` is Dr. GRPO's and GUI-G1's choice."""
    clip_low: float | None = None
    """PPO clip epsilon below 1 (ratio floor 1 - clip_low); ``None``: the loss's paper default
    (0.2; GSPO 3e-4)."""
    clip_high: float | None = None
    """PPO clip epsilon above 1; ``None``: the loss's paper default (0.2; DAPO's clip-higher 0.28; GSPO 4e-4)."""
    dual_clip: float | None = None
    """Dual-clip constant c (> 1) bounding the loss of negative-advantage tokens; ``None`` disables it."""
    beta: float = 0.0
    """KL coefficient against the reference policy; 0 skips the reference model entirely."""
    kl_estimator: Literal["k1", "k2", "k3"] = "k3"
    """KL estimator (Schulman's k1/k2/k3) used when ``beta > 0``."""
    num_generations: int = 8
    """Group size G: completions sampled per prompt."""
    temperature: float = 1.0
    """Sampling temperature for rollouts."""
    top_p: float = 1.0
    """Nucleus sampling threshold for rollouts."""
    max_completion_length: int = 64
    """Maximum new tokens per completion."""
    num_iterations: int = 1
    """Optimisation passes over each generated batch (PPO epochs, mu in the GRPO paper)."""
    dynamic_sampling: bool = False
    """Drop groups whose rewards are all equal from the loss (DAPO); they carry no signal."""
    rate_column: str = "rate"
    """For ``gui_g1``: the ``Sample.meta`` key holding the per-sample difficulty rate."""


@dataclass(frozen=True)
class LoraConfig:
    """Low-rank adapters through peft; ``enabled: false`` trains every unfrozen weight."""

    enabled: bool = False
    """Train LoRA adapters instead of the full model."""
    r: int = 16
    """Adapter rank."""
    alpha: int = 32
    """Adapter scaling (lora_alpha)."""
    dropout: float = 0.05
    """Dropout on the adapter input."""
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    """Module names (of the language model) that get adapters."""


@dataclass(frozen=True)
class TrainingConfig:
    """Optimiser, batch, checkpointing and output."""

    lr: float = 1e-6
    """Peak learning rate (AdamW)."""
    steps: int = 100
    """Optimiser steps to run."""
    batch_size: int = 8
    """Completions per device per micro-step (prompts x num_generations); a multiple of
    ``algorithm.num_generations``."""
    grad_accum: int = 1
    """Gradient-accumulation micro-steps per optimiser step."""
    seed: int = 0
    """Seed for data order, sampling and initialisation."""
    lr_scheduler: str = "constant"
    """transformers scheduler name: ``constant``, ``linear``, ``cosine``, ..."""
    warmup_steps: int = 0
    """Linear warm-up steps."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm."""
    save_steps: int = 50
    """Write a checkpoint every N optimiser steps (``--resume`` continues from the newest complete one)."""
    save_total_limit: int | None = 2
    """Keep at most N checkpoints; ``None`` keeps all."""
    logging_steps: int = 1
    """Log metrics every N optimiser steps."""
    freeze_vision: bool = True
    """Keep the vision tower frozen, as the papers do."""
    lora: LoraConfig = field(default_factory=LoraConfig)
    """LoRA settings; disabled means full fine-tuning of the unfrozen weights."""
    gradient_checkpointing: bool = False
    """Trade compute for memory on large models."""
    output_dir: str = "runs/{name}"
    """Run directory; ``{name}`` is replaced by the recipe name."""
    use_cpu: bool | None = None
    """Force CPU; ``None`` uses a GPU when one is visible."""


@dataclass(frozen=True)
class EngineConfig:
    """Which trainer runs the recipe."""

    name: Engine = "trl"
    """``trl`` (one machine, TRL GRPOTrainer) or ``verl`` (export + verl's Ray trainer)."""
    verl_overrides: tuple[str, ...] = ()
    """Extra Hydra overrides passed verbatim to verl (``trainer.nnodes=2``)."""
    n_gpus_per_node: int = 8
    """verl: GPUs per node."""
    nnodes: int = 1
    """verl: number of nodes."""
    rollout: str = "vllm"
    """verl: rollout backend (``vllm`` or ``sglang``)."""


@dataclass(frozen=True)
class Recipe:
    """A complete training run."""

    name: str
    """Run name; used in the default output directory."""
    data: DataConfig
    """Training prompts."""
    rewards: tuple[RewardSpec, ...]
    """Reward terms; the trained reward is their weighted sum."""
    description: str = ""
    """One line on what the recipe reproduces (paper, table)."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """The policy."""
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    """GRPO-family settings."""
    training: TrainingConfig = field(default_factory=TrainingConfig)
    """Optimiser and checkpoint settings."""
    engine: EngineConfig = field(default_factory=EngineConfig)
    """Trainer backend."""

    def __post_init__(self) -> None:
        _validate(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], overrides: list[str] | tuple[str, ...] = ()) -> Recipe:
        """Build from a plain mapping, after applying ``key=value`` overrides."""
        data = _deepcopy(data)
        for override in overrides:
            _apply_override(cls, data, override)
        return _build(cls, data, "")

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Recipe:
        """Read a recipe file; ``overrides`` like ``["training.lr=1e-5"]`` win over the file."""
        path = Path(path)
        if not path.is_file():
            raise RecipeError(f"recipe file {str(path)!r} does not exist; pass the path to a .yaml recipe")
        data = yaml.safe_load(path.read_text()) or {}
        if not isinstance(data, dict):
            raise RecipeError(f"recipe {str(path)!r} must be a YAML mapping, got {type(data).__name__}")
        return cls.from_dict(data, overrides)

    def to_dict(self) -> dict[str, Any]:
        """Plain, YAML-safe mapping (tuples become lists)."""
        return _plain(dataclasses.asdict(self))

    def to_yaml(self, path: str | Path | None = None) -> str:
        """The resolved recipe as YAML; written to ``path`` when given."""
        text = yaml.safe_dump(self.to_dict(), sort_keys=False)
        if path is not None:
            Path(path).write_text(text)
        return text

    @property
    def output_dir(self) -> Path:
        """``training.output_dir`` with ``{name}`` filled in."""
        return Path(self.training.output_dir.format(name=self.name))


def _validate(recipe: Recipe) -> None:
    if not recipe.data.name:
        raise RecipeError("data.name is empty; name a registered dataset (zoo.data.DATASETS.list())")
    if not recipe.rewards:
        raise RecipeError("rewards is empty; list at least one {name: <registered reward>, weight: 1.0}")
    g = recipe.algorithm.num_generations
    if g < 2:
        raise RecipeError(f"algorithm.num_generations={g}; GRPO needs groups of at least 2 completions")
    if recipe.training.batch_size % g:
        raise RecipeError(
            f"training.batch_size={recipe.training.batch_size} is not a multiple of "
            f"algorithm.num_generations={g}; use e.g. batch_size={g * max(1, recipe.training.batch_size // g)}"
        )
    for key in ("clip_low", "clip_high"):
        if (getattr(recipe.algorithm, key) or 0) < 0:
            raise RecipeError(f"algorithm.{key} must be >= 0, got {getattr(recipe.algorithm, key)}")
    if recipe.algorithm.dual_clip is not None and recipe.algorithm.dual_clip <= 1:
        raise RecipeError(f"algorithm.dual_clip must be > 1 (or null), got {recipe.algorithm.dual_clip}")
    if recipe.training.steps < 1 or recipe.training.save_steps < 1:
        raise RecipeError("training.steps and training.save_steps must be >= 1")
    from zoo.rl import ADVANTAGE_ESTIMATORS  # registered by zoo.rl (semi_online included)

    needs = getattr(ADVANTAGE_ESTIMATORS.get(recipe.algorithm.adv_estimator), "rollout_fields", ())
    if needs:
        raise RecipeError(
            f"algorithm.adv_estimator={recipe.algorithm.adv_estimator!r} needs {', '.join(needs)} from a "
            "multi-turn rollout, which the single-turn GRPO engine does not produce; call it from your own "
            "rollout loop (zoo.rl.semi_online)"
        )


# --- schema-driven construction -------------------------------------------------------------


def _fields(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _build(cls: type, data: Any, where: str) -> Any:
    if isinstance(data, cls):
        return data
    if not isinstance(data, dict):
        raise RecipeError(f"{where or 'recipe'} must be a mapping of {cls.__name__} fields, got {data!r}")
    schema = _fields(cls)
    unknown = [k for k in data if k not in schema]
    if unknown:
        raise RecipeError(_unknown_message(unknown[0], schema, where))
    kwargs = {k: _coerce(schema[k], v, f"{where}{k}") for k, v in data.items()}
    missing = [f.name for f in dataclasses.fields(cls) if f.name not in kwargs and _required(f)]
    if missing:
        raise RecipeError(f"{where or 'recipe'} is missing required key(s): {', '.join(where + m for m in missing)}")
    try:
        return cls(**kwargs)
    except RecipeError:
        raise
    except (TypeError, ValueError) as err:
        raise RecipeError(f"{where or 'recipe'}: {err}") from err


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _unknown_message(key: str, schema: dict[str, Any], where: str) -> str:
    close = difflib.get_close_matches(key, list(schema), n=3, cutoff=0.5)
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
    value = yaml.safe_load(raw) if raw.strip() else ""
    node: Any = data
    tp: Any = cls
    for depth, part in enumerate(parts):
        where = ".".join(parts[:depth])
        prefix = where + "." if where else ""
        last = depth == len(parts) - 1
        if dataclasses.is_dataclass(tp):
            schema = _fields(tp)
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


def _plain(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _plain(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_plain(v) for v in data]
    return data
