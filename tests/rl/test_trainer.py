"""ZooGRPOTrainer: zoo's loss equals TRL's where both define it, masking, training, run outputs.

Tiny seeded Qwen2.5-VL (``zoo.tiny``), 8-16 synthetic images, completions of a few tokens.
"""

from __future__ import annotations

import csv
import math

import pytest
import torch
from trl import GRPOTrainer

from rewards.base import REWARDS, RewardResult, register
from zoo.engines.vlm.recipe import VLMRecipe as Recipe
from zoo.engines.vlm.trl_engine import build_trainer
from zoo.train import run


class VowelRate:
    """A dense test reward (fraction of vowels) so that a random policy gets non-zero advantages."""

    name = "test-vowel-rate"

    def __call__(self, predictions, samples):
        return [RewardResult(sum(c in "aeiou" for c in p) / max(1, len(p)), {"length": float(len(p))})
                for p in predictions]


class FailsSometimes(VowelRate):
    """Like VowelRate, but 'cannot be computed' (None) for every third completion of a call."""

    name = "test-fails-sometimes"

    def __call__(self, predictions, samples):
        dense = super().__call__(predictions, samples)
        return [RewardResult(None, error="simulated judge timeout") if i % 3 == 0 else r for i, r in enumerate(dense)]


class Constant:
    name = "test-constant"

    def __call__(self, predictions, samples):
        return [RewardResult(1.0) for _ in predictions]


for _reward in (VowelRate(), FailsSometimes(), Constant()):
    if _reward.name not in REWARDS:
        register(_reward.name, _reward)


def recipe_for(tmp_path, *overrides: str, reward: str = "test-vowel-rate") -> Recipe:
    base = {
        "name": "test",
        "engine": "vlm-trl",
        "data": {"name": "synthetic-colour", "kwargs": {"n": 16, "seed": 0}},
        "rewards": [{"name": reward}],
        "algorithm": {"num_generations": 4, "max_completion_length": 6},
        "training": {"lr": 1e-2, "steps": 1, "batch_size": 8, "save_steps": 100, "output_dir": str(tmp_path)},
    }
    return Recipe.from_dict(base, list(overrides))


def first_batch(trainer):
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train(); these tests call the steps directly
    return next(iter(trainer.get_train_dataloader()))


def grads_of(model, loss) -> dict[str, torch.Tensor]:
    model.zero_grad(set_to_none=True)
    loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo", "dapo", "bnpo", "gspo"])
def test_loss_and_gradient_equal_trl(tmp_path, loss_type):
    """Same inputs through zoo's loss and TRL 1.16's own ``_compute_loss``: same value, same gradient."""
    trainer = build_trainer(recipe_for(tmp_path, f"algorithm.loss_type={loss_type}"), tmp_path)
    inputs = trainer._prepare_inputs(first_batch(trainer))
    assert inputs["advantages"].abs().sum() > 0, "the test reward must give some signal"
    zoo_loss = trainer._compute_loss(trainer.model, inputs)
    zoo_grads = grads_of(trainer.model, zoo_loss)
    trl_loss = GRPOTrainer._compute_loss(trainer, trainer.model, inputs)
    trl_grads = grads_of(trainer.model, trl_loss)
    torch.testing.assert_close(zoo_loss, trl_loss, rtol=1e-5, atol=1e-7)
    assert zoo_grads.keys() == trl_grads.keys() and zoo_grads
    for name in zoo_grads:
        torch.testing.assert_close(zoo_grads[name], trl_grads[name], rtol=1e-4, atol=1e-7, msg=name)


def test_one_step_changes_language_model_not_vision(tmp_path):
    trainer = build_trainer(recipe_for(tmp_path), tmp_path)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = {n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])}
    assert any("language_model" in n for n in changed)
    assert not any(".visual." in f".{n}" for n in changed), "the vision tower must stay frozen"


def test_lora_trains_adapters_only(tmp_path):
    trainer = build_trainer(recipe_for(tmp_path, "training.lora.enabled=true", "training.lora.r=4"), tmp_path)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = {n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])}
    assert changed and all("lora_" in n for n in changed)


def test_unscorable_samples_are_masked_not_zeroed(tmp_path):
    trainer = build_trainer(recipe_for(tmp_path, reward="test-fails-sometimes"), tmp_path)
    out = trainer._generate_and_score_completions(first_batch(trainer))
    failed = torch.isnan(trainer._rewards_per_func[:, 0]).cpu()  # on the trainer's device (CUDA on a GPU machine)
    assert torch.equal(failed, torch.arange(8) % 3 == 0)
    assert torch.equal(out["zoo_row_mask"].bool().cpu(), ~failed)
    assert torch.all(out["advantages"].cpu()[failed] == 0)
    assert out["num_items_in_batch"] == (out["completion_mask"] * out["zoo_row_mask"][:, None]).sum()
    assert math.isclose(trainer._metrics["train"]["rewards/frac_failed"][-1], failed.float().mean().item())


def test_dynamic_sampling_drops_flat_groups(tmp_path):
    trainer = build_trainer(recipe_for(tmp_path, "algorithm.dynamic_sampling=true", reward="test-constant"), tmp_path)
    inputs = trainer._prepare_inputs(first_batch(trainer))
    assert inputs["zoo_row_mask"].sum() == 0
    assert trainer._metrics["train"]["dynamic_sampling/frac_dropped_groups"][-1] == 1.0
    loss = trainer._compute_loss(trainer.model, inputs)
    assert all(g.abs().sum() == 0 for g in grads_of(trainer.model, loss).values())


def test_recipe_run_writes_logs_and_curve(tmp_path, capsys):
    path = tmp_path / "recipe.yaml"
    recipe_for(tmp_path / "run", reward="synthetic-colour").to_yaml(path)
    out = run(str(path), ["training.steps=2", "rewards=[{name: synthetic-colour}, {name: synthetic-format, weight: 0.1}]"])
    assert {p.name for p in out.iterdir()} >= {"recipe.yaml", "metrics.csv", "reward_curve.png", "final", "README.md"}
    assert "fine-tuned version of" not in (out / "README.md").read_text()  # the zoo's run README, not TRL's card
    printed = capsys.readouterr()
    assert "'completions/mean_length'" not in printed.out + printed.err  # the metrics go to metrics.csv, not the bar
    with (out / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    columns = set(rows[0])
    assert {"reward", "rewards/synthetic-colour/mean", "rewards/synthetic-format/mean"} <= columns
    assert {"synthetic-colour/correct", "synthetic-format/one_word"} <= columns, "components get a column each"
    assert [r["step"] for r in rows if r.get("reward")] == ["1", "2"]
    assert Recipe.from_yaml(out / "recipe.yaml").training.steps == 2
    assert list(out.glob("runs/*/events.out.tfevents.*")), "TensorBoard events when tensorboard is installed"


def test_gui_g1_loss_weights_by_meta_rate(tmp_path):
    """GUI-G1: the sample's ``meta['rate']`` reaches the loss as a per-sample weight (token sum x rate / 64)."""
    trainer = build_trainer(recipe_for(tmp_path, "algorithm.loss_type=gui_g1", "algorithm.normalize_std=false"),
                            tmp_path)
    inputs = trainer._prepare_inputs(first_batch(trainer))
    assert torch.equal(inputs["zoo_sample_weight"].cpu(), torch.ones(8))  # synthetic-colour samples carry rate 1.0
    base = grads_of(trainer.model, trainer._compute_loss(trainer.model, inputs))
    doubled = grads_of(trainer.model, trainer._compute_loss(trainer.model, {**inputs, "zoo_sample_weight": inputs["zoo_sample_weight"] * 2}))
    assert any(g.abs().sum() > 0 for g in base.values())
    for name in base:
        torch.testing.assert_close(doubled[name], 2 * base[name], msg=name)


@pytest.mark.parametrize("loss_type", ["gui_g1", "gspo"])
def test_all_rows_masked_gives_zero_loss_not_nan(tmp_path, loss_type):
    """verl's seq-mean aggregations divide by the number of non-empty rows; with every group dropped
    that is 0/0. The trainer must then take no step (zero loss and gradients), not a NaN one."""
    trainer = build_trainer(
        recipe_for(tmp_path, "algorithm.dynamic_sampling=true", f"algorithm.loss_type={loss_type}",
                   reward="test-constant"),
        tmp_path,
    )
    inputs = trainer._prepare_inputs(first_batch(trainer))
    assert inputs["zoo_row_mask"].sum() == 0
    loss = trainer._compute_loss(trainer.model, inputs)
    assert loss.item() == 0.0
    grads = grads_of(trainer.model, loss)
    assert grads and all(g.abs().sum() == 0 for g in grads.values())
