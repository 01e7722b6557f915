"""Each diffusion method reads its ``algorithm`` block into its own config class: a key of another method is refused
with this method's keys, every method in the table has its class, and the resolved settings are typed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from zoo.engines.diffusion.methods import METHODS
from zoo.engines.diffusion.recipe import DiffusionAlgorithmConfig, DiffusionRecipe, FlowGRPOConfig, RLCMConfig
from zoo.engines.reading import load_recipe
from zoo.recipe import RecipeError

SMOKE = Path(__file__).with_name("diffusion_smoke.yaml")


def keys(method: str) -> str:
    return ", ".join(f.name for f in dataclasses.fields(DiffusionAlgorithmConfig.choices.get(method)))


def test_every_method_has_its_config_class() -> None:
    assert sorted(DiffusionAlgorithmConfig.choices.list()) == METHODS.list()
    for name in METHODS.list():
        config = DiffusionAlgorithmConfig.choices.get(name)
        assert issubclass(config, DiffusionAlgorithmConfig) and config is not DiffusionAlgorithmConfig
        method = next(f.default for f in dataclasses.fields(config) if f.name == "method")
        assert METHODS.get(method) is METHODS.get(name)  # a config built without ``method`` is its own method's


@pytest.mark.parametrize(
    ("method", "foreign"),
    [("flow_grpo", "branch_factor"), ("tree_grpo", "sde_window_size"), ("rlcm", "noise_level"), ("ddpo", "d_times")],
)
def test_a_key_of_another_method_is_refused_with_this_methods_keys(method: str, foreign: str) -> None:
    data = {"name": "r", "engine": "diffusion", "rewards": ["brightness"], "prompts": {"train": ["a red square"]},
            "algorithm": {"method": method, foreign: 2}}  # fmt: skip
    message = rf"unknown recipe key 'algorithm.{foreign}'.* Valid keys here: {keys(method)}\.$"
    with pytest.raises(RecipeError, match=message):
        DiffusionRecipe.from_dict(data)
    with pytest.raises(RecipeError, match=message):  # and as a --set override
        DiffusionRecipe.from_dict({**data, "algorithm": {"method": method}}, [f"algorithm.{foreign}=2"])


def test_a_config_is_the_class_its_method_names() -> None:
    with pytest.raises(RecipeError, match="'ddpo' is read into DDPOConfig, not FlowGRPOConfig"):
        dataclasses.replace(FlowGRPOConfig(), method="ddpo")
    with pytest.raises(RecipeError, match="tree_grpo trains every branch transition"):
        load_recipe(SMOKE, ["algorithm.method=tree_grpo", "algorithm.timestep_fraction=0.5"])


def test_settings_are_the_rows_values_under_the_configs_own() -> None:
    flow = METHODS.get("flow_grpo")
    assert FlowGRPOConfig(clip_range=0.01).settings(flow) == dataclasses.replace(flow.defaults, clip_range=0.01)
    rlcm = METHODS.get("rlcm")
    assert RLCMConfig(guidance_scale=2.0).settings(rlcm).noise_level == rlcm.defaults.noise_level == 0.0
