"""Recipe schema: YAML in, typed dotted overrides, clear errors, every shipped recipe parses."""

from __future__ import annotations

from pathlib import Path

import pytest

from zoo.engines.vlm.recipe import VLMRecipe as Recipe
from zoo.recipe import RecipeError, load_recipe

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(ROOT.glob("domains/*/recipes/*.yaml"))  # parsing each is tests/contract's job

MINIMAL = {"name": "t", "engine": "vlm-trl", "data": {"name": "synthetic-colour"}, "rewards": ["synthetic-colour"]}


def test_defaults_and_shorthand_reward():
    recipe = Recipe.from_dict(MINIMAL)
    assert recipe.rewards[0].name == "synthetic-colour" and recipe.rewards[0].weight == 1.0
    assert recipe.model.name == "tiny:qwen2_5_vl"
    assert recipe.output_dir == Path("runs/t")


def test_overrides_are_typed():
    recipe = Recipe.from_dict(
        MINIMAL,
        [
            "training.lr=1e-5",  # YAML 1.1 reads this as a string; the schema makes it a float
            "training.steps=7",
            "training.lora.enabled=true",
            "algorithm.loss_type=dapo",
            "algorithm.dual_clip=3",
            "data.kwargs.n=12",
            "rewards.0.weight=0.5",
            "verl.overrides=[trainer.nnodes=2]",
        ],
    )
    assert recipe.training.lr == 1e-5 and isinstance(recipe.training.lr, float)
    assert recipe.training.steps == 7 and recipe.training.lora.enabled is True
    assert recipe.algorithm.loss_type == "dapo" and recipe.algorithm.dual_clip == 3.0
    assert recipe.data.kwargs == {"n": 12}
    assert recipe.rewards[0].weight == 0.5
    assert recipe.verl.overrides == ("trainer.nnodes=2",)


def test_yaml_round_trip(tmp_path):
    recipe = Recipe.from_dict(MINIMAL, ["algorithm.num_generations=4", "training.batch_size=8"])
    path = tmp_path / "recipe.yaml"
    recipe.to_yaml(path)
    assert Recipe.from_yaml(path) == recipe


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("training.lrr=1", "Did you mean training.lr"),
        ("algorithm.loss_type=dapoo", "Did you mean: dapo"),
        ("training.steps=many", "training.steps must be int"),
        ("training.freeze_vision=maybe", "must be true or false"),
        ("rewards.3.weight=1", "has only 1 item"),
        ("no_equals_sign", "must look like key.path=value"),
        ("algorithm.num_generations=1", "groups of at least 2"),
        ("training.batch_size=6", "not a multiple of algorithm.num_generations=8"),
        ("algorithm.dual_clip=0.5", "dual_clip must be > 1"),
    ],
)
def test_bad_overrides_name_the_problem(override, message):
    with pytest.raises(RecipeError, match=message.replace(".", r"\.").replace("(", r"\(")):
        Recipe.from_dict(MINIMAL, [override])


def test_unknown_yaml_key_and_missing_file(tmp_path):
    with pytest.raises(RecipeError, match=r"unknown recipe key 'trainng'.*Did you mean training"):
        Recipe.from_dict({**MINIMAL, "trainng": {}})
    with pytest.raises(RecipeError, match="does not exist"):
        Recipe.from_yaml(tmp_path / "nope.yaml")
    with pytest.raises(RecipeError, match="missing required key"):
        Recipe.from_dict({"data": {"name": "x"}, "rewards": ["r"]})


def test_policy_source_accepts_dirs_zoo_names_and_hub_base_models(tmp_path, monkeypatch):
    """Recipes start from Hub base models that are not zoo entries; those must not be 'unknown model'."""
    from zoo_common.registry import UnknownNameError
    from zoo.hub import CHECKPOINTS_DIR
    from zoo.engines.vlm.policy_model import policy_source

    def source(name: str, *overrides: str) -> tuple[str, str | None]:
        recipe = Recipe.from_dict({"name": "t", "engine": "vlm-trl", "data": {"name": "d"}, "rewards": ["r"],
                                   "model": {"name": name}},
                                  list(overrides))
        return policy_source(recipe)

    assert source(str(tmp_path)) == (str(tmp_path), None)
    assert source("gui-grounding-tiny") == (str(CHECKPOINTS_DIR / "gui-grounding-tiny"), None)
    assert source("Qwen/Qwen2.5-VL-7B-Instruct", "model.revision=abc") == ("Qwen/Qwen2.5-VL-7B-Instruct", "abc")
    with pytest.raises(UnknownNameError, match="Did you mean"):
        source("gui-grounding-tiy")
    monkeypatch.chdir(ROOT)  # shipped recipes name repository-relative directories
    for path in SHIPPED:
        name = load_recipe(path).model.name
        assert name.startswith("tiny:") or source(name)[0], path


def test_estimator_needing_rollout_ids_is_refused_by_engines_without_a_multi_turn_loop():
    data = {"name": "x", "engine": "vlm-verl", "data": {"name": "synthetic-colour"},
            "rewards": [{"name": "synthetic-colour"}], "algorithm": {"adv_estimator": "ui-s1"}}
    with pytest.raises(RecipeError, match="traj_ids, step_ids, matches"):
        Recipe.from_dict(data)
    assert Recipe.from_dict({**data, "engine": "vlm-trl"}).is_multi_turn  # vlm-trl runs its semi-online loop
