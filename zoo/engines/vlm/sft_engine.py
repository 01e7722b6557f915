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
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from zoo.engines.vlm.checkpoint import save_checkpoint, save_model
from zoo.engines.vlm.checks import SFTChecked, check_sft
from zoo.engines.vlm.sft_recipe import SFTRecipe
from zoo.recipe import RecipeError
from zoo.run_logging import CPU_MINUTES, MetricsLog
from zoo.runs import read_state, restoring, start_run

if TYPE_CHECKING:
    from zoo.data import Sample
    from zoo.distributed import DataParallel
    from zoo.engines.vlm.sft import SFTExample

logger = logging.getLogger(__name__)

STATE_FILE = "sft_state.pt"


def train(recipe: SFTRecipe, output_dir: Path, *, resume: bool = False, dry_run: bool = False,
          checked: SFTChecked | None = None) -> Path:  # fmt: skip
    """Run ``recipe`` into ``output_dir`` (``final/`` holds the model); returns ``output_dir``. ``checked``: what the
    engine's check resolved (:func:`~zoo.engines.vlm.checks.check_sft`; it runs here when not given).

    Under ``torchrun --nproc_per_node N`` the ranks split every global batch (:class:`~zoo.distributed.DataParallel`,
    gloo: this engine trains on the CPU) and rank 0 alone writes ``metrics.csv``, the checkpoints and ``final/``.
    """
    if dry_run:
        return output_dir
    from zoo.distributed import DataParallel

    parallel = DataParallel()
    try:
        return _train(recipe, output_dir, resume, parallel, checked)
    finally:
        parallel.close()


def _train(recipe: SFTRecipe, output_dir: Path, resume: bool, parallel: DataParallel,
           checked: SFTChecked | None) -> Path:  # fmt: skip
    from zoo.engines import ENGINES
    from zoo.engines.vlm.checkpoint import gather_weights
    from zoo.engines.vlm.policy_model import load_policy, policy_precision, resumed_policy
    from zoo.engines.vlm.sft import SFTLoop

    sharding = ENGINES.get(recipe.engine).launched(recipe.launch)
    precision = policy_precision(recipe, cuda=False)  # this loop trains on the CPU
    start = start_run(output_dir, resume=resume)
    checkpoint = start.checkpoint
    sampler = ExampleStream(recipe, checked)
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

    def __init__(self, recipe: SFTRecipe, checked: SFTChecked | None = None) -> None:
        """``checked``: the entry's contract and the answer format as the engine's check resolved them (it runs here
        when not given)."""
        checked = check_sft(recipe) if checked is None else checked
        self.data = recipe.data
        self.contract = checked.contract
        self.answer = checked.answer
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
