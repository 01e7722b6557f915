"""Medical recipes parse against the recipe schema and name registered data and rewards."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewards.base import REWARDS
from zoo.data import DATASETS, load_dataset
from zoo.engines.vlm.recipe import VLMRecipe as Recipe

RECIPES = sorted((Path(__file__).parents[3] / "domains" / "medical" / "recipes").glob("*.yaml"))


def test_the_recipes_exist() -> None:
    assert {p.stem for p in RECIPES} >= {"patho-r1-grpo", "patho-r1-dapo", "dolphin-r1-ultrasound"}


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_recipe_is_valid_and_names_registered_parts(path: Path) -> None:
    recipe = Recipe.from_yaml(path)
    assert recipe.data.name in DATASETS
    assert all(spec.name in REWARDS for spec in recipe.rewards)


@pytest.mark.parametrize("path", [p for p in RECIPES if p.stem.endswith("-smoke")], ids=lambda p: p.stem)
def test_smoke_data_scores_with_the_recipe_rewards(path: Path) -> None:
    recipe = Recipe.from_yaml(path)
    samples = list(load_dataset(recipe.data.name, **recipe.data.kwargs))
    assert len(samples) == recipe.data.kwargs["n"]
    for spec in recipe.rewards:
        results = REWARDS.get(spec.name)(["<think>x</think><answer>A</answer>"] * len(samples), samples)
        assert all(r.score is not None for r in results)


def test_dapo_variant_differs_where_dapo_does() -> None:
    recipes = {p.stem: Recipe.from_yaml(p) for p in RECIPES}
    grpo, dapo = recipes["patho-r1-grpo"], recipes["patho-r1-dapo"]
    assert (grpo.algorithm.loss_type, dapo.algorithm.loss_type) == ("grpo", "dapo")
    assert dapo.algorithm.clip_high == 0.28 and dapo.algorithm.dynamic_sampling and dapo.algorithm.beta == 0.0


@pytest.mark.parametrize("stem", ["dolphin-r1-ultrasound-smoke", "patho-r1-grpo-smoke", "patho-r1-dapo-smoke"])
def test_smoke_recipe_trains_on_cpu(stem: str, tmp_path: Path) -> None:
    """Two GRPO/DAPO steps of a tiny random Qwen2.5-VL through `zoo train`'s code path."""
    import csv

    from zoo.train import run

    path = next(p for p in RECIPES if p.stem == stem)
    out = run(str(path), output_dir=str(tmp_path / stem))
    assert (out / "final").is_dir() and (out / "recipe.yaml").is_file()
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    reward = next(spec.name for spec in Recipe.from_yaml(path).rewards)
    logged = [r[f"rewards/{reward}/mean"] for r in rows if r.get(f"rewards/{reward}/mean")]
    assert len(logged) == 2 and all(0.0 <= float(v) <= 2.0 for v in logged)


@pytest.mark.parametrize("stem", ["patho-r1-grpo", "patho-r1-dapo"])
def test_patho_recipes_say_why_they_train_on_pathmmu_files(stem: str) -> None:
    """PathMMU's files are benchmark data (the domain's eval_datasets): its validation split is trained on only
    with a reason, and the test split evaluation uses is another one."""
    from domains.medical import DOMAIN
    from zoo.engines.checks import check_training_data
    from zoo.recipe import RecipeError

    path = next(p for p in RECIPES if p.stem == stem)
    recipe = Recipe.from_yaml(path)
    train, held_out = recipe.data.kwargs["category"], recipe.data.eval_kwargs["category"]
    assert "test" not in train.lower() and train != held_out and held_out == "PubMed_test"
    assert set(DOMAIN.eval_datasets) == {"pathmmu", "u2bench"} and recipe.data.name in DOMAIN.eval_datasets
    assert recipe.data.allow_eval_data and "disjoint PubMed_test" in recipe.data.eval_data_reason
    with pytest.raises(RecipeError, match="dataset 'pathmmu'.* is evaluation data"):
        check_training_data(Recipe.from_yaml(path, ["data.allow_eval_data=false"]).data)


def test_training_on_a_test_split_is_refused_unless_the_recipe_says_why() -> None:
    from zoo.engines.checks import check_training_data
    from zoo.recipe import DataConfig, RecipeError

    with pytest.raises(RecipeError, match="category='PubMed_test'.* is evaluation data"):
        check_training_data(DataConfig(name="pathmmu", kwargs={"category": "PubMed_test"}))
    with pytest.raises(RecipeError, match="split='test'"):
        check_training_data(Recipe.from_yaml(next(p for p in RECIPES if p.stem == "patho-r1-grpo"),
                                             ["data.kwargs={split: test}", "data.allow_eval_data=false"]).data)  # fmt: skip
    with pytest.raises(RecipeError, match="eval_data_reason"):
        DataConfig(name="pathmmu", kwargs={"category": "PubMed_test"}, allow_eval_data=True)
    allowed = DataConfig(name="pathmmu", kwargs={"category": "PubMed_test"}, allow_eval_data=True,
                         eval_data_reason="a leakage study: how much training on the test split inflates accuracy")
    assert allowed.allow_eval_data
