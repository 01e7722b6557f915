"""The ``diffusion`` engine's training loop, top to bottom: sample, score, normalise, train, log, save.

One round (a recipe ``step``): draw ``prompts_per_step`` prompts, sample ``group_size`` images each
with the method's stochastic sampler (flat groups, or trees for TreeGRPO), decode and score them
with the recipe's rewards (``None`` scores are masked), turn rewards into advantages (the method's
rule), drop images whose advantage is exactly zero (Flow-GRPO's filter: tied groups), then run PPO
over the stochastic steps: every trained step's ratio is re-scored under the current denoiser
(classifier-free guided as in sampling) with the stored next latent, clipped per step, optionally
with a KL to the reference on the step means. With an SDE window (Flow-GRPO-Fast) only the window's
steps are stochastic and trained. Adv-GRPO's reward is a discriminator trained in rounds of its own, on the
round's images instead of the generator: 9 of every 10 rounds (``d_times``) for the DINOv2 one, the rounds
whose reference images score below the generations for the PickScore one. Multi-GPU runs go
through ``accelerate launch`` or ``torchrun``: each process samples its own prompts with its own noise,
rewards and prompts are gathered for the advantages, and the logged metrics are the whole run's
(:meth:`~zoo.engines.diffusion.setup.Run.over_processes`), written by the main process alone.

The denoiser is replicated (DDP) or, under an FSDP launch config, sharded by the zoo (FSDP2,
:mod:`~zoo.engines.diffusion.placement`). Either way every backward is a collective, so the ranks train in lockstep:
the zero-advantage filter leaves each rank its own number of transitions, and :func:`optimise` runs the largest
rank's number of micro-batches on every rank, a rank short of rows running zero-weighted filler batches, so that
all take the same optimiser steps. The gradient of a step is the mean over every rank's rows in its window.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import torch

from zoo.engines import ENGINES
from zoo.engines.diffusion.checkpoint import RunState, load_checkpoint, save_checkpoint
from zoo.engines.diffusion.checks import DiffusionChecked
from zoo.engines.diffusion.distributed import gather_all
from zoo.engines.diffusion.methods import METHODS, Method, StepSettings
from zoo.engines.diffusion.recipe import DiffusionRecipe
from zoo.engines.diffusion.sampling import Transitions, flat_transitions
from zoo.engines.diffusion.setup import Run, build_run
from zoo.rl.diffusion_loss import mean_kl, nonzero_advantage_mask, step_policy_loss, zero_std_ratio
from zoo.run_logging import MetricsLog
from zoo.runs import start_run

logger = logging.getLogger(__name__)


def train(recipe: DiffusionRecipe, output_dir: Path, *, resume: bool = False, dry_run: bool = False,
          checked: DiffusionChecked | None = None) -> Path:  # fmt: skip
    """Train ``recipe`` into ``output_dir`` (``checkpoint-N/``, ``metrics.csv``, curves, sample grids); ``checked``:
    what the engine's check resolved (:func:`~zoo.engines.diffusion.checks.check_diffusion`; it runs when not given)."""
    ENGINES.get(recipe.engine).sharding(recipe.launch, recipe)  # a launch config it does not run: refused, dry run too
    if dry_run:
        return output_dir
    run = build_run(recipe, output_dir, checked)
    start = start_run(output_dir, resume=resume)
    state = RunState()
    if start.checkpoint is not None:
        state = load_checkpoint(run, start.checkpoint)
        logger.info("resumed from %s (round %d)", start.checkpoint, state.step)
    log = MetricsLog.for_run(start)
    if state.step == 0:
        log.log(0, run.over_processes(run.evaluate(0)))
    from tqdm.auto import tqdm

    bar = tqdm(range(state.step, recipe.training.steps), initial=state.step, total=recipe.training.steps,
               desc=recipe.name, disable=None)  # fmt: skip
    for step in bar:
        metrics = train_round(run, step)
        state.step = step + 1
        if state.step % recipe.training.eval_every == 0 or state.step == recipe.training.steps:
            metrics.update(run.evaluate(state.step))
        metrics = run.over_processes(metrics)
        if state.step % recipe.training.logging_steps == 0 or "eval/reward" in metrics:
            log.log(state.step, metrics)
        bar.set_postfix(reward=f"{metrics['reward']:.4f}")
        if state.step % recipe.training.save_steps == 0 or state.step == recipe.training.steps:
            save_checkpoint(run, state, output_dir)
    log.finish()
    run.save_final(output_dir / "final")
    return output_dir


def train_round(run: Run, index: int) -> dict[str, Any]:
    """Round ``index`` (0-based): rollouts, rewards, advantages, PPO over the stochastic steps. Returns its metrics.

    Adv-GRPO's discriminator decides the round (its ``plan``: by ``index`` and ``algorithm.d_times``, or by the
    scores): a discriminator round steps the discriminator on the images it just scored and leaves the generator
    alone; a generator round is an ordinary round."""
    method: Method = METHODS.get(run.recipe.algorithm.method)
    prompts = run.draw_prompts()
    if method.rollout == "tree":
        from zoo.engines.diffusion.tree import tree_round

        transitions, rewards, metrics = tree_round(run, prompts)
    else:
        transitions, rewards, metrics = flat_round(run, method, prompts)
    everyone = gather_all(rewards)  # the round's reward is every process's images', not this one's
    metrics.update(reward=float(torch.nanmean(everyone)), reward_std=float(_nanstd(everyone)))
    if method.adversarial:
        discriminator, (images, scored) = run.extra["discriminator"], run.extra["last_scored"]
        steps, decided = discriminator.plan(index, metrics["reward"], scored)
        metrics.update(decided)
        if steps:
            metrics.update(discriminator.update(images, scored))
            run.end_round(discriminator_step=True)
            return metrics
    filler = transitions.select(torch.zeros(1, dtype=torch.long))  # what a rank short of rows runs, weighted 0
    if run.settings.filter_zero_advantage:  # Flow-GRPO: samples with A = 0 carry no signal
        keep = nonzero_advantage_mask(transitions.advantages)
        metrics["kept_fraction"] = float(keep.float().mean())
        transitions = transitions.select(keep.nonzero().flatten())
    metrics.update(optimise(run, transitions, filler))
    run.end_round(discriminator_step=False)
    return metrics


def flat_round(run: Run, method: Method, prompts: list[str]) -> tuple[Transitions, torch.Tensor, dict[str, Any]]:
    """Sample G images per prompt, score them, and keep the trained steps of each as transitions."""
    alg, settings = run.recipe.algorithm, run.settings
    group = alg.group_size
    images_prompts = [p for p in prompts for _ in range(group)]
    cond = run.encode(prompts)
    cond_index = torch.arange(len(prompts)).repeat_interleave(group)
    start = run.initial_noise(len(prompts), group, same_within_group=settings.init_same_noise)
    window = run.sde_window()
    with run.sampling():
        latents, outputs = run.sampler.run(start, run.select_cond(cond, cond_index), settings.noise_level,
                                           run.generator, sde_steps=None if window is None else set(window))  # fmt: skip
    rewards, reward_metrics = run.score(latents, images_prompts)
    advantages = run.advantages(method, images_prompts, cond_index, rewards)
    reward_metrics["zero_std_ratio"] = zero_std_ratio(images_prompts, rewards)
    trained = run.trained_steps(len(images_prompts), run.sampler.policy_steps, window)
    transitions = flat_transitions(start, outputs, cond_index, advantages, trained)
    run.round_cond = cond
    evals = len(images_prompts) * alg.num_steps
    return (
        transitions,
        rewards,
        {**reward_metrics, "advantage_abs": float(advantages.abs().mean()), "sample_evals": evals},
    )


def optimise(run: Run, transitions: Transitions, filler: Transitions) -> dict[str, float]:
    """PPO epochs over the transitions in shuffled micro-batches; an optimiser step every ``grad_accum`` backwards.

    In lockstep over the ranks (every backward is a collective under DDP and FSDP2): each runs the micro-batches of
    the rank with the most rows, ``filler`` (one row of this round's rollout) weighted 0 where it has none left, and
    each window's loss is the mean over every rank's rows in it (:meth:`~zoo.engines.diffusion.setup.Run.backward`).
    A round in which no rank kept a row trains nothing. ``train_evals`` counts the rows of every forward run, fillers
    included (they cost the same compute)."""
    recipe, settings = run.recipe, run.settings
    batch = recipe.training.train_batch_size
    lengths = gather_all(torch.tensor([len(transitions)])).tolist()  # every rank's rows, in rank order
    n_batches = max(math.ceil(n / batch) for n in lengths)
    if n_batches == 0:
        logger.info("every advantage is 0 this round (all groups tied); no update")
        return {}
    accum = recipe.training.grad_accum or n_batches
    window = accum * batch  # rows per optimiser step on a rank with enough
    windows = range(math.ceil(n_batches / accum))
    window_rows = [sum(min(max(n - w * window, 0), window) for n in lengths) for w in windows]  # over every rank
    stats: dict[str, list[float]] = {"loss": [], "clipfrac": [], "approx_kl": [], "kl": [], "grad_norm": []}
    passes = 2 if recipe.algorithm.beta > 0 else 1  # the reference forward
    evals = 0
    for _ in range(recipe.algorithm.num_inner_epochs):
        order = torch.randperm(len(transitions), generator=run.generator)
        for b in range(n_batches):
            rows = order[b * batch : (b + 1) * batch]
            part = transitions.select(rows) if len(rows) else filler
            loss, info = step_loss(run, part, settings)
            run.backward(loss, len(rows), window_rows[b // accum])
            evals += len(part) * passes
            if len(rows):
                for key, value in info.items():
                    stats[key].append(value)
            if (b + 1) % accum == 0 or b == n_batches - 1:
                stats["grad_norm"].append(run.optimizer_step())
    metrics = {f"train/{k}": sum(v) / len(v) for k, v in stats.items() if v}
    metrics["train_evals"] = evals
    return metrics


def step_loss(run: Run, part: Transitions, settings: StepSettings) -> tuple[torch.Tensor, dict[str, float]]:
    """Re-score each row's K children under the current denoiser: clipped loss (+ beta * KL on the means)."""
    device = run.model.device
    latents, k = part.latents.to(device), part.next_latents.shape[1]
    cond = run.select_cond(run.round_cond, part.cond)
    model_output = run.sampler.predict(latents, part.index, cond)
    repeat = lambda x: x.repeat_interleave(k, dim=0)
    out = run.sampler.step(repeat(part.index), repeat(latents), repeat(model_output), settings.noise_level,
                           prev_sample=part.next_latents.flatten(0, 1).to(device))  # fmt: skip
    loss, info = step_policy_loss(out.log_prob, part.old_log_prob.flatten().to(device), part.advantages.flatten().to(device),
                                  clip_range=settings.clip_range, adv_clip_max=settings.adv_clip_max)  # fmt: skip
    stats = {"loss": loss.item(), "clipfrac": float(info["clipfrac"]), "approx_kl": float(info["approx_kl"])}
    if run.recipe.algorithm.beta > 0:
        with torch.no_grad(), run.reference():
            ref_output = run.sampler.predict(latents, part.index, cond)
        ref = run.sampler.step(part.index, latents, ref_output.float(), settings.noise_level, prev_sample=latents)
        kl = mean_kl(out.prev_sample_mean[::k], ref.prev_sample_mean, out.std_dev_t[::k])
        loss = loss + run.recipe.algorithm.beta * kl
        stats["kl"] = kl.item()
    return loss, stats


def _nanstd(x: torch.Tensor) -> torch.Tensor:
    x = x[~torch.isnan(x)]
    return x.std() if x.numel() > 1 else torch.zeros(())
