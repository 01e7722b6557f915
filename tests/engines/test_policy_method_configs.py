"""Each policy method reads its ``algorithm`` block into its own config class: a key of another method is refused
with this method's keys, every registered method states its registered class, and a method without one is refused."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3", reason="the policy methods need the `robot` or `driving` extra")

from zoo.engines.policy.methods import POLICY_METHODS, register_method
from zoo.engines.policy.recipe import PolicyAlgorithmConfig, PolicyRecipe
from zoo.engines.reading import load_recipe
from zoo.recipe import RecipeError

ROOT = Path(__file__).resolve().parents[2]
RECIPES = {"resip-ppo": ROOT / "domains/robot/recipes/fetch-push-resip-smoke.yaml",
           "resfit-td3": ROOT / "domains/robot/recipes/fetch-push-resfit-smoke.yaml",
           "dppo": ROOT / "domains/robot/recipes/fetch-push-dppo-smoke.yaml",
           "carl-ppo": ROOT / "domains/driving/recipes/carl-highway-smoke.yaml"}  # fmt: skip


def keys(method: str) -> str:
    return ", ".join(f.name for f in dataclasses.fields(PolicyAlgorithmConfig.choices.get(method)))


def test_every_method_states_its_registered_config_and_every_config_has_its_method() -> None:
    assert POLICY_METHODS.list() == PolicyAlgorithmConfig.choices.list() == sorted(RECIPES)
    for name in POLICY_METHODS.list():
        config = PolicyAlgorithmConfig.choices.get(name)
        assert POLICY_METHODS.get(name).config is config and config is not PolicyAlgorithmConfig
        assert next(f.default for f in dataclasses.fields(config) if f.name == "method") == name


@pytest.mark.parametrize(("method", "foreign"), [("resip-ppo", "learning_starts"), ("resfit-td3", "epochs"),
                                                 ("dppo", "residual_scale"), ("carl-ppo", "critic_lr")])  # fmt: skip
def test_a_key_of_another_method_is_refused_with_this_methods_keys(method: str, foreign: str) -> None:
    message = rf"unknown recipe key 'algorithm.{foreign}'.* Valid keys here: {keys(method)}\.$"
    with pytest.raises(RecipeError, match=message):
        load_recipe(RECIPES[method], [f"algorithm.{foreign}=2"])
    data = load_recipe(RECIPES[method]).to_dict()
    data["algorithm"][foreign] = 2
    with pytest.raises(RecipeError, match=message):
        PolicyRecipe.from_dict(data)


def test_the_untyped_kwargs_are_gone_and_their_settings_are_typed() -> None:
    with pytest.raises(RecipeError, match="unknown recipe key 'algorithm.kwargs'"):
        load_recipe(RECIPES["resfit-td3"], ["algorithm.kwargs={n_critics: 2}"])
    assert load_recipe(RECIPES["resfit-td3"]).algorithm.n_critics == 3
    assert load_recipe(RECIPES["dppo"], ["algorithm.clip_base=0.01"]).algorithm.settings(1e-4).clip_base == 0.01


def test_a_config_is_the_class_its_method_names() -> None:
    resip = load_recipe(RECIPES["resip-ppo"]).algorithm
    with pytest.raises(RecipeError, match="'carl-ppo' is read into CarlPPOConfig, not ResipPPOConfig"):
        dataclasses.replace(resip, method="carl-ppo")


def test_a_method_without_its_registered_config_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Unconfigured:
        name: str = "unconfigured"

    with pytest.raises(TypeError, match="register its settings"):
        register_method(Unconfigured())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="register its settings"):  # another method's config is not its own
        register_method(dataclasses.replace(POLICY_METHODS.get("carl-ppo"), name="carl-ppo-copy"))
    assert "unconfigured" not in POLICY_METHODS and "carl-ppo-copy" not in POLICY_METHODS
