"""Pickled checkpoints (``*.pt``) to safetensors, without ever running pickle code.

Some authors publish weights only as a pickled ``torch.save`` file (Patho-CLIP's ``PathoCLIP-B.pt``).
Unpickling runs whatever callables the file names, so the zoo reads such a file once with
``torch.load(weights_only=True)`` - torch's restricted unpickler, which rebuilds tensors and plain
containers and refuses every other global - checks that the result is a plain state dict, and
writes it as safetensors into a content-addressed cache. Later loads read the safetensors file.

``weights_only`` is only trusted on torch >= 2.6 (CVE-2025-32434 let older versions run code
through it; transformers refuses them for the same reason).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path

logger = logging.getLogger(__name__)

#: Converted files live here: ``<cache>/<sha256 of the pickle>/<name>.safetensors``.
CONVERTED_CACHE = Path(
    os.environ.get("ZOO_CONVERTED_CACHE", Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")))
    / "zoo-converted"
)

#: Oldest torch whose ``weights_only`` unpickler has no known code-execution hole.
MIN_TORCH = (2, 6)


class UnsafeCheckpointError(ValueError):
    """A pickled checkpoint was refused: it needs globals beyond tensors, or is not a state dict."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _torch_version() -> tuple[int, int]:
    import torch

    major, minor = torch.__version__.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def plain_state_dict(obj: object, source: Path) -> dict:
    """``obj`` as ``{name: tensor}``; open_clip's training layout ``{"state_dict": {...}, "epoch": ...}``
    is unwrapped and a DataParallel ``module.`` prefix removed. Anything else is refused."""
    import torch

    if isinstance(obj, Mapping) and isinstance(obj.get("state_dict"), Mapping):
        obj = obj["state_dict"]
    if not isinstance(obj, Mapping) or not obj:
        raise UnsafeCheckpointError(
            f"{source} is not a state dict (got {type(obj).__name__}); the zoo converts only "
            "{parameter name: tensor} mappings"
        )
    bad = [k for k, v in obj.items() if not isinstance(k, str) or not isinstance(v, torch.Tensor)]
    if bad:
        raise UnsafeCheckpointError(
            f"{source} is not a plain state dict: {len(bad)} entries are not str -> tensor "
            f"(first: {bad[0]!r}); convert it yourself where you trust the file"
        )
    return {k.removeprefix("module."): v for k, v in obj.items()}


def convert_pickled(path: str | Path, cache: Path | None = None) -> Path:
    """The safetensors copy of the pickled state dict at ``path`` (converted on first call).

    Raises:
        UnsafeCheckpointError: the file needs code to unpickle (a ``__reduce__`` payload, a custom
            class) or holds something other than a state dict; nothing from it was executed.
        RuntimeError: torch is older than 2.6, whose ``weights_only`` loader is not safe.
    """
    import pickle

    import torch
    from safetensors.torch import save_file

    source = Path(path)
    out_dir = (cache or CONVERTED_CACHE) / _sha256(source)
    target = out_dir / (source.stem + ".safetensors")
    if target.is_file():
        return target
    if _torch_version() < MIN_TORCH:
        raise RuntimeError(
            f"torch {torch.__version__} cannot load {source.name} safely (weights_only is unsafe before 2.6, "
            "CVE-2025-32434); upgrade torch to >= 2.6"
        )
    try:
        obj = torch.load(source, map_location="cpu", weights_only=True, mmap=False)
    except (pickle.UnpicklingError, RuntimeError, AttributeError, TypeError) as err:
        raise UnsafeCheckpointError(
            f"refused to load {source}: torch's tensors-only unpickler rejected it ({str(err).splitlines()[0]}). "
            "Nothing in it was executed. Use weights from a source you trust, as safetensors"
        ) from None
    state = plain_state_dict(obj, source)
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    save_file({k: v.detach().clone().contiguous() for k, v in state.items()}, str(partial), metadata={"converted_from": source.name})
    partial.replace(target)  # a killed conversion never leaves a file that looks complete
    logger.info("converted %s (%d tensors) to %s", source.name, len(state), target)
    return target
