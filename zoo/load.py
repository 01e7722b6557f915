"""``zoo.load(name)``: a catalog name, a Hub repository or a local directory to a ready pipeline.

The pipeline is the one of the entry's kind (:data:`zoo.kinds.SPECS`): a VLM answers with a
:class:`~zoo.outputs.Prediction`, a diffusion model with an :class:`~zoo.outputs.ImageOutput`,
a policy with an :class:`~zoo.outputs.ActionOutput`. A model the registry does not list is
loaded as open_clip's ``hf-hub:`` does: ``zoo.load("hf-hub:owner/name")`` (or plain
``owner/name``, or a directory), with its kind given (``kind="diffusion"``) or read from its
files.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.import_strings import resolve
from zoo.kinds import SPECS, ClipSpec, DiffusionSpec, PolicySpec, VLMSpec
from zoo.model_files import CONFIG_FILES, check_safetensors, read_json
from zoo.registry import ModelEntry, info
from zoo.remote_code import OPT_IN, RemoteCodeError, require_opt_in

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)


#: HF ``model_type`` -> (human name, coordinate frame its native grounding output uses).
KNOWN_ARCHITECTURES = {
    "qwen2_5_vl": ("Qwen2.5-VL", "resized"),
    "qwen2_vl": ("Qwen2-VL", "norm1000"),
    "qwen3_vl": ("Qwen3-VL", "norm1000"),
}

class WrongArchitectureError(ValueError):
    """A directory's weights are not of the architecture (or kind) the entry expects."""


def load(
    name: str,
    revision: str | None = None,
    device: str = "auto",
    dtype: str | torch.dtype = "auto",
    *,
    entry: str | None = None,
    kind: str | None = None,
    trust_remote_code: bool = False,
) -> Any:
    """The inference pipeline for a registered model, a Hub repository or a local model directory.

    Args:
        name: a registry name or alias (``"patho-r1"``); a Hub repository the registry does not list
            (``"hf-hub:owner/name"`` or ``"owner/name"``); or a path to a model directory.
        revision: Hub branch, tag or commit; defaults to the entry's pinned revision.
        device: ``"auto"`` (CUDA when available, else CPU) or any torch device string.
        dtype: ``"auto"`` (bfloat16 on CUDA, float32 on CPU) or a torch dtype / its name.
        entry: for a directory or Hub id, the registered entry whose spec (prompt, parser, sampling
            settings) to use (default: the ``entry`` recorded in the directory's ``training.json``,
            else a generic spec of the inferred kind).
        kind: for a directory or Hub id, the model kind (``vlm``, ``clip``, ``diffusion``, ``policy``)
            when it should not be read from the files.
        trust_remote_code: allow the model's own Python code: required (and only honoured) for
            entries that declare it and for directories or repositories whose configs name code of
            their own (:mod:`zoo.remote_code`); never implied.

    Raises:
        zoo_common.registry.UnknownNameError: the name is not registered (close matches suggested).
        zoo.hub.ModelNotAvailableError: offline and not cached, gated, or not released.
        WrongArchitectureError: the files are not of the entry's architecture or kind.
        zoo.remote_code.RemoteCodeError: the model needs its own code and ``trust_remote_code`` is off.
    """
    from zoo.hub import lookup

    if kind is not None and kind not in SPECS:
        raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(SPECS)}")
    named = lookup(name)
    model_entry = named.entry
    if model_entry is not None:
        _check_entry_code(model_entry, trust_remote_code)  # before anything is downloaded
    resolved = named.files(revision, trust_remote_code=trust_remote_code)
    if model_entry is None:
        model_entry = _entry_for_files(resolved.path, named.label, named.repo_id, entry, kind)
        _check_entry_code(model_entry, trust_remote_code)  # an entry= describing a directory needs it too
    check_architecture(resolved.path, model_entry)
    # the files decide as well: configs that name code of their own need the opt-in, then get it
    if require_opt_in(resolved.path, trust_remote_code) and not model_entry.trust_remote_code:
        model_entry = replace(model_entry, trust_remote_code=True)
    device = _device(device)
    build = resolve(model_entry.spec.pipeline, what=f"the pipeline of {model_entry.name}")
    pipeline = build(model_entry, resolved, device, _dtype(dtype, device))
    logger.info("loaded %s from %s (revision %s) on %s", model_entry.name, resolved.source, resolved.revision, device)
    return pipeline


def _check_entry_code(entry: ModelEntry, trust_remote_code: bool) -> None:
    if entry.trust_remote_code and not trust_remote_code:
        raise RemoteCodeError(f"{entry.name} runs code from its repository; read it, then pass {OPT_IN}")


def infer_kind(path: Path) -> str:
    """The model kind of a directory, from its config file (:data:`zoo.model_files.CONFIG_FILES`)."""
    for kind, config in CONFIG_FILES.items():
        if (path / config).is_file():
            return kind
    markers = ", ".join(CONFIG_FILES.values())
    raise WrongArchitectureError(
        f"{path} has none of {markers}: it is not a model directory the zoo can read; pass kind= if it is one"
    )


def check_architecture(path: Path, entry: ModelEntry) -> None:
    """Refuse a VLM directory whose ``config.json`` is not ``entry.architecture``, or whose weights are
    missing or not valid safetensors."""
    if entry.kind != "vlm" or getattr(entry.spec, "validates_own_files", False):
        return  # other kinds, and specs whose loader checks its own layout (a LoRA on a base), validate there
    config_file = path / CONFIG_FILES["vlm"]
    if not config_file.is_file():
        raise WrongArchitectureError(f"{path} has no {config_file.name}: it is not a Hugging Face model directory")
    model_type = _json_field(config_file, "model_type")
    # an entry of unknown architecture (weights not released yet) accepts any Qwen-VL model
    if entry.architecture == "unknown" and model_type in KNOWN_ARCHITECTURES:
        pass
    elif model_type != entry.architecture:
        expected = KNOWN_ARCHITECTURES.get(entry.architecture, (entry.architecture,))[0]
        raise WrongArchitectureError(
            f"{path} holds a {model_type!r} model, but {entry.name} is a {expected} ({entry.architecture!r}) model; "
            "point to the right directory, or pass entry=<name> matching its architecture"
        )
    require_safetensors(path)


def require_safetensors(path: Path) -> None:
    """Refuse a directory without ``*.safetensors`` weights (pickled ``.bin``/``.pt`` weights can run code
    when read), or with one whose header is malformed (one error naming the file, not a library traceback)."""
    weights = sorted(Path(path).glob("*.safetensors"))
    if not weights:
        raise WrongArchitectureError(
            f"{path} has no *.safetensors weights; the zoo loads safetensors only "
            "(convert pickled weights with `save_pretrained(..., safe_serialization=True)`)"
        )
    for file in weights:
        check_safetensors(file)


def from_pretrained_checked(model_class: Any, source: str | Path, **kwargs: Any) -> Any:
    """``model_class.from_pretrained`` that refuses weights lacking tensors the architecture expects.

    transformers fills missing tensors with random values and only logs a warning, so a weights file
    of another model (or a truncated one) would load as a random model that answers nonsense.
    """
    model, info = model_class.from_pretrained(source, output_loading_info=True, **kwargs)
    missing = sorted(info.get("missing_keys") or ())
    if missing:
        unexpected = len(info.get("unexpected_keys") or ())
        raise WrongArchitectureError(
            f"{source}: {len(missing)} tensor(s) of the {type(model).__name__} its config describes are not in its "
            f"weights (e.g. {', '.join(missing[:3])}; the file has {unexpected} tensor(s) the model does not use). "
            "Loading it would give a randomly initialised model; check that the weights belong to this config"
        )
    return model


def load_vlm_weights(
    source: str | Path,
    *,
    dtype: str | torch.dtype = "auto",
    revision: str | None = None,
    trust_remote_code: bool = False,
    model_class: Any = None,
) -> Any:
    """The VLM in ``source`` (a model directory or a Hub repository id): the one way every VLM loop and
    pipeline reads weights, so none of them can skip a guard.

    Safetensors only: a directory is checked by :func:`require_safetensors` before transformers opens it,
    and ``use_safetensors=True`` refuses a Hub repository with pickled weights alone. Weights lacking
    tensors the config describes are refused naming them (:func:`from_pretrained_checked`) instead of
    being randomly initialised.

    Args:
        dtype: as ``from_pretrained``'s; ``"auto"`` (its own default) keeps the dtype the checkpoint records.
        revision: the Hub revision of a repository id (ignored for a directory).
        trust_remote_code: run code the model ships (its config's ``auto_map``); the caller's opt-in.
        model_class: the class to build; default ``AutoModelForImageTextToText``, which reads it from
            ``config.json``. A trainer restoring into its model passes that model's class.

    Raises:
        WrongArchitectureError: no safetensors weights, or tensors of the model missing from them.
        zoo.model_files.ModelFileError: a safetensors header is malformed.
    """
    from transformers import AutoModelForImageTextToText

    if Path(source).is_dir():
        require_safetensors(Path(source))
    return from_pretrained_checked(
        model_class or AutoModelForImageTextToText, source, dtype=dtype, revision=revision, use_safetensors=True,
        trust_remote_code=trust_remote_code,
    )


def _entry_for_files(path: Path, name: str, repo_id: str | None, entry: str | None, kind: str | None) -> ModelEntry:
    """The entry that describes a directory or unlisted repository: explicit, recorded, or generic."""
    record = path / "training.json"
    if entry is None and record.is_file():
        entry = _json_field(record, "entry")
    if entry is not None:
        described = info(entry)
        if kind is not None and described.kind != kind:
            raise WrongArchitectureError(f"entry {described.name!r} is a {described.kind} model, not {kind}")
        return described
    kind = kind or infer_kind(path)
    architecture, spec = _generic_spec(path, kind)
    return ModelEntry(
        name=name, repo_id=repo_id, spec=spec, architecture=architecture, base_model="unknown",
        domain="unlisted", task=f"unlisted {kind} model",
    )  # fmt: skip


def _generic_spec(path: Path, kind: str) -> tuple[str, Any]:
    """``(architecture, spec)`` of a model no entry describes, read from its files."""
    if kind == "vlm":
        config_file = path / CONFIG_FILES["vlm"]
        model_type = _json_field(config_file, "model_type") if config_file.is_file() else None
        if model_type not in KNOWN_ARCHITECTURES:
            raise WrongArchitectureError(
                f"{path} holds a {model_type!r} model; the zoo's generic VLM pipeline serves "
                f"{', '.join(KNOWN_ARCHITECTURES)} (pass entry=<name> for a registered model)"
            )
        from zoo.pipelines.generic import parse_generic

        return model_type, VLMSpec(coord_frame=KNOWN_ARCHITECTURES[model_type][1], parser=parse_generic)
    if kind == "diffusion":
        return str(_json_field(path / CONFIG_FILES[kind], "_class_name", "DiffusionPipeline")), DiffusionSpec()
    if kind == "clip":
        return str(_json_field(path / CONFIG_FILES[kind], "model_cfg", {}).get("name", "open_clip")), ClipSpec()
    from zoo.pipelines.policy import read_policy_config

    config = read_policy_config(path)
    spec = PolicySpec(observation_dim=config.observation_dim, action_dim=config.action_dim,
                      action_chunk=config.action_chunk)  # fmt: skip
    return config.architecture, spec


def _json_field(file: Path, key: str, default: Any = None) -> Any:
    """``key`` of the JSON object in ``file`` (read through :func:`zoo.model_files.read_json`: size-capped,
    errors name the file); a file holding something other than an object is refused by name too."""
    content = read_json(file)
    if not isinstance(content, dict):
        raise WrongArchitectureError(f"{file} holds a JSON {type(content).__name__}, not an object")
    return content.get(key, default)


def _device(device: str) -> str:
    import torch

    if device != "auto":
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def _dtype(dtype: str | torch.dtype, device: str) -> torch.dtype:
    import torch

    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype == "auto":
        on_cuda = device.startswith("cuda")
        return torch.bfloat16 if on_cuda and torch.cuda.is_bf16_supported() else torch.float32
    try:
        value = getattr(torch, dtype)
    except AttributeError:
        value = None
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}; use 'auto', 'float32', 'bfloat16' or 'float16'")  # noqa: TRY004 - a bad name
    return value
