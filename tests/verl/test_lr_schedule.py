"""The verl export carries the recipe's learning-rate schedule (main venv, no verl needed).

verl 0.9.1's actor defaults to a constant rate (``optim.lr_scheduler_type: constant``); an export that did not
name the schedule trained a ``cosine`` recipe at a constant rate on the cluster.
"""

from __future__ import annotations

import logging

import pytest

from zoo.engines.vlm.recipe import VerlRecipe
from zoo.engines.vlm.verl_engine import verl_overrides
from zoo.engines.vlm.verl_prompts import ImageSettings

OPTIM = "actor_rollout_ref.actor.optim."


def overrides(tmp_path, **training) -> dict[str, str]:
    recipe = VerlRecipe.from_dict({
        "name": "schedule", "engine": "vlm-verl",
        "data": {"name": "synthetic-colour", "kwargs": {"n": 4}},
        "rewards": [{"name": "synthetic-colour"}],
        "algorithm": {"num_generations": 4},
        "training": {"batch_size": 4, "steps": 50, **training},
    })  # fmt: skip
    return verl_overrides(recipe, tmp_path, "model", ImageSettings(14, 2, 3136, 12544), 64)


@pytest.mark.parametrize(
    ("training", "expected"),
    [
        ({}, {"lr_scheduler_type": "constant", "lr_warmup_steps": "0"}),
        ({"lr_scheduler": "constant_with_warmup", "warmup_steps": 5},
         {"lr_scheduler_type": "constant", "lr_warmup_steps": "5"}),
        ({"lr_scheduler": "cosine", "warmup_steps": 3},
         {"lr_scheduler_type": "cosine", "lr_warmup_steps": "3", "min_lr_ratio": "0.0", "num_cycles": "0.5"}),
    ],
)  # fmt: skip
def test_schedule_is_exported(tmp_path, training, expected) -> None:
    args = overrides(tmp_path, **training)
    assert {key: args[OPTIM + key] for key in expected} == expected


def test_a_schedule_verl_lacks_is_named_in_a_warning(tmp_path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="zoo.engines.vlm.verl_engine"):
        args = overrides(tmp_path, lr_scheduler="linear")
    assert args[OPTIM + "lr_scheduler_type"] == "constant"
    assert "training.lr_scheduler='linear' has no counterpart in verl 0.9.1" in caplog.text
