"""Checkpoints of the VLM engines' own loops (``vlm-sft``, ``vlm-semi-online``).

TRL's trainer writes its own checkpoints; these loops write the same shape: the weights and the
processor (so ``zoo eval`` and ``zoo.load`` read any ``checkpoint-N`` like a model directory),
the loop's state for ``--resume``, then the completion marker of :mod:`zoo.runs`, last.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo.runs import mark_complete, prune_checkpoints


def save_model(model: Any, processor: Any, folder: Path) -> None:
    """``save_pretrained`` of both, weights as safetensors."""
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    processor.save_pretrained(folder)


def save_checkpoint(folder: Path, model: Any, processor: Any, state: dict[str, Any], state_file: str, step: int,
                    keep: int | None) -> None:  # fmt: skip
    """Weights + processor + ``state`` (tensors and plain values only), then the marker; keep ``keep``."""
    import torch

    save_model(model, processor, folder)
    torch.save(state, folder / state_file)
    mark_complete(folder, step)
    prune_checkpoints(folder.parent, keep)
