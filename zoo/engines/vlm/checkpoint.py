"""Checkpoints of the VLM engines' own loops (``vlm-sft``, ``vlm-semi-online``).

TRL's trainer writes its own checkpoints; these loops write the same shape: the weights and the
processor (so ``zoo eval`` and ``zoo.load`` read any ``checkpoint-N`` like a model directory),
the loop's state for ``--resume``, then the completion marker of :mod:`zoo.runs`, last. A sharded run
(:mod:`zoo.sharding`) gathers its weights on rank 0 first (:func:`gather_weights`, every rank calls it) and writes
the same files: a checkpoint loads without FSDP, and resumes sharded or not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo.runs import mark_complete, prune_checkpoints


def gather_weights(model: Any) -> dict[str, Any] | None:
    """A sharded model's whole weights on rank 0 (``{}`` on the others; a collective, so every rank calls it), or
    ``None`` for a model every rank holds whole (``save_pretrained`` reads it as it is)."""
    from zoo.sharding import full_state_dict, is_sharded

    return full_state_dict(model) if is_sharded(model) else None


def save_model(model: Any, processor: Any, folder: Path, weights: dict[str, Any] | None = None) -> None:
    """``save_pretrained`` of both, weights as safetensors (``weights``: a sharded model's, :func:`gather_weights`)."""
    from zoo.runs import check_finite_weights
    from zoo.sharding import unsharded_copy

    check_finite_weights(str(folder), weights if weights is not None else model.state_dict())
    folder.mkdir(parents=True, exist_ok=True)
    (model if weights is None else unsharded_copy(model, weights)).save_pretrained(folder, safe_serialization=True)
    processor.save_pretrained(folder)


def save_checkpoint(folder: Path, model: Any, processor: Any, state: dict[str, Any], state_file: str, step: int,
                    keep: int | None, weights: dict[str, Any] | None = None) -> None:  # fmt: skip
    """Weights + processor + ``state`` (tensors and plain values only), then the marker; keep ``keep``."""
    import torch

    save_model(model, processor, folder, weights)
    torch.save(state, folder / state_file)
    mark_complete(folder, step)
    prune_checkpoints(folder.parent, keep)
