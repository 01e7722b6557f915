"""``zoo.load(name)``: a catalog name (or a local directory) to a ready inference pipeline."""

from __future__ import annotations

import importlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.hub import ResolvedModel, resolve
from zoo.pipelines import LOADERS
from zoo.registry import ModelEntry, PromptSpec, info

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
    """A directory's weights are not of the architecture the entry (or the zoo) expects."""


def load(
    name: str,
    revision: str | None = None,
    device: str = "auto",
    dtype: str | torch.dtype = "auto",
    *,
    entry: str | None = None,
    trust_remote_code: bool = False,
) -> Any:
    """The inference pipeline for a registered model or a local model directory.

    Args:
        name: a registry name or alias (``"patho-r1"``), or a path to a model directory.
        revision: Hub branch, tag or commit; defaults to the entry's pinned revision.
        device: ``"auto"`` (CUDA when available, else CPU) or any torch device string.
        dtype: ``"auto"`` (bfloat16 on CUDA, float32 on CPU) or a torch dtype / its name.
        entry: for a local directory, the registered entry whose prompt and parser to use
            (default: the ``entry`` recorded in the directory's ``training.json``, else a generic one).
        trust_remote_code: allow the repository's own Python code; only honoured for entries that
            need it, and never implied.

    Raises:
        rewards.registry.UnknownNameError: the name is not registered (close matches suggested).
        zoo.hub.ModelNotAvailableError: offline and not cached, gated, or not released.
        WrongArchitectureError: the files are not of the entry's architecture.
    """
    path = Path(name).expanduser()
    if path.is_dir():
        model_entry = _entry_for_directory(path, entry)
        resolved = ResolvedModel(path.resolve(), "local", "local")
    else:
        model_entry = info(name)
        if model_entry.trust_remote_code and not trust_remote_code:
            raise ValueError(
                f"{model_entry.name} runs code from its repository; read it, then pass trust_remote_code=True"
            )
        resolved = resolve(model_entry, revision, trust_remote_code=trust_remote_code)
    check_architecture(resolved.path, model_entry)
    device = _device(device)
    target = LOADERS.get(model_entry.kind)
    if target is None:
        raise NotImplementedError(f"no pipeline for models of kind {model_entry.kind!r} yet")
    module, _, func = target.partition(":")
    pipeline = getattr(importlib.import_module(module), func)(model_entry, resolved, device, _dtype(dtype, device))
    logger.info("loaded %s from %s (revision %s) on %s", model_entry.name, resolved.source, resolved.revision, device)
    return pipeline


def check_architecture(path: Path, entry: ModelEntry) -> None:
    """Refuse a directory whose ``config.json`` is not ``entry.architecture`` (or has no weights)."""
    if entry.kind != "vlm":
        return  # other kinds validate their own file layout in their loader
    config_file = path / "config.json"
    if not config_file.is_file():
        raise WrongArchitectureError(f"{path} has no config.json: it is not a Hugging Face model directory")
    model_type = json.loads(config_file.read_text()).get("model_type")
    # an entry of unknown architecture (weights not released yet) accepts any Qwen-VL model
    if entry.architecture == "unknown" and model_type in KNOWN_ARCHITECTURES:
        pass
    elif model_type != entry.architecture:
        expected = KNOWN_ARCHITECTURES.get(entry.architecture, (entry.architecture,))[0]
        raise WrongArchitectureError(
            f"{path} holds a {model_type!r} model, but {entry.name} is a {expected} ({entry.architecture!r}) model; "
            "point to the right directory, or pass entry=<name> matching its architecture"
        )
    if not any(path.glob("*.safetensors")):
        raise WrongArchitectureError(
            f"{path} has no *.safetensors weights; the zoo loads safetensors only "
            "(convert pickled weights with `save_pretrained(..., safe_serialization=True)`)"
        )


def _entry_for_directory(path: Path, entry: str | None) -> ModelEntry:
    """The entry that describes a local directory: explicit, recorded in training.json, or generic."""
    record = path / "training.json"
    if entry is None and record.is_file():
        entry = json.loads(record.read_text()).get("entry")
    if entry is not None:
        return info(entry)
    config_file = path / "config.json"
    model_type = json.loads(config_file.read_text()).get("model_type") if config_file.is_file() else None
    if model_type not in KNOWN_ARCHITECTURES:
        raise WrongArchitectureError(
            f"{path} holds a {model_type!r} model; the zoo's generic VLM pipeline serves "
            f"{', '.join(KNOWN_ARCHITECTURES)} (pass entry=<name> for a registered model)"
        )
    from zoo.pipelines.generic import parse_generic

    return ModelEntry(
        name=path.name,
        repo_id=None,
        kind="vlm",
        architecture=model_type,
        base_model="unknown",
        domain="local",
        task="generic VLM",
        prompt=PromptSpec(coord_frame=KNOWN_ARCHITECTURES[model_type][1]),
        parser=parse_generic,
    )


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
        raise ValueError(f"unknown dtype {dtype!r}; use 'auto', 'float32', 'bfloat16' or 'float16'")
    return value
