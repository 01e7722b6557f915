"""Typed per-method settings: ``algorithm.method`` picks the dataclass a recipe's ``algorithm`` block is read into."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from zoo.recipe import ChoiceConfig, Recipe, RecipeError
from zoo_common.registry import Registry


@dataclass(frozen=True)
class Algorithm(ChoiceConfig):
    choices = Registry("toy method")
    method: str = "ppo"
    gamma: float = 0.99


@Algorithm.register("ppo")
@dataclass(frozen=True)
class PPO(Algorithm):
    epochs: int = 5


@Algorithm.register("td3")
@dataclass(frozen=True)
class TD3(Algorithm):
    method: str = "td3"
    learning_starts: int = 2000


@dataclass(frozen=True, kw_only=True)
class ToyRecipe(Recipe):
    algorithm: Algorithm = field(default_factory=PPO)


def test_the_method_picks_the_class_and_the_default_method_applies() -> None:
    assert ToyRecipe.from_dict({"name": "r", "engine": "toy", "algorithm": {"method": "td3", "learning_starts": 10}}).algorithm == TD3(
        learning_starts=10)  # fmt: skip
    assert ToyRecipe.from_dict({"name": "r", "engine": "toy", "algorithm": {"epochs": 3}}).algorithm == PPO(epochs=3)


def test_another_methods_key_is_unknown_here_with_this_methods_keys() -> None:
    with pytest.raises(RecipeError, match=r"unknown recipe key 'algorithm.epochs'.*Valid keys here: method, gamma, "
                                          "learning_starts"):  # fmt: skip
        ToyRecipe.from_dict({"name": "r", "engine": "toy", "algorithm": {"method": "td3", "epochs": 3}})
    with pytest.raises(RecipeError, match=r"algorithm.method: unknown toy method 'pp0'.*Did you mean: ppo"):
        ToyRecipe.from_dict({"name": "r", "engine": "toy", "algorithm": {"method": "pp0"}})


def test_overrides_are_checked_against_the_chosen_class_and_round_trip() -> None:
    recipe = ToyRecipe.from_dict({"name": "r", "engine": "toy", "algorithm": {"method": "td3"}}, ["algorithm.learning_starts=7"])
    assert recipe.algorithm == TD3(learning_starts=7)
    with pytest.raises(RecipeError, match="unknown recipe key 'algorithm.epochs'"):
        ToyRecipe.from_dict({"name": "r", "engine": "toy", "algorithm": {"method": "td3"}}, ["algorithm.epochs=7"])
    assert ToyRecipe.from_dict(recipe.to_dict()) == recipe
