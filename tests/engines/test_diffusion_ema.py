"""The engine's EMA against the authors' own: the same weights in, the same average out.

Flow-GRPO's ``EMAModuleWrapper`` (yifan123/flow_grpo@ac4c86e:flow_grpo/ema.py:8-56; Adv-GRPO's adv_grpo/ema.py is
the same file) is transcribed below with the skeleton of the training loop that calls it
(yifan123/flow_grpo@ac4c86e:scripts/train_sd3.py:846-955: an optimiser step when accelerate syncs the accumulated
gradients, ``global_step += 1`` then, ``ema.step(params, global_step)`` after every sample batch; an Adv-GRPO
discriminator round adds one to ``global_step`` and trains nothing else,
showlab/Adv-GRPO@8287f90:scripts/train_sd3_fast_pickscore.py:1026-1037). DanceGRPO's ``FSDP_EMA.update``
(XueZeyue/DanceGRPO@15cc71d:fastvideo/train_grpo_flux.py:76-85) runs once a round, after ``train_one_step``
(L866-867).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from zoo.engines.diffusion.setup import Run, build_run
from zoo.engines.diffusion.trainer import train_round
from zoo.engines.reading import load_recipe

SMOKE = Path(__file__).with_name("diffusion_smoke.yaml")
TINY = ["training.prompts_per_step=1", "algorithm.group_size=2", "algorithm.num_steps=3",
        "model.tiny={sample_size: 8}"]  # fmt: skip


class TheirEMA:
    """yifan123/flow_grpo@ac4c86e:flow_grpo/ema.py:8-56, the parts a training run uses (on one device)."""

    def __init__(self, parameters, decay=0.9999, update_step_interval=1):
        self.ema_parameters = [p.clone().detach() for p in parameters]
        self.decay = decay
        self.update_step_interval = update_step_interval

    def get_current_decay(self, optimization_step) -> float:
        return min((1 + optimization_step) / (10 + optimization_step), self.decay)

    @torch.no_grad()
    def step(self, parameters, optimization_step):
        one_minus_decay = 1 - self.get_current_decay(optimization_step)
        if (optimization_step + 1) % self.update_step_interval == 0:
            for ema_parameter, parameter in zip(self.ema_parameters, parameters, strict=True):
                ema_parameter.add_(one_minus_decay * (parameter - ema_parameter))


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def made_up_gradients(run: Run, generator: torch.Generator) -> None:
    for param in run.trainable:
        param.grad = torch.randn(param.shape, generator=generator)


@pytest.mark.parametrize("rounds, batches, accumulation, interval, discriminator_rounds", [
    (3, 4, 1, 8, ()),  # an optimiser step per sample batch: one update, at global_step 7
    (4, 4, 2, 8, ()),  # Flow-GRPO's two steps a round (config/grpo.py:83,88) and interval 8 (train_sd3.py:445)
    (3, 4, 2, 3, ()),  # an update whose two calls straddle two rounds (global_step 2)
    (4, 4, 2, 3, (1,)),  # Adv-GRPO: a discriminator round moves global_step by one
])  # fmt: skip
def test_flow_grpo_ema_is_their_wrapper_called_as_their_loop_calls_it(
    tmp_path: Path, rounds: int, batches: int, accumulation: int, interval: int, discriminator_rounds: tuple[int, ...]
) -> None:
    settings = ["training.ema_decay=0.9", f"training.ema_interval={interval}",
                f"training.ema_calls_per_step={accumulation}"]  # fmt: skip
    run = build_run(load_recipe(SMOKE, [*TINY, *settings]), tmp_path)
    initial = [p.detach().clone() for p in run.trainable]
    theirs = TheirEMA(run.trainable, decay=0.9, update_step_interval=interval)
    generator, global_step, synced = torch.Generator().manual_seed(0), 0, 0
    for round_index in range(rounds):
        if round_index in discriminator_rounds:
            global_step += 1
            run.end_round(discriminator_step=True)
            continue
        for _ in range(batches):  # one sample batch: its backward passes, then the step when the gradients sync
            synced += 1
            if synced % accumulation == 0:
                made_up_gradients(run, generator)
                run.optimizer_step()
                global_step += 1
            theirs.step(run.trainable, global_step)
            if synced % accumulation == 0:  # between steps the zoo owes the window's earlier calls, not after one
                for ours, reference in zip(run.ema.shadow_params, theirs.ema_parameters, strict=True):
                    assert torch.equal(ours, reference)
        run.end_round(discriminator_step=False)
    assert run.ema.steps == global_step
    for ours, start, now in zip(run.ema.shadow_params, initial, run.trainable, strict=True):
        assert not torch.equal(ours, start) and not torch.equal(ours, now)  # it moved, and it is an average


def test_the_warm_up_counts_optimiser_steps_from_zero(tmp_path: Path) -> None:
    """Their decay at global_step ``s`` is ``(1 + s) / (10 + s)``: no offset for the wrapper's own first call."""
    run = build_run(load_recipe(SMOKE, [*TINY, "training.ema_decay=0.9"]), tmp_path)
    theirs = TheirEMA(run.trainable, decay=0.9)
    assert [run.ema.get_decay(s) for s in range(100)] == [theirs.get_current_decay(s) for s in range(100)]


def test_dancegrpo_ema_moves_once_a_round_by_its_constant(tmp_path: Path) -> None:
    """``ema = d ema + (1 - d) w`` after each round's optimiser steps (two here), from the initial weights, with no
    warm-up: ``training.ema_every: round`` and ``ema_warmup: false``."""
    overrides = [*TINY, "algorithm.method=dance_grpo", "training.ema_decay=0.995", "training.ema_warmup=false",
                 "training.ema_every=round", "training.prompts_per_step=2", "training.train_batch_size=1",
                 "training.grad_accum=2", "algorithm.timestep_fraction=0.5"]  # fmt: skip
    run = build_run(load_recipe(SMOKE, overrides), tmp_path)
    theirs = [p.detach().clone() for p in run.trainable]
    for index in range(2):
        metrics = train_round(run, index)
        assert "train/grad_norm" in metrics
        theirs = [0.995 * e + (1 - 0.995) * p.detach() for e, p in zip(theirs, run.trainable, strict=True)]
        for ours, reference in zip(run.ema.shadow_params, theirs, strict=True):
            torch.testing.assert_close(ours, reference, rtol=0, atol=1e-7)
    assert run.ema.steps == 4  # two optimiser steps a round (4 rows, 2 a step), the average moved twice


def test_an_ema_schedule_that_does_not_fit_is_refused() -> None:
    from zoo.recipe import RecipeError

    with pytest.raises(RecipeError, match="with ema_every: round the EMA is called once a round"):
        load_recipe(SMOKE, ["training.ema_every=round", "training.ema_calls_per_step=2"])
    with pytest.raises(RecipeError, match="must be >= 1"):
        load_recipe(SMOKE, ["training.ema_interval=0"])
    with pytest.raises(RecipeError, match="ema_every='per_batch' is not one of"):
        load_recipe(SMOKE, ["training.ema_every=per_batch"])
