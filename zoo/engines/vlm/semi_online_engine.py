"""UI-S1's semi-online RL on one machine: the ``vlm-semi-online`` engine (multi-turn estimators, ``ui-s1``).

TRL's ``GRPOTrainer`` generates one completion per prompt; UI-S1 trains on *turns* of
trajectories whose number is known only after the rollout (copies stop at their patch budget),
so this is a plain torch loop, reading top to bottom in training order:

1. draw ``episodes_per_step`` episodes of the registered trajectory dataset, each step's prompt the turn
   ``model.entry`` asks there (:func:`training_samples`);
2. roll ``num_generations`` copies of each out with the policy sampling its answers
   (:func:`~zoo.engines.vlm.semi_online_rollout.semi_online_rollout`: own history, expert patches,
   two screenshots of memory), scored by the recipe's rewards;
3. trajectories with an unscorable step are dropped whole (their returns would chain through a
   missing reward), then UI-S1's future-reward filter drops episodes whose copies all fared alike;
   further episodes are rolled out until ``episodes_per_step`` are kept, as upstream tops the
   batch up (:class:`zoo.rl.batching.GroupTopUp`);
4. UI-S1's advantage (:func:`zoo.rl.semi_online.ui_s1`: episode term on step rewards + step term
   on discounted future returns) over the kept episodes;
5. the recipe's surrogate loss from the loss table over every generated turn, KL to the initial
   policy when ``beta > 0``: one pass (``num_iterations: 1``) in ``multi_turn.mini_batches``
   optimiser steps against the log-probabilities taken before the first (UI-S1's script: 4), each
   in micro-batches of ``training.batch_size`` turns with gradients accumulated;
6. metrics (reward, step success, type match, patch rate, clip fraction and importance ratio) and
   atomic ``checkpoint-N/`` folders holding the weights, the optimiser, both RNGs and the episode
   sampler's state (a curriculum's buckets and statistics), so ``--resume`` continues the run exactly.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import logging
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch.nn.utils.rnn import pad_sequence
from tqdm.auto import tqdm

from zoo.engines.vlm.checkpoint import save_checkpoint, save_model
from zoo.engines.vlm.checks import AlgorithmParts, VLMChecked, check_algorithm, check_semi_online
from zoo.engines.vlm.multiturn_policy import VLMPolicy, turn_logps
from zoo.engines.vlm.semi_online_rollout import StepRecord, group_episodes, semi_online_rollout
from zoo.rl.batching import GroupTopUp
from zoo.run_logging import MetricsLog
from zoo.runs import check_finite, read_state, restoring, start_run

if TYPE_CHECKING:
    from zoo.distributed import DataParallel
    from zoo.engines.vlm.recipe import SemiOnlineRecipe
    from zoo.kinds import VLMSpec
    from zoo.precision import Precision
    from zoo.sharding import Sharding

logger = logging.getLogger(__name__)

STATE_FILE = "semi_online_state.pt"


def train(recipe: SemiOnlineRecipe, output_dir: Path, *, resume: bool = False, dry_run: bool = False,
          checked: VLMChecked | None = None) -> Path:  # fmt: skip
    """Run the semi-online recipe into ``output_dir`` (``final/`` holds the model); returns it. ``checked``: what the
    engine's check resolved (:func:`~zoo.engines.vlm.checks.check_semi_online`; it runs here when not given).

    Under ``torchrun --nproc_per_node N`` every rank is a learner of its own on ``episodes_per_step / N`` episodes
    (its own episode sampler and sampling RNG, seeded apart: :func:`zoo.distributed.rank_seed`), so an episode's
    copies, its filter and its advantages stay on one rank; the gradients of every mini-batch are summed over the
    ranks, each turn weighted by its share of the whole mini-batch, before one optimiser step on every rank. The
    metrics are those of all ranks' turns; rank 0 writes the run directory.
    """
    tr = recipe.training
    if dry_run:
        return output_dir
    from zoo.distributed import DataParallel

    parallel = DataParallel(cuda=not tr.use_cpu and torch.cuda.is_available())
    try:
        return _train(recipe, output_dir, resume, parallel, checked)
    finally:
        parallel.close()


def _train(recipe: SemiOnlineRecipe, output_dir: Path, resume: bool, parallel: DataParallel,
           checked: VLMChecked | None) -> Path:  # fmt: skip
    from zoo.engines.vlm.checkpoint import gather_weights
    from zoo.recipe import RecipeError

    tr, mt = recipe.training, recipe.multi_turn
    if mt.episodes_per_step % parallel.world:
        raise RecipeError(f"multi_turn.episodes_per_step={mt.episodes_per_step} is the step's episodes over all "
                          f"processes: it must split evenly over the {parallel.world} processes")  # fmt: skip
    if resume and tr.lora.enabled:
        raise RecipeError("--resume of a LoRA semi-online run is not supported (checkpoints hold adapters only); "
                          "start again, or train without training.lora")  # fmt: skip
    start = start_run(output_dir, resume=resume)
    learner, sampler, roll, processor = build(recipe, parallel, start.checkpoint, checked)
    model = learner.model
    log = MetricsLog.for_run(start)
    quiet = None if parallel.is_main else True  # one progress bar per job
    bar = tqdm(total=tr.steps, initial=learner.step, desc=f"ui-s1 {recipe.name}", disable=quiet)
    while learner.step < tr.steps:
        batch, generated, gen_batches = collect(roll, sampler, learner, mt.episodes_per_step // parallel.world)
        (most,) = parallel.max([gen_batches])
        metrics = {**learner.update(batch, generated), "gen_batches": most, **sampler.metrics()}
        bar.update(1)
        if learner.step % tr.logging_steps == 0 or learner.step == tr.steps:
            log.log(learner.step, metrics)
        if learner.step % tr.save_steps == 0 or learner.step == tr.steps:
            ranks = parallel.gather({**learner.rank_state_dict(), "sampler": sampler.state_dict()})
            shared, weights = learner.state_dict(), gather_weights(learner.model)  # collectives when sharded
            if parallel.is_main:
                state = {**shared, **ranks[0]} if parallel.world == 1 else {**shared, "ranks": ranks}
                save_checkpoint(output_dir / f"checkpoint-{learner.step}", learner.model, processor, state, STATE_FILE,
                                learner.step, tr.save_total_limit, weights)  # fmt: skip
            parallel.barrier()
    bar.close()
    log.finish()
    model.eval()
    if hasattr(model, "merge_and_unload"):  # LoRA: ship the merged weights, loadable like any checkpoint
        model = model.merge_and_unload()
    weights = gather_weights(model)  # a sharded model's, gathered once for the check and the save
    parallel.check_same_weights(model if weights is None else weights)
    if parallel.is_main:
        save_model(model, processor, output_dir / "final", weights)
    return output_dir


def build(
    recipe: SemiOnlineRecipe, parallel: DataParallel, checkpoint: Path | None = None, checked: VLMChecked | None = None
) -> tuple[SemiOnlineLearner, Any, Callable[[Sequence[Sequence[Any]]], list[StepRecord]], Any]:
    """``(learner, episode sampler, roll, processor)`` of a run, fresh or from ``checkpoint``: the policy in the run's
    precision, placed or sharded as its launch says, the rank's sampler and RNG, and ``roll(episodes)``, the rollout
    on the gathered policy, from what the engine's check resolved (``checked``; it runs here when not given). The loop
    (:func:`train`) and ``bench/sharded_step.py`` both build from here."""
    from zoo.data import answer_format
    from zoo.distributed import rank_seed
    from zoo.engines import ENGINES
    from zoo.engines.vlm.policy_model import load_policy, policy_precision, resumed_policy

    checked = check_semi_online(recipe) if checked is None else checked
    tr, alg, mt = recipe.training, recipe.algorithm, recipe.multi_turn
    sharding = ENGINES.get(recipe.engine).launched(recipe.launch, recipe)
    precision = policy_precision(recipe, cuda=parallel.device.type == "cuda")
    samples = training_samples(recipe, checked.contract)
    expert = answer_format(mt.expert_format)
    corpus = [f"{s.question} {expert(s)}" for s in samples[:512]] if recipe.model.name.startswith("tiny:") else None
    initial = None
    if checkpoint is not None:
        model, processor = resumed_policy(recipe, checkpoint)
        if alg.beta > 0:  # the KL reference is the policy the run started from, not the checkpoint's
            initial, _ = load_policy(recipe, samples, corpus=corpus, precision=precision)
    else:
        model, processor = load_policy(recipe, samples, corpus=corpus, precision=precision)
    learner = SemiOnlineLearner(recipe, model, processor, parallel, precision=precision, sharding=sharding,
                                initial=initial, parts=checked.algorithm)  # fmt: skip
    if parallel.rank:  # rank 0 keeps a one-process run's stream
        torch.manual_seed(rank_seed(tr.seed, parallel.rank))
    sampler = _sampler(recipe, group_episodes(samples), random.Random(rank_seed(tr.seed, parallel.rank)))
    if checkpoint is not None:
        state = rank_state(read_state(checkpoint / STATE_FILE), parallel.rank, parallel.world, checkpoint)
        with restoring(checkpoint / STATE_FILE):  # a hand-edited state is one sentence naming the file
            learner.load_state_dict(state)
            sampler.load_state_dict(state["sampler"])
    score, match_key = _score(recipe, checked.rewards)
    policy = VLMPolicy(learner.model, processor, temperature=alg.temperature, top_p=alg.top_p, top_k=alg.top_k,
                       max_new_tokens=alg.max_completion_length, device=parallel.device,
                       max_prompt_length=recipe.data.max_prompt_length)  # fmt: skip
    image_first = bool(checked.contract is not None and checked.contract.image_first)  # no entry: after, as UI-S1

    def roll(batch: Sequence[Sequence[Any]]) -> list[StepRecord]:
        learner.model.eval()
        with learner.sampling(learner.model):  # a sharded policy whole for the rollout: ranks decode apart
            return semi_online_rollout(
                [[policy.in_model_frame(s) for s in episode] for episode in batch], policy, score, expert,
                rollout_n=alg.num_generations, patch_threshold=mt.patch_threshold, image_limit=mt.image_limit,
                match_component=match_key, image_first=image_first,
            )  # fmt: skip

    return learner, sampler, roll, processor


def rank_state(state: dict[str, Any], rank: int, world: int, checkpoint: Path) -> dict[str, Any]:
    """This rank's part of a checkpoint's state: a one-process checkpoint's state is its own; a multi-process one
    holds each rank's sampling RNG and episode sampler under ``ranks``, and resumes with as many processes."""
    from zoo.recipe import RecipeError

    saved = len(state["ranks"]) if "ranks" in state else 1
    if saved != world:
        raise RecipeError(f"{checkpoint} was written by {saved} process(es), each with its own episode sampler and "
                          f"sampling RNG; resume it with {saved} (got {world})")  # fmt: skip
    return {**state, **state["ranks"][rank]} if "ranks" in state else state


def training_samples(recipe: SemiOnlineRecipe, contract: VLMSpec | None) -> list[Any]:
    """The recipe's step samples, each prompt the turn ``contract`` (``model.entry``'s) asks at that step
    (:func:`~zoo.engines.vlm.contract.with_turn_contract`; the dataset yields raw goals)."""
    from zoo.engines.vlm.contract import with_turn_contract

    return [with_turn_contract(s, contract) for s in recipe.data.load()]


def collect(
    roll: Callable[[Sequence[Sequence[Any]]], list[StepRecord]],
    sampler: Any,
    learner: SemiOnlineLearner,
    target: int | None = None,
) -> tuple[list[StepRecord], list[StepRecord], int]:
    """``(batch, generated, rollout batches)`` of one training step: UI-S1's filtered, topped-up batch.

    Each rollout batch draws ``target`` episodes (default ``episodes_per_step``; a rank of an N-process run
    draws its share); the sampler learns from every rollout; :meth:`SemiOnlineLearner.select` drops unscorable
    trajectories and applies the future-reward filter; :class:`~zoo.rl.batching.GroupTopUp` keeps rolling out
    until ``target`` episodes are kept and takes the first that many. Group and trajectory
    ids are offset per rollout batch, so an episode drawn twice in one step is two prompts, as
    upstream gives every drawn prompt a fresh ``uid``.
    """
    mt, n = learner.recipe.multi_turn, learner.recipe.algorithm.num_generations
    target = mt.episodes_per_step if target is None else target
    top_up: GroupTopUp[StepRecord] = GroupTopUp(target, mt.max_gen_batches)
    generated: list[StepRecord] = []
    while not top_up.full:
        offset = top_up.gen_batches * target
        records = [replace(r, group=r.group + offset, trajectory=r.trajectory + offset * n)
                   for r in roll(sampler.sample(target))]  # fmt: skip
        sampler.update(records)
        generated.extend(records)
        kept, keep = learner.select(records)
        top_up.add(kept, [r.group for r in kept], keep)
    return top_up.batch(), generated, top_up.gen_batches


class UniformSampler:
    """Episodes drawn uniformly with replacement (the default ``multi_turn.sampler``)."""

    def __init__(self, episodes: list[list[Any]], rng: random.Random) -> None:
        self.episodes, self.rng = episodes, rng

    def sample(self, k: int) -> list[list[Any]]:
        return [self.rng.choice(self.episodes) for _ in range(k)]

    def update(self, records: list[StepRecord]) -> None:
        """Uniform sampling learns nothing from a rollout."""

    def metrics(self) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        """The draw RNG: all a uniform sampler needs to continue a run exactly."""
        return {"rng": self.rng.getstate()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.setstate(state["rng"])


def _sampler(recipe: SemiOnlineRecipe, episodes: list[list[Any]], rng: random.Random) -> Any:
    """The recipe's episode sampler (an import string, so the engine names no domain)."""
    from zoo.recipe import RecipeError, import_named

    target = recipe.multi_turn.sampler
    if target is None:
        return UniformSampler(episodes, rng)
    sampler = import_named("multi_turn.sampler", target, expected=type)
    try:
        return sampler(episodes, rng, **recipe.multi_turn.sampler_kwargs)
    except TypeError as err:  # the class does not take (episodes, rng, **sampler_kwargs)
        raise RecipeError(f"multi_turn.sampler={target!r} with sampler_kwargs "
                          f"{recipe.multi_turn.sampler_kwargs}: {err}") from None


def _score(recipe: SemiOnlineRecipe, rewards: tuple[Any, ...]) -> tuple[Any, str]:
    """The recipe's rewards (``rewards``: what the check looked up) as one weighted sum, and the component holding
    the step match."""
    from rewards.base import WeightedSum

    parts = [(spec.configure(reward), spec.weight) for spec, reward in zip(recipe.rewards, rewards)]
    total = WeightedSum(parts, name="reward")
    first = total.parts[0][0]
    return total, f"{first}/{recipe.multi_turn.match_component}"


class SemiOnlineLearner:
    """Batch selection, advantages and the mini-batch optimiser steps over a rollout's turns; owns the optimiser.

    ``precision`` (:mod:`zoo.precision`): the forward passes compute under autocast in the compute dtype over float32
    master weights; the KL reference is held in the compute dtype. ``sharding`` with an FSDP
    launch and several processes splits the policy and the reference over the ranks (:mod:`zoo.sharding`, as UI-S1's
    verl actor and reference are FSDP-sharded): sampling and the log-probabilities without gradients run on the
    gathered model (:meth:`sampling`), and every rank runs as many forward/backward passes per mini-batch (a rank
    with fewer turns runs zero-weighted filler ones), since each pass exchanges shards."""

    def __init__(
        self, recipe: SemiOnlineRecipe, model: torch.nn.Module, processor: Any, parallel: DataParallel | None = None,
        *, precision: Precision | None = None, sharding: Sharding | None = None, initial: torch.nn.Module | None = None,
        parts: AlgorithmParts | None = None,
    ) -> None:  # fmt: skip
        from zoo.distributed import DataParallel
        from zoo.engines.vlm.policy_model import peft_config
        from zoo.engines.vlm.sft import freeze_vision_tower
        from zoo.precision import Precision
        from zoo.sharding import Sharding, shard

        tr = recipe.training
        torch.manual_seed(tr.seed)
        self.parallel = parallel or DataParallel(cuda=not tr.use_cpu and torch.cuda.is_available())
        self.precision = precision or Precision("float32", "float32", "float32")
        sharding = sharding or Sharding("", "replicated")
        sharded = self.parallel.shards(sharding)
        if tr.freeze_vision:
            logger.info("froze %d vision-tower parameters", freeze_vision_tower(model))
        if tr.gradient_checkpointing:
            model.gradient_checkpointing_enable()
        if not sharded:
            model = self.parallel.prepare(model, sharding, self.precision)  # this rank's device, rank 0's weights
        # the KL reference: the policy the run started from (``initial`` when resuming from a checkpoint)
        start = model if initial is None else initial
        self.reference = _frozen_copy(start, self.precision, self.parallel.device) if recipe.algorithm.beta > 0 else None
        lora = peft_config(recipe)
        if lora is not None:
            from peft import get_peft_model

            model = get_peft_model(model, lora)
        if sharded:
            model = self.parallel.prepare(model, sharding, self.precision)
            if self.reference is not None:  # UI-S1's reference is sharded (and offloaded) like the actor
                frozen = self.precision.frozen
                shard(self.reference, sharding, Precision(frozen, frozen, frozen), self.parallel.device)
        self.recipe, self.model, self.processor = recipe, model, processor
        # the loss row, clips and policy loss as the engine's check resolved them (resolved here when not given)
        self.parts = check_algorithm(recipe.algorithm) if parts is None else parts
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=tr.lr, weight_decay=tr.weight_decay)
        self.step = 0

    @contextlib.contextmanager
    def sampling(self, module: torch.nn.Module) -> Iterator[None]:
        """``module`` (the policy or the reference) whole on this rank and computing in the compute dtype: forward
        passes without gradients that each rank takes as many of as it needs (:func:`zoo.sharding.gathered`)."""
        from zoo.sharding import gathered

        with gathered(module), self.precision.autocast(self.parallel.device.type):
            yield

    def select(self, records: list[StepRecord]) -> tuple[list[StepRecord], torch.Tensor]:
        """``(scorable records, keep flags)``: trajectories with an unscored step dropped whole, then
        UI-S1's future-reward filter over the episodes (all kept when ``filter_std_threshold`` is null)."""
        from zoo.rl.semi_online import future_reward_filter, step_discounted_returns

        mt = self.recipe.multi_turn
        broken = {r.trajectory for r in records if r.reward is None}
        records = [r for r in records if r.trajectory not in broken]
        keep = torch.ones(len(records), dtype=torch.bool)
        if records and mt.filter_std_threshold is not None:
            steps = [r.step for r in records]
            returns = step_discounted_returns([r.reward for r in records], [r.trajectory for r in records], steps,
                                              [r.match for r in records], gamma=mt.gamma)  # fmt: skip
            keep = future_reward_filter(returns, [r.group for r in records], steps,
                                        threshold=mt.filter_std_threshold).keep  # fmt: skip
        return records, keep

    def advantages(self, records: list[StepRecord]) -> torch.Tensor:
        """(B,) UI-S1 advantages of scored records (episode and step terms, normalised per episode)."""
        from zoo.rl.semi_online import ui_s1

        mt = self.recipe.multi_turn
        if not records:
            return torch.zeros(0)
        return ui_s1([r.reward for r in records], [r.group for r in records], matches=[r.match for r in records],
                     traj_ids=[r.trajectory for r in records], step_ids=[r.step for r in records], gamma=mt.gamma,
                     mode=mt.mode, episode_weight=mt.episode_weight, step_weight=mt.step_weight)  # fmt: skip

    def update(self, records: list[StepRecord], generated: list[StepRecord] | None = None) -> dict[str, float]:
        """UI-S1's actor update on the selected ``records``; metrics over everything ``generated`` (default: them).

        The turns are split in batch order into ``multi_turn.mini_batches`` mini-batches and each takes one
        AdamW step, as verl's ``update_policy`` does with ``use_fixed_num_mini_batches``
        (X-PLUG/MobileAgent@f7702e46 ``UI-S1/verl/workers/actor/dp_actor.py:346-353``, ``:373-450``). Every
        mini-batch is scored against the old log-probabilities, computed once before the first step (the
        trainer's ``compute_log_prob`` after the rollout, ``verl/trainer/ppo/dapo_ray_trainer.py:405-420``),
        so from the second mini-batch on the ratio moves off 1 and the clip and dual clip act. With one
        mini-batch the old log-probabilities are the current ones detached (the ratio is 1 either way; the
        extra forward pass is skipped). The clip fraction and the ratio's mean and max are logged.
        """
        alg, mt, loss = self.recipe.algorithm, self.recipe.multi_turn, self.parts.loss
        generated = records if generated is None else generated
        metrics = _rollout_metrics(self._everyone(generated))
        adv = self.advantages(records)
        rows = [i for i in range(len(records)) if records[i].generation.token_ids]
        trained, turns = self.parallel.sum([len(rows), len(generated)])
        metrics["frac_trained"] = trained / max(1, turns)
        minis = mini_batches(rows, mt.mini_batches, keep_empty=self.parallel.world > 1)
        chunks = [self._chunks(mini) for mini in minis]
        # one mini-batch: the ratio is 1 either way and the old log-probabilities' pass is skipped
        old = self._logps(self.model, records, self._chunks(rows)) if mt.mini_batches > 1 else None
        ref = self._logps(self.reference, records, [c for cs in chunks for c in cs])
        self.model.train()
        clip_low, clip_high = self.parts.clips
        loss_fn = self.parts.policy_loss
        options = {"dual_clip": alg.dual_clip} if "dual_clip" in inspect.signature(loss_fn).parameters else {}
        options.update(clip_low=clip_low, clip_high=clip_high, agg=loss.aggregation,
                       loss_scale_factor=loss.scale(alg.max_completion_length))  # fmt: skip
        stats = _PolicyStats()
        losses = []
        filler = _filler(records, rows, generated)
        for mini_chunks in chunks:
            (size,) = self.parallel.sum([sum(len(c) for c in mini_chunks)])  # the mini-batch's turns over every rank
            (passes,) = self.parallel.max([len(mini_chunks)])
            if size:  # the same on every rank: all step, or none
                if self.parallel.sharded:  # every rank as many passes: each exchanges shards
                    mini_chunks = mini_chunks + [[]] * (int(passes) - len(mini_chunks))
                losses.append(self._mini_batch_step(records, mini_chunks, int(size), adv, old, ref, loss_fn, options,
                                                    stats, filler))  # fmt: skip
        self.step += 1
        metrics["loss"] = sum(losses) / len(losses) if losses else 0.0
        metrics["optimizer_steps"] = float(len(losses))
        return {**metrics, **stats.summary(self.parallel)}

    def _everyone(self, records: list[StepRecord]) -> list[StepRecord]:
        """Every rank's ``records`` in rank order, for the metrics: without their screenshots (the metrics read
        rewards, matches, targets and ids), groups and trajectories numbered apart per rank."""
        if self.parallel.world == 1:
            return records
        from zoo.engines.vlm.semi_online_rollout import Turn

        apart = 1 << 40
        light = [replace(r, sample=replace(r.sample, images=[]), turn=Turn(messages=[], images=[]),
                         group=r.group + self.parallel.rank * apart, trajectory=r.trajectory + self.parallel.rank * apart)
                 for r in records]  # fmt: skip
        return [r for part in self.parallel.gather(light) for r in part]

    def _chunks(self, rows: list[int]) -> list[list[int]]:
        """``rows`` in the micro-batches of ``training.batch_size`` turns they are scored and trained in, in order."""
        size = self.recipe.training.batch_size
        return [rows[start : start + size] for start in range(0, len(rows), size)]

    def _logps(self, module: torch.nn.Module | None, records: list[StepRecord], chunks: list[list[int]]) -> dict[int, torch.Tensor]:
        """Each row's answer log-probabilities under ``module`` before this update (no gradient; ``{}`` without a
        module), computed in ``chunks``; eval mode, as verl's ``compute_log_prob`` and ``compute_ref_log_prob`` run
        before the actor update (X-PLUG/MobileAgent@f7702e46 ``UI-S1/verl/trainer/ppo/dapo_ray_trainer.py:405-430``)."""
        out: dict[int, torch.Tensor] = {}
        if module is None:
            return out
        temperature = self.recipe.algorithm.temperature
        module.eval()
        with torch.no_grad(), self.sampling(module):
            for chunk in (c for c in chunks if c):
                logps, _ = turn_logps(module, self.processor, [records[i] for i in chunk], temperature,
                                      device=self.parallel.device)  # fmt: skip
                for k, i in enumerate(chunk):
                    out[i] = logps[k, : len(records[i].generation.token_ids)]
        return out

    def _mini_batch_step(
        self,
        records: list[StepRecord],
        chunks: list[list[int]],
        size: int,
        adv: torch.Tensor,
        old: dict[int, torch.Tensor] | None,
        ref: dict[int, torch.Tensor],
        loss_fn: Callable[..., tuple[torch.Tensor, dict[str, torch.Tensor]]],
        options: dict[str, Any],
        stats: _PolicyStats,
        filler: StepRecord,
    ) -> float:
        """One optimiser step on a mini-batch's ``chunks`` of rows (micro-batches of ``training.batch_size`` turns,
        gradients accumulated, each weighted by its share of the mini-batch's ``size`` turns over every rank, then
        summed over the ranks); returns the mini-batch's loss (over every rank). An empty chunk (a sharded rank with
        fewer turns than another) trains ``filler`` with weight 0: its pass only takes part in the shard exchange."""
        from zoo.rl import losses

        alg, tr = self.recipe.algorithm, self.recipe.training
        total = 0.0
        for chunk in chunks:
            with self.precision.autocast(self.parallel.device.type):
                logps, mask = turn_logps(self.model, self.processor, [records[i] for i in chunk] or [filler],
                                         alg.temperature, device=self.parallel.device)  # fmt: skip
            # old rows end where each answer does; padded to the chunk's longest, logps' width (masked out past it)
            before = pad_sequence([old[i] for i in chunk], batch_first=True) if old and chunk else logps.detach()
            advantages = adv[chunk].to(logps.device) if chunk else torch.zeros(1, device=logps.device)
            loss, loss_stats = loss_fn(logps, before, advantages, mask, **options)
            if chunk:
                stats.add(logps.detach(), before, mask, loss_stats)
            if ref and chunk:
                kl = losses.kl_penalty(logps, pad_sequence([ref[i] for i in chunk], batch_first=True), alg.kl_estimator)
                loss = loss + alg.beta * losses.aggregate(kl, mask, self.parts.loss.aggregation)
            # chunks are weighted by their share of turns: exact for the seq-mean aggregations,
            # a per-chunk token mean (not one over the whole mini-batch) for token-mean losses
            weighted = loss * len(chunk) / size
            weighted.backward()
            total += float(weighted.detach())
        self.parallel.sum_gradients(self.params)
        norm = torch.nn.utils.clip_grad_norm_(self.params, tr.max_grad_norm)
        check_finite(f"step {self.step + 1}", grad_norm=float(norm))
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        (total,) = self.parallel.sum([total])
        return total

    def state_dict(self) -> dict[str, Any]:
        """Step and optimiser (gathered whole, by parameter name: a collective when sharded, so every rank calls it):
        the same on every rank (:meth:`rank_state_dict` holds what is not)."""
        from zoo.sharding import optimizer_state

        return {"step": self.step, "optimizer": optimizer_state(self.model, self.optimizer)}

    def rank_state_dict(self) -> dict[str, Any]:
        """This rank's torch RNG (it drives sampling, seeded apart per rank); the engine adds its episode sampler's."""
        return {"torch_rng": torch.get_rng_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` and :meth:`rank_state_dict` (merged, as :func:`rank_state` hands them)."""
        from zoo.sharding import load_optimizer_state

        self.step = int(state["step"])
        load_optimizer_state(self.model, self.optimizer, state["optimizer"])
        torch.set_rng_state(state["torch_rng"])


def _frozen_copy(model: torch.nn.Module, precision: Precision, device: torch.device) -> torch.nn.Module:
    """The KL reference: a frozen copy of the initial policy in the compute dtype (verl builds UI-S1's reference in
    bf16, X-PLUG/MobileAgent@11cea575:UI-S1/verl/workers/fsdp_workers.py:197-199)."""
    reference = copy.deepcopy(model).eval().requires_grad_(False)
    return reference.to(device=device, dtype=precision.dtype("frozen"))


def _filler(records: list[StepRecord], rows: list[int], generated: list[StepRecord]) -> StepRecord:
    """A turn with answer tokens for a zero-weighted pass (a sharded rank with fewer turns to train than another)."""
    from zoo.engines.vlm.semi_online_rollout import Generation

    for record in [*(records[i] for i in rows), *generated]:
        if record.generation.token_ids:
            return record
    if not generated:
        raise RuntimeError("this rank rolled out no turn; it cannot take part in the step's passes")
    return replace(generated[0], generation=Generation("", (0,)))


def _rollout_metrics(records: list[StepRecord]) -> dict[str, float]:
    """Reward, step success (exact match, overall and per expert action type), type match, patch
    rate, turns, and the share of ``(episode, step)`` groups whose copies all scored the same
    (their step-level advantage is zero: no learning signal from that turn)."""
    n = max(1, len(records))
    scored = [r.reward for r in records if r.reward is not None]
    type_key = next((k for r in records for k in r.components if k.endswith("type_match")), None)
    by_type: dict[str, list[bool]] = {}
    groups: dict[tuple[int, int], list[float | None]] = {}
    for r in records:
        action = r.sample.target.get("action") if isinstance(r.sample.target, dict) else None
        if isinstance(action, dict) and "action" in action:
            by_type.setdefault(str(action["action"]), []).append(r.match)
        groups.setdefault((r.group, r.step), []).append(r.reward)
    shared = [rewards for rewards in groups.values() if len(rewards) > 1]
    return {
        "reward": sum(scored) / max(1, len(scored)),
        "step_success": sum(r.match for r in records) / n,
        "type_match": sum(r.components.get(type_key, 0.0) for r in records) / n if type_key else float("nan"),
        "frac_patched": sum(r.patched for r in records) / n,
        "frac_equal_groups": sum(len(set(g)) == 1 for g in shared) / len(shared) if shared else float("nan"),
        "turns": float(len(records)),
        **{f"step_success_{name}": sum(hits) / len(hits) for name, hits in sorted(by_type.items())},
    }


def mini_batches(rows: Sequence[int], count: int, *, keep_empty: bool = False) -> list[list[int]]:
    """``rows`` cut, in order, into ``count`` contiguous mini-batches whose sizes differ by at most one;
    empty ones (fewer rows than ``count``) are left out, unless ``keep_empty`` (a rank of a multi-process run
    takes part in every mini-batch's gradient exchange, with or without rows of its own).

    verl's ``DataProto.chunk(count)`` needs equal chunks, so its trainer first pads the batch by repeating
    rows (X-PLUG/MobileAgent@f7702e46 ``UI-S1/verl/trainer/ppo/dapo_ray_trainer.py:500``); here no row is
    trained twice."""
    n = len(rows)
    cuts = [list(rows[k * n // count : (k + 1) * n // count]) for k in range(count)]
    return cuts if keep_empty else [cut for cut in cuts if cut]


class _PolicyStats:
    """Token-weighted means of the loss's clip fractions and the ratio's mean and max over one update."""

    def __init__(self) -> None:
        self.tokens = 0.0
        self.sums: dict[str, float] = {}
        self.ratio_max = float("-inf")

    def add(
        self, logps: torch.Tensor, old: torch.Tensor, mask: torch.Tensor, loss_stats: dict[str, torch.Tensor]
    ) -> None:
        """One micro-batch: ``logps``, ``old`` and ``mask`` (B, T); ``loss_stats`` the loss's masked means."""
        tokens = float(mask.sum())
        if not tokens:
            return
        # the ratio the loss sees (log-ratio clamped to [-20, 20], as verl and zoo.rl.losses do)
        ratio = torch.exp(torch.clamp(logps - old, -20.0, 20.0))[mask.bool()]
        values = {"ratio_mean": float(ratio.mean())}
        values.update({name: float(loss_stats[key]) for key, name in _LOSS_STATS.items() if key in loss_stats})
        for name, value in values.items():
            self.sums[name] = self.sums.get(name, 0.0) + value * tokens
        self.tokens += tokens
        self.ratio_max = max(self.ratio_max, float(ratio.max()))

    def summary(self, parallel: DataParallel) -> dict[str, float]:
        """``clip_frac`` (tokens where the clipped term is taken), ``clip_frac_dual`` (tokens the dual clip
        caps), ``ratio_mean`` and ``ratio_max`` over every rank's tokens; NaN when no token was trained."""
        names = ("clip_frac", "clip_frac_dual", "ratio_mean")
        present = [float(name in self.sums) for name in names]
        tokens, *sums = parallel.sum([self.tokens, *(self.sums.get(name, 0.0) for name in names)])
        (ratio_max, *seen) = parallel.max([self.ratio_max, *present])
        out = {name: total / tokens if tokens and there else float("nan") for name, total, there in zip(names, sums, seen)}
        return {**out, "ratio_max": ratio_max if tokens else float("nan")}


#: The loss's stats (``zoo.rl.losses.clipped_surrogate``) logged by :class:`_PolicyStats`, by their metric name.
_LOSS_STATS = {"clipfrac": "clip_frac", "clipfrac_lower": "clip_frac_dual"}
