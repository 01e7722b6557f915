"""Rollouts sample with the recipe's sampler, whole: never with what the model's ``generation_config`` ships.

Qwen2.5-VL-Instruct's ``generation_config.json`` carries ``top_k: 1`` and ``repetition_penalty: 1.05``; passing only
``temperature``/``top_p`` to ``generate`` keeps them, and a group of "sampled" rollouts becomes nearly one greedy
answer (zero advantage). The tiny model here is given those values, and the sampler each engine hands to
``generate`` is read where transformers builds its logits processors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import GenerationConfig

from zoo.engines.reading import load_recipe
from zoo.engines.vlm.multiturn_policy import VLMPolicy
from zoo.tiny import build_tiny_vlm

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shipped_like() -> tuple[Any, Any]:
    """A tiny VLM whose generation_config is Qwen2.5-VL-Instruct's near-greedy one."""
    model, processor = build_tiny_vlm()
    model.generation_config.top_k, model.generation_config.repetition_penalty = 1, 1.05
    return model, processor


def _sampler_used(model: Any, processor: Any, **generate: Any) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    real = model._get_logits_processor

    def spy(generation_config: GenerationConfig, *args: Any, **kwargs: Any) -> Any:
        seen.update(top_k=generation_config.top_k, repetition_penalty=generation_config.repetition_penalty,
                    temperature=generation_config.temperature, top_p=generation_config.top_p)  # fmt: skip
        return real(generation_config, *args, **kwargs)

    model._get_logits_processor = spy
    try:
        ids = processor.tokenizer("The answer is", return_tensors="pt")
        with torch.no_grad():
            model.generate(**ids, pad_token_id=processor.tokenizer.eos_token_id, **generate)
    finally:
        del model._get_logits_processor
    return seen


def test_the_model_config_would_leak_without_the_whole_sampler(shipped_like: tuple[Any, Any]) -> None:
    """The hazard itself: temperature and top_p alone leave the model's top_k and penalty in force."""
    model, processor = shipped_like
    used = _sampler_used(model, processor, max_new_tokens=2, do_sample=True, temperature=1.0, top_p=1.0)
    assert used["top_k"] == 1 and used["repetition_penalty"] == 1.05


@pytest.mark.parametrize("top_k", [0, -1, 50])
def test_semi_online_rollouts_sample_with_the_recipes_sampler(shipped_like: tuple[Any, Any], top_k: int) -> None:
    model, processor = shipped_like
    policy = VLMPolicy(model, processor, temperature=0.7, top_p=0.9, top_k=top_k, max_new_tokens=2)
    generation = {k: v for k, v in policy.generation.items() if k != "synced_gpus"}
    used = _sampler_used(model, processor, **generation)
    assert used == {"top_k": max(top_k, 0), "repetition_penalty": 1.0, "temperature": 0.7, "top_p": 0.9}


def test_trl_rollouts_sample_with_the_recipes_top_k(tmp_path: Path) -> None:
    from zoo.engines.vlm.trl_engine import grpo_config

    recipe = load_recipe(ROOT / "domains/gui/recipes/gui-g1-tiny-cpu.yaml", ["algorithm.top_k=50"])
    assert grpo_config(recipe, tmp_path).top_k == 50
    assert grpo_config(load_recipe(ROOT / "domains/gui/recipes/gui-g1-tiny-cpu.yaml"), tmp_path).top_k == 0
