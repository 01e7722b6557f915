"""Rollout backends of the vlm-trl engine and the truncated importance-sampling (TIS) correction.

CPU runs every backend that runs here (``hf``, ``static``); ``vllm`` must fail at recipe load with
what to install. The TIS weights are checked against TRL 1.16.0's ``token_truncate`` path
(``trl/trainer/grpo_trainer.py``, ``GRPOTrainer._generate_and_score_completions``: ``diff =
(old_per_token_logps - sampling_per_token_logps) * mask``, ``nan_to_num(diff, nan=0)``,
``exp``, ``clamp(max=vllm_importance_sampling_clip_max)``), the numbers written out below.
"""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch

from tests.rl.test_trainer import first_batch, grads_of, recipe_for
from zoo.engines import ENGINES
from zoo.engines.vlm.rollout import resolve_backend
from zoo.engines.vlm.trl_engine import build_trainer
from zoo.recipe import RecipeError
from zoo.rl.importance import truncated_is_weights


def test_tis_weights_match_trl_token_truncate() -> None:
    old = torch.tensor([[-1.0, -2.0, -0.5, 0.0], [-3.0, -0.1, -0.2, -0.3]])
    rollout = torch.tensor([[-1.5, -1.0, float("nan"), 0.0], [-3.0, -2.0, -0.2, -9.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    weights, stats = truncated_is_weights(old, rollout, mask, cap=2.0)
    # TRL: exp((old - rollout) * mask) with NaN -> 0, clamp(max=2): e^0.5, e^-1, 1 (NaN), 1 (pad); 1, 2 (e^1.9 capped), 1, 2
    expected = torch.tensor([[math.exp(0.5), math.exp(-1.0), 1.0, 1.0], [1.0, 2.0, 1.0, 2.0]])
    torch.testing.assert_close(weights, expected)
    uncapped = [math.exp(0.5), math.exp(-1.0), 1.0, 1.0, math.exp(1.9), 1.0, math.exp(8.7)]
    assert math.isclose(stats["mean"], sum(uncapped) / 7, rel_tol=1e-6)
    assert math.isclose(stats["max"], math.exp(8.7), rel_tol=1e-6)
    assert math.isclose(stats["frac_capped"], 2 / 7, rel_tol=1e-6)
    with pytest.raises(ValueError, match="cap"):
        truncated_is_weights(old, rollout, mask, cap=0.0)


def test_hf_rollout_ratio_is_one(tmp_path) -> None:
    """On ``hf`` the rollout is the trainer's own model: the recorded log-probs equal the trainer's."""
    trainer = build_trainer(recipe_for(tmp_path, "rollout.importance_sampling=true", "rollout.is_cap=2"), tmp_path)
    inputs = trainer._prepare_inputs(first_batch(trainer))
    rollout, mask = inputs["sampling_per_token_logps"], inputs["completion_mask"]
    assert rollout.shape == mask.shape and bool(torch.isfinite(rollout[mask.bool()]).all())
    trainer._compute_loss(trainer.model, inputs)
    metrics = trainer._metrics["train"]
    assert abs(metrics["rollout/is_ratio_mean"][-1] - 1.0) < 1e-4, metrics["rollout/is_ratio_mean"]
    assert abs(metrics["rollout/is_ratio_max"][-1] - 1.0) < 1e-4, metrics["rollout/is_ratio_max"]
    assert metrics["rollout/is_ratio_frac_capped"][-1] == 0.0


def test_tis_weight_scales_the_policy_gradient(tmp_path) -> None:
    """A rollout that gave every token 1/1.5 of the trainer's probability: each token's term x1.5;
    a rollout 10x less likely: weights capped at 2, so exactly x2 (grpo's loss is linear in A)."""
    trainer = build_trainer(recipe_for(tmp_path, "rollout.importance_sampling=true", "rollout.is_cap=2"), tmp_path)
    inputs = trainer._prepare_inputs(first_batch(trainer))
    recorded = inputs["sampling_per_token_logps"]  # equal to the trainer's (previous test), to ~1e-5
    base = grads_of(trainer.model, trainer._compute_loss(trainer.model, inputs))
    for factor, expected in ((1.5, 1.5), (10.0, 2.0)):
        shifted = {**inputs, "sampling_per_token_logps": recorded - math.log(factor)}
        grads = grads_of(trainer.model, trainer._compute_loss(trainer.model, shifted))
        assert any(g.abs().sum() > 0 for g in base.values())
        for name in base:  # per-token ratios are 1 only to ~1e-5, so the scale holds to that, not bitwise
            scale = base[name].abs().max().item()
            torch.testing.assert_close(grads[name], expected * base[name], rtol=1e-3, atol=1e-4 * scale, msg=name)


def test_static_backend_trains_with_a_static_cache(tmp_path) -> None:
    trainer = build_trainer(recipe_for(tmp_path, "rollout.backend=static"), tmp_path)
    assert trainer.generation_config.cache_implementation == "static"
    assert trainer.generation_config.disable_compile is False and trainer.generation_config.compile_config is not None
    inputs = trainer._prepare_inputs(first_batch(trainer))
    assert inputs["completion_ids"].shape[0] == 8 and inputs["completion_mask"].sum() > 0
    loss = trainer._compute_loss(trainer.model, inputs)
    assert torch.isfinite(loss) and any(g.abs().sum() > 0 for g in grads_of(trainer.model, loss).values())


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None and torch.cuda.is_available(),
                    reason="vLLM runs here; the missing-backend error is for machines without it")
def test_vllm_without_vllm_or_gpu_fails_at_recipe_load(tmp_path) -> None:
    with pytest.raises(RecipeError, match=r"rollout.backend=vllm needs (vLLM|a CUDA GPU)") as err:
        ENGINES.get("vlm-trl").check_recipe(recipe_for(tmp_path, "rollout.backend=vllm"))
    assert "\n" not in str(err.value)


def test_backend_choice_is_validated(tmp_path) -> None:
    if not torch.cuda.is_available():
        assert resolve_backend("auto") == "hf"
    with pytest.raises(RecipeError, match="not one of"):
        recipe_for(tmp_path, "rollout.backend=fast")
    with pytest.raises(RecipeError, match="sequence-level"):
        ENGINES.get("vlm-trl").check_recipe(recipe_for(tmp_path, "algorithm.loss_type=gspo", "rollout.importance_sampling=true"))
    with pytest.raises(RecipeError, match="engine 'vlm-verl' runs VerlRecipe recipes, not VLMRecipe"):
        recipe = recipe_for(tmp_path, "rollout.backend=static", "engine=vlm-verl")
        ENGINES.get(recipe.engine).check_recipe(recipe)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["hf", "static", "vllm"])
def test_each_backend_trains_on_a_gpu_with_tis_logged(tmp_path, backend) -> None:
    """On CUDA, in bfloat16 (the dtype the static cache needs under mixed precision): two steps
    train and the trainer/rollout ratio is logged; it stays near 1 for a model this small."""
    if backend == "vllm" and importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed")
    import csv

    recipe = recipe_for(tmp_path, f"rollout.backend={backend}", "rollout.importance_sampling=true",
                        "model.dtype=bfloat16", "training.steps=2")
    trainer = build_trainer(recipe, tmp_path)
    trainer.train()
    with (tmp_path / "metrics.csv").open() as fh:
        rows = [r for r in csv.DictReader(fh) if r.get("rollout/is_ratio_mean")]
    assert len(rows) == 2
    assert all(0.5 < float(r["rollout/is_ratio_mean"]) < 2.0 for r in rows), rows
