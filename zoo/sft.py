"""Supervised warm start for VLMs: teacher-forced cross-entropy on the answer tokens only.

GRPO needs a policy that already emits the task's format now and then; papers start from an
instruction-tuned checkpoint, and the tiny models of this repo start from a short SFT run. This
is deliberately a plain torch loop (TRL's ``SFTTrainer`` would work too, at the cost of a second
trainer stack in tests): the batch builder is the piece that matters, because it masks the
prompt (including image tokens) out of the loss exactly as chat-style SFT does.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from tqdm.auto import tqdm

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SFTExample:
    """One chat prompt with its images and the assistant text to learn."""

    messages: list[dict[str, Any]]
    images: Sequence[Any]
    target: str


def build_batch(processor: Any, examples: Sequence[SFTExample]) -> dict[str, torch.Tensor]:
    """Processor inputs for ``examples`` with ``labels`` = answer tokens (+ end of turn), -100 elsewhere."""
    tokenizer = processor.tokenizer
    prompts = [processor.apply_chat_template(e.messages, add_generation_prompt=True, tokenize=False) for e in examples]
    full = [p + e.target + tokenizer.eos_token for p, e in zip(prompts, examples)]
    images = [img for e in examples for img in e.images] or None
    old_side = tokenizer.padding_side
    tokenizer.padding_side = "right"  # labels are located from the left edge of each row
    try:
        batch = processor(text=full, images=images, padding=True, return_tensors="pt")
        prompt_lengths = [
            len(processor(text=[p], images=list(e.images) or None, return_tensors="pt")["input_ids"][0])
            for p, e in zip(prompts, examples)
        ]
    finally:
        tokenizer.padding_side = old_side
    labels = batch["input_ids"].clone()
    for row, start in enumerate(prompt_lengths):
        labels[row, :start] = -100
    labels[batch["attention_mask"] == 0] = -100
    batch["labels"] = labels
    return batch


def freeze_vision_tower(model: torch.nn.Module) -> int:
    """Freeze the vision encoder (as the RL papers do); returns the number of frozen parameters."""
    frozen = 0
    for name, param in model.named_parameters():
        if ".visual." in f".{name}" or name.startswith("visual.") or ".vision_tower." in f".{name}":
            param.requires_grad_(False)
            frozen += param.numel()
    return frozen


def train_sft(
    model: torch.nn.Module,
    processor: Any,
    sample_examples: Callable[[random.Random, int], Sequence[SFTExample]],
    *,
    steps: int,
    batch_size: int = 16,
    lr: float = 2e-3,
    warmup: int = 30,
    seed: int = 0,
    freeze_vision: bool = True,
    grad_clip: float = 1.0,
    callback: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Train ``steps`` AdamW steps on batches drawn by ``sample_examples(rng, batch_size)``.

    Returns the loss of every step. ``callback(step, loss)`` runs after each step (evaluation,
    checkpointing). Linear warm-up then constant learning rate, gradient clipping at ``grad_clip``.
    """
    torch.manual_seed(seed)
    rng = random.Random(seed)
    if freeze_vision:
        logger.info("froze %d vision-tower parameters", freeze_vision_tower(model))
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / max(1, warmup)))
    model.train()
    losses: list[float] = []
    for step in tqdm(range(steps), desc="sft", disable=None):
        batch = build_batch(processor, sample_examples(rng, batch_size))
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, grad_clip)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if callback is not None:
            callback(step + 1, losses[-1])
    model.eval()
    return losses
