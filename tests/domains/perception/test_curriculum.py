"""Curr-ReFT's curriculum: stages concatenated in order, and the engine option that keeps that order."""

from __future__ import annotations

from pathlib import Path

import pytest

from domains.perception.data import load_curriculum
from zoo.engines.reading import load_recipe
from zoo.engines.vlm.trl_engine import build_trainer, grpo_config

RECIPE = Path(__file__).parents[3] / "domains" / "perception" / "recipes" / "curr-reft-smoke.yaml"
STAGES = [
    {"stage": "judge", "name": "perception-synthetic", "kwargs": {"n": 3, "task": "judge", "seed": 0}},
    {"stage": "choice", "name": "perception-synthetic", "kwargs": {"n": 2, "task": "choice", "seed": 1}},
]


def test_curriculum_keeps_stage_order_and_tags_each_sample():
    samples = load_curriculum(STAGES)
    assert [s.target["stage"] for s in samples] == ["judge"] * 3 + ["choice"] * 2
    assert [s.meta["stage_index"] for s in samples] == [0, 0, 0, 1, 1]
    assert samples[0].target["answer"] in ("<answer>yes</answer>", "<answer>no</answer>")
    assert samples[3].target["answer"] in ("<answer>A</answer>", "<answer>B</answer>")


def test_curriculum_rejects_malformed_stages():
    with pytest.raises(ValueError, match="at least one stage"):
        load_curriculum([])
    with pytest.raises(ValueError, match="stage 0"):
        load_curriculum([{"name": "perception-synthetic"}])


def test_shuffle_false_reaches_trl_and_the_sampler_walks_the_stages_in_order(tmp_path):
    recipe = load_recipe(RECIPE)
    assert grpo_config(recipe, tmp_path).shuffle_dataset is False
    assert grpo_config(load_recipe(RECIPE, ["training.shuffle=true"]), tmp_path).shuffle_dataset is True
    trainer = build_trainer(recipe, tmp_path)
    order = list(trainer._get_train_sampler(trainer.train_dataset))
    prompts = list(dict.fromkeys(order))  # each prompt is repeated num_generations times
    assert prompts == sorted(prompts) == list(range(len(trainer.train_dataset)))
    stages = [trainer.train_dataset[i]["target"] for i in prompts]
    assert ['"stage": "judge"' in t for t in stages] == [True] * 4 + [False] * 4
