"""The recipe of the ``vlm-sft`` engine (:mod:`zoo.engines.vlm.sft_engine`): a supervised run of a VLM.

It sits apart from the loop so that reading a recipe imports no training code: a registered dataset, a registered
answer format (the assistant text to teach, e.g. GUI-G1's ``qwen-bbox-json``), the model and the optimiser's
budget. What the names resolve to is the engine's check (:func:`zoo.engines.vlm.checks.check_sft`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zoo.engines.vlm.recipe import ModelConfig, check_own_loop_dtype
from zoo.recipe import DataConfig, Recipe, RecipeError, TrainingBase


@dataclass(frozen=True)
class SFTDataConfig(DataConfig):
    """The prompts (a registered dataset) and the answers to teach (a registered answer format)."""

    answer_format: str = ""
    """Registered answer format (``zoo.data.ANSWER_FORMATS``): writes a sample's reference answer as text."""
    stream: bool = False
    """Draw every batch fresh: ``loader(n=batch_size, seed=stream_seed + rng.randrange(10**9), **kwargs)``
    (synthetic tasks); ``False`` cycles through the loaded samples in a seeded random order."""
    stream_seed: int = 1_000_000
    """Offset of streamed batch seeds, keeping them clear of the held-out evaluation seeds."""
    corpus_kwargs: dict[str, Any] = field(default_factory=dict)
    """Loader arguments for the samples whose prompt + answer train a ``tiny:`` model's tokenizer
    (default: ``kwargs``)."""
    multi_turn: bool = False
    """Trajectory data (``meta["episode_id"]``/``["step"]``): each step is taught in its dialogue, the
    earlier steps answered by the expert and the last two screenshots kept, as the semi-online RL
    loop shows it (:func:`zoo.engines.vlm.semi_online_rollout.expert_turns`), each turn the one ``model.entry``
    asks at that step (:func:`zoo.engines.vlm.contract.with_turn_contract`). A streamed batch
    draws ``batch_size`` episodes and teaches ``batch_size`` of their steps."""


@dataclass(frozen=True, kw_only=True)
class SFTTrainingConfig(TrainingBase):
    """Optimiser, batch and budget of an SFT run (the shared fields, plus these)."""

    batch_size: int = 16
    """Examples per optimiser step."""
    warmup_steps: int = 30
    """Linear warm-up steps, then a constant learning rate."""
    decay_steps: int = 0
    """Linear decay of the learning rate to zero over the last N of ``steps`` (warm-up-stable-decay,
    :func:`~zoo.engines.vlm.sft.lr_factor`); 0 keeps it constant to the end."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm."""
    freeze_vision: bool = True
    """Keep the vision tower frozen, as the papers do."""
    fp32_master_weights: bool = True
    """Keep the trained weights and AdamW's moments in float32 under ``model.dtype``'s 16-bit compute
    (:mod:`zoo.precision`); ``false`` steps the 16-bit weights themselves and warns of the rounding."""
    max_minutes: float | None = None
    """Stop after this much CPU time of training (the equal-time control arm of an RL run); ``None``
    runs ``steps`` steps."""


@dataclass(frozen=True, kw_only=True)
class SFTRecipe(Recipe):
    """A supervised run of a VLM: teacher-forced cross-entropy on the answer tokens."""

    model: ModelConfig = field(default_factory=ModelConfig)
    """The model to train (``tiny:*``, a directory, a zoo name or a Hub base model)."""
    data: SFTDataConfig = field(default_factory=SFTDataConfig)
    """Prompts and answers."""
    training: SFTTrainingConfig = field(default_factory=SFTTrainingConfig)
    """Optimiser, checkpoints and output."""

    def validate(self) -> None:
        """The recipe's own fields; the dataset, answer format and entry it names are the engine's check
        (:func:`zoo.engines.vlm.checks.check_sft`)."""
        if not self.data.name or not self.data.answer_format:
            raise RecipeError("an SFT recipe needs data.name (a dataset) and data.answer_format (zoo.data.ANSWER_FORMATS)")
        check_own_loop_dtype(self.model, "engine vlm-sft")
        if self.training.batch_size < 1:
            raise RecipeError(f"training.batch_size={self.training.batch_size} must be >= 1")
        if not 0 <= self.training.decay_steps <= self.training.steps:
            raise RecipeError(f"training.decay_steps={self.training.decay_steps} must be between 0 and "
                              f"training.steps={self.training.steps}")  # fmt: skip
        if self.training.decay_steps and self.training.max_minutes is not None:
            raise RecipeError("training.decay_steps decays towards training.steps, which training.max_minutes may "
                              "never reach: use one or the other")  # fmt: skip
        if self.data.multi_turn and not self.data.stream:
            raise RecipeError("data.multi_turn needs data.stream: true (a batch draws whole episodes)")
