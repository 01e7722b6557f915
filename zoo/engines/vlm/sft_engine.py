"""The ``vlm-sft`` engine: the supervised stage before GRPO, as a recipe ``zoo train`` runs.

RL papers start from an instruction-tuned model; a zoo recipe that starts from a random tiny
model (CPU smoke runs, the shipped tiny checkpoints) needs a supervised warm start first, and a
fair RL result needs its control arm: the same SFT continued for the time RL used. Both are
:class:`SFTRecipe` s. The data is a registered dataset plus a registered answer format (the
assistant text to teach, e.g. GUI-G1's ``qwen-bbox-json``); with ``data.stream`` every batch is
drawn fresh from the loader with a seed from the run's data RNG, so a synthetic task never
repeats a screen. The run directory is the same as every engine's: ``recipe.yaml``,
``metrics.csv`` with ``loss_curve.png``, atomic ``checkpoint-N/`` folders that ``--resume``
continues from exactly (weights, optimiser, schedule, both RNGs, and without ``data.stream`` the
epoch order being consumed), and ``final/``. The loop's state is read back as tensors and plain
values only (:func:`zoo.runs.read_state`): a handed run directory cannot run code through ``--resume``.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from zoo.engines.vlm.checkpoint import save_checkpoint, save_model
from zoo.engines.vlm.recipe import ModelConfig, check_contract, check_image_first, check_own_loop_dtype
from zoo.recipe import DataConfig, Recipe, RecipeError, TrainingBase
from zoo.run_logging import CPU_MINUTES, MetricsLog
from zoo.runs import read_state, restoring, start_run

if TYPE_CHECKING:
    from zoo.data import Sample
    from zoo.distributed import DataParallel
    from zoo.engines.vlm.sft import SFTExample

logger = logging.getLogger(__name__)

STATE_FILE = "sft_state.pt"


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
        if not self.data.name or not self.data.answer_format:
            raise RecipeError("an SFT recipe needs data.name (a dataset) and data.answer_format (zoo.data.ANSWER_FORMATS)")
        check_contract(self.model, self.data.system_prompt, self.provenance)
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
        if not self.data.multi_turn:
            check_image_first(self.model, "the single-turn SFT loop")


def train(recipe: SFTRecipe, output_dir: Path, *, resume: bool = False, dry_run: bool = False) -> Path:
    """Run ``recipe`` into ``output_dir`` (``final/`` holds the model); returns ``output_dir``.

    Under ``torchrun --nproc_per_node N`` the ranks split every global batch (:class:`~zoo.distributed.DataParallel`,
    gloo: this engine trains on the CPU) and rank 0 alone writes ``metrics.csv``, the checkpoints and ``final/``.
    """
    if dry_run:
        return output_dir
    from zoo.distributed import DataParallel

    parallel = DataParallel()
    try:
        return _train(recipe, output_dir, resume, parallel)
    finally:
        parallel.close()


def _train(recipe: SFTRecipe, output_dir: Path, resume: bool, parallel: DataParallel) -> Path:
    from zoo.engines import ENGINES
    from zoo.engines.vlm.checkpoint import gather_weights
    from zoo.engines.vlm.policy_model import load_policy, policy_precision, resumed_policy
    from zoo.engines.vlm.sft import SFTLoop

    sharding = ENGINES.get(recipe.engine).launched(recipe.launch)
    precision = policy_precision(recipe, cuda=False)  # this loop trains on the CPU
    start = start_run(output_dir, resume=resume)
    checkpoint = start.checkpoint
    sampler = ExampleStream(recipe)
    if checkpoint is not None:
        model, processor = resumed_policy(recipe, checkpoint)
    else:
        corpus = sampler.corpus() if recipe.model.name.startswith("tiny:") else None
        model, processor = load_policy(recipe, corpus=corpus, precision=precision)
    tr = recipe.training
    if tr.batch_size % parallel.world:
        raise RecipeError(f"training.batch_size={tr.batch_size} is the global batch: it must split evenly over "
                          f"the {parallel.world} processes")  # fmt: skip
    loop = SFTLoop(model, processor, sampler, batch_size=tr.batch_size, lr=tr.lr, warmup=tr.warmup_steps,
                   seed=tr.seed, freeze_vision=tr.freeze_vision, grad_clip=tr.max_grad_norm,
                   total_steps=tr.steps, decay_steps=tr.decay_steps, parallel=parallel, precision=precision,
                   sharding=sharding)  # fmt: skip
    model = loop.model
    used = 0.0
    if checkpoint is not None:
        state = read_state(checkpoint / STATE_FILE)
        with restoring(checkpoint / STATE_FILE):  # a hand-edited state is one sentence naming the file
            loop.load_state_dict(state)
            sampler.load_state_dict(state.get("examples", {"order": []}))
            used = float(state["cpu_seconds"])
    log = MetricsLog.for_run(start, curve="loss")
    budget = None if tr.max_minutes is None else tr.max_minutes * 60
    quiet = None if parallel.is_main else True  # one progress bar per job
    bar = tqdm(total=tr.steps, initial=loop.step_count, desc=f"sft {recipe.name}", disable=quiet)
    while loop.step_count < tr.steps and (budget is None or used < budget):
        began = time.process_time()
        loss = loop.step()
        # the ranks' mean CPU time: every rank takes the same stop decision on the time budget
        (used,) = (u / parallel.world for u in parallel.sum([used + time.process_time() - began]))
        bar.update(1)
        last = loop.step_count == tr.steps or (budget is not None and used >= budget)
        if loop.step_count % tr.logging_steps == 0 or last:
            log.log(loop.step_count, {"loss": loss, "lr": loop.schedule.get_last_lr()[0], CPU_MINUTES: used / 60})
        if loop.step_count % tr.save_steps == 0 or last:
            state, weights = loop.state_dict(), gather_weights(model)  # collectives when sharded: every rank
            if parallel.is_main:
                save_checkpoint(output_dir / f"checkpoint-{loop.step_count}", model, processor,
                                {**state, "examples": sampler.state_dict(), "cpu_seconds": used}, STATE_FILE,
                                loop.step_count, tr.save_total_limit, weights)  # fmt: skip
        parallel.barrier()
    bar.close()
    if budget is not None and used >= budget:
        logger.info("stopped at step %d: training.max_minutes=%.2f reached", loop.step_count, tr.max_minutes)
    log.finish()
    model.eval()
    weights = gather_weights(model)  # a sharded model's, gathered once for the check and the save
    parallel.check_same_weights(model if weights is None else weights)
    if parallel.is_main:
        save_model(model, processor, output_dir / "final", weights)
    return output_dir


class ExampleStream:
    """Batches of :class:`~zoo.engines.vlm.sft.SFTExample` s for an :class:`~zoo.engines.vlm.sft.SFTLoop`.

    Without ``data.stream`` it cycles through seeded epochs: ``order`` is the rest of the current epoch's
    permutation, consumed from its end. The permutation is drawn once per epoch, so the loop's data RNG
    alone does not say where a run stands mid-epoch: :meth:`state_dict` carries ``order`` into checkpoints.
    """

    def __init__(self, recipe: SFTRecipe) -> None:
        from zoo.data import answer_format

        self.data = recipe.data
        self.contract = recipe.model.contract()
        self.answer = answer_format(self.data.answer_format)
        self.samples = [] if self.data.stream else self.data.load()
        if not self.data.stream and not self.samples:
            raise RecipeError(f"data {self.data.name!r} with kwargs={self.data.kwargs} gave no samples")
        self.order: list[int] = []

    def __call__(self, rng: random.Random, batch_size: int) -> list[SFTExample]:
        from zoo.data import load_dataset

        if self.data.stream:
            seed = self.data.stream_seed + rng.randrange(10**9)
            batch = list(load_dataset(self.data.name, **{**self.data.kwargs, "n": batch_size, "seed": seed}))
            if self.data.multi_turn:
                examples = self.multi_turn_examples(batch)
                return rng.sample(examples, min(batch_size, len(examples)))
        else:
            batch = []
            while len(batch) < batch_size:  # seeded epochs: every sample once before any repeats
                if not self.order:
                    self.order = rng.sample(range(len(self.samples)), len(self.samples))
                batch.append(self.samples[self.order.pop()])
        return [self.example(s) for s in batch]

    def state_dict(self) -> dict[str, list[int]]:
        """The rest of the current epoch's order (empty when streaming, or between epochs)."""
        return {"order": list(self.order)}

    def load_state_dict(self, state: dict[str, list[int]]) -> None:
        """Continue the epoch :meth:`state_dict` was taken in (a checkpoint from before epoch orders were saved
        gives an empty order: the next batch starts a fresh epoch)."""
        self.order = [int(i) for i in state["order"]]

    def multi_turn_examples(self, samples: list[Sample]) -> list[SFTExample]:
        """One example per step of every episode in ``samples``, in its expert-history dialogue: each step's turn
        as ``model.entry`` asks it, its screenshot where the entry places it (as the semi-online loop does)."""
        from zoo.engines.vlm.contract import with_turn_contract
        from zoo.engines.vlm.semi_online_rollout import expert_turns, group_episodes
        from zoo.engines.vlm.sft import SFTExample

        spec = self.contract
        image_first = spec is not None and spec.image_first
        out = []
        for episode in group_episodes([with_turn_contract(s, spec) for s in samples]):
            for sample, turn in zip(episode, expert_turns(episode, self.answer, image_first=image_first)):
                out.append(SFTExample(messages=turn.messages, images=turn.images, target=self.answer(sample)))
        return out

    def example(self, sample: Sample) -> SFTExample:
        """The chat turn the policy sees (images first, then the prompt text) and the answer to learn."""
        from zoo.engines.vlm.sft import SFTExample

        spec = self.contract  # model.entry: the entry's wrapping, as zoo.load asks (zoo.engines.vlm.contract)
        system = spec.system_prompt() if spec else self.data.system_prompt
        content = [*({"type": "image"} for _ in sample.images), {"type": "text", "text": self.question(sample)}]
        messages = [{"role": "user", "content": content}]
        if system:
            messages.insert(0, {"role": "system", "content": [{"type": "text", "text": system}]})
        return SFTExample(messages=messages, images=sample.images, target=self.answer(sample))

    def corpus(self) -> list[str]:
        """Prompt + answer texts for a ``tiny:`` model's tokenizer, so the task's words are whole tokens."""
        from zoo.data import load_dataset

        kwargs = self.data.corpus_kwargs or self.data.kwargs
        return [f"{self.question(s)} {self.answer(s)}" for s in load_dataset(self.data.name, **kwargs)]

    def question(self, sample: Sample) -> str:
        """The user text of ``sample``: its question, wrapped by ``model.entry``'s template when the recipe names one
        (for trajectory data, the template of the sample's step: :func:`~zoo.engines.vlm.contract.with_turn_contract`)."""
        if self.contract is None:
            return sample.question
        if self.data.multi_turn:
            from zoo.engines.vlm.contract import with_turn_contract

            return with_turn_contract(sample, self.contract).question
        return self.contract.user_text(sample.question, sample.meta.get("template"))
