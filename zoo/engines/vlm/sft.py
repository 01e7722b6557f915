"""Supervised fine-tuning of a VLM: teacher-forced cross-entropy on the answer tokens only.

GRPO needs a policy that already emits the task's format now and then; papers start from an
instruction-tuned checkpoint, and the tiny models of this repo start from a short SFT run (the
``vlm-sft`` engine, :mod:`zoo.engines.vlm.sft_engine`). This is deliberately a plain torch loop
(TRL's ``SFTTrainer`` would work too, at the cost of a second trainer stack): the batch builder
is the piece that matters, because it masks the prompt (including image tokens) out of the loss
exactly as chat-style SFT does. :class:`SFTLoop` keeps everything of its own a resumed run needs
(optimiser, schedule, data RNG, torch RNG) in one state dict of tensors and plain values; a sampler
with a position of its own (the ``vlm-sft`` engine's epoch order) is saved beside it by its caller.
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from tqdm.auto import tqdm

from zoo.distributed import DataParallel
from zoo.runs import check_finite

if TYPE_CHECKING:
    from zoo.precision import Precision
    from zoo.sharding import Sharding

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SFTExample:
    """One chat prompt with its images and the assistant text to learn."""

    messages: list[dict[str, Any]]
    images: Sequence[Any]
    target: str


#: ``sample_examples(rng, batch_size)``: a batch drawn with the loop's own data RNG.
ExampleSampler = Callable[[random.Random, int], Sequence[SFTExample]]


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


class SFTLoop:
    """AdamW with linear warm-up then a constant rate, gradient clipping, one batch per step.

    Seeding happens here (``torch.manual_seed(seed)``, data ``Random(seed)``), so two loops built
    with the same arguments on the same model take identical steps; :meth:`state_dict` /
    :meth:`load_state_dict` carry the step, optimiser, schedule and both RNGs across a restart.

    With ``parallel`` spanning several processes, every rank draws the same global batch of ``batch_size``
    and trains on its shard (:class:`~zoo.distributed.DataParallel`): each rank's mean loss is weighted by
    its share of the batch's answer tokens, so the gradients summed over ranks are the one-process batch's
    gradient (to float rounding: the sums run in another order). The data RNG is the same on every rank on
    purpose (it picks the global batch); nothing else in a step draws random numbers, so the per-rank state
    is the same too and one state dict serves every rank, whatever the number of processes it resumes with.

    ``precision`` (:mod:`zoo.precision`) computes under autocast over the model's float32 weights; ``sharding`` with an FSDP launch splits the model over the ranks
    (:meth:`~zoo.distributed.DataParallel.prepare`), whose gradients then arrive summed by FSDP2's reduce-scatter.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        processor: Any,
        sample_examples: ExampleSampler,
        *,
        batch_size: int = 16,
        lr: float = 2e-3,
        warmup: int = 30,
        seed: int = 0,
        freeze_vision: bool = True,
        grad_clip: float = 1.0,
        total_steps: int | None = None,
        decay_steps: int = 0,
        parallel: DataParallel | None = None,
        precision: Precision | None = None,
        sharding: Sharding | None = None,
    ) -> None:
        from zoo.precision import Precision

        torch.manual_seed(seed)
        self.processor, self.sample_examples = processor, sample_examples
        self.parallel = parallel
        self.precision = precision or Precision("float32", "float32", "float32")
        self.batch_size, self.grad_clip = batch_size, grad_clip
        self.rng = random.Random(seed)
        if freeze_vision:
            logger.info("froze %d vision-tower parameters", freeze_vision_tower(model))
        if parallel is not None and sharding is not None:
            model = parallel.prepare(model, sharding, self.precision)
        self.model = model
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=lr)
        if decay_steps and (total_steps is None or not 0 < decay_steps <= total_steps):
            raise ValueError(f"decay_steps={decay_steps} needs total_steps >= decay_steps (got {total_steps})")
        factor = functools.partial(lr_factor, warmup=warmup, total=total_steps or 0, decay=decay_steps)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimizer, factor)
        self.step_count = 0

    def step(self) -> float:
        """One optimiser step on a fresh batch; returns its loss."""
        self.model.train()
        examples = self.sample_examples(self.rng, self.batch_size)
        if self.parallel is None or self.parallel.world == 1:
            with self.precision.autocast(self._device_type()):
                loss = self.model(**build_batch(self.processor, examples)).loss
            loss.backward()
            value = loss.item()
        else:
            value = self._sharded_backward(self.parallel, examples)
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.grad_clip)
        check_finite(f"sft step {self.step_count + 1}", loss=value, grad_norm=float(norm))
        self.optimizer.step()
        self.schedule.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step_count += 1
        return value

    def _sharded_backward(self, parallel: DataParallel, examples: Sequence[SFTExample]) -> float:
        """This rank's share of the global batch's gradient, then the sum over ranks; returns the batch's loss.

        The model's loss is the mean over the answer tokens it is given (labels shifted by one, ``-100`` left
        out); weighted by ``tokens / global tokens`` the ranks' losses add up to the mean over the whole batch."""
        mine = parallel.shard(examples)
        batch = build_batch(self.processor, mine) if mine else None
        tokens = int((batch["labels"][:, 1:] != -100).sum()) if batch is not None else 0
        (total,) = parallel.sum([tokens])
        share = 0.0
        if batch is not None and tokens:
            with self.precision.autocast(self._device_type()):
                loss = self.model(**batch).loss * (tokens / total)
            loss.backward()
            share = loss.item()
        parallel.sum_gradients(self.params)
        (value,) = parallel.sum([share])
        return value

    def _device_type(self) -> str:
        """Where the forward computes (a CPU-offloaded shard lives on the CPU and computes on its rank's device)."""
        return self.parallel.device.type if self.parallel is not None else next(self.model.parameters()).device.type

    def state_dict(self) -> dict[str, Any]:
        """Everything but the weights that the next step depends on (the optimiser's state gathered whole, keyed by
        parameter name: a collective when the model is sharded, so every rank calls it)."""
        from zoo.sharding import optimizer_state

        return {
            "step": self.step_count,
            "optimizer": optimizer_state(self.model, self.optimizer),
            "schedule": self.schedule.state_dict(),
            "data_rng": self.rng.getstate(),
            "torch_rng": torch.get_rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue where :meth:`state_dict` was taken (the weights are loaded by the caller)."""
        from zoo.sharding import load_optimizer_state

        self.step_count = int(state["step"])
        load_optimizer_state(self.model, self.optimizer, state["optimizer"])
        self.schedule.load_state_dict(state["schedule"])
        self.rng.setstate(state["data_rng"])
        torch.set_rng_state(state["torch_rng"])


def lr_factor(step: int, *, warmup: int, total: int, decay: int) -> float:
    """The learning-rate multiplier of optimiser step ``step`` (0-based): linear warm-up over ``warmup``
    steps, constant, then (``decay > 0``) linear to zero over the last ``decay`` of ``total`` steps.

    That is the warm-up-stable-decay (WSD) schedule of MiniCPM (Hu et al., 2024, arXiv:2404.06395), with a
    linear decay where MiniCPM's is exponential: a
    constant-rate run can be ended at any step by a short decay, which settles the weights that a
    constant rate keeps moving (a tiny model's held-out accuracy swings by several points between
    checkpoints of a constant-rate run). With ``decay = 0`` it is warm-up then constant. Warm-up counts
    from 1 (step 0 already trains at ``1 / warmup`` of the rate), unlike transformers' schedules.
    """
    factor = min(1.0, (step + 1) / max(1, warmup))
    if decay and step >= total - decay:
        factor *= max(0.0, (total - step) / decay)
    return factor


def train_sft(
    model: torch.nn.Module,
    processor: Any,
    sample_examples: ExampleSampler,
    *,
    steps: int,
    callback: Callable[[int, float], None] | None = None,
    **loop_kwargs: Any,
) -> list[float]:
    """Train ``steps`` steps of an :class:`SFTLoop` (``loop_kwargs``: its settings); returns every loss.

    ``callback(step, loss)`` runs after each step (evaluation in benches and tests).
    """
    loop = SFTLoop(model, processor, sample_examples, **loop_kwargs)
    losses: list[float] = []
    for _ in tqdm(range(steps), desc="sft", disable=None):
        losses.append(loop.step())
        if callback is not None:
            callback(loop.step_count, losses[-1])
    model.eval()
    return losses
