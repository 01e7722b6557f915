"""``zoo train --engine verl --dry-run``: files verl 0.9.1 accepts.

The first tests check the files without verl (CI never installs it). The ``verl`` tests, skipped
without verl, read the parquet through verl's own ``RLHFDataset``, compose verl's Hydra config with
the exported overrides (struct mode rejects unknown keys), load the reward through verl's
``get_custom_reward_fn`` and call it as verl's naive reward manager does, and compare zoo's
registered estimator and loss with verl's built-in ones.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from zoo.engines.vlm.recipe import VLMRecipe as Recipe
from zoo.train import run

HAS_VERL = importlib.util.find_spec("verl") is not None


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("verl-run")
    recipe = Recipe.from_dict({
        "name": "verl-export",
        "engine": "vlm-trl",
        "data": {"name": "synthetic-colour", "kwargs": {"n": 8, "seed": 0}},
        "rewards": [{"name": "synthetic-colour"}, {"name": "synthetic-format", "weight": 0.1}],
        "algorithm": {"num_generations": 4, "max_completion_length": 8, "loss_type": "dapo"},
        "training": {"batch_size": 8, "steps": 3, "output_dir": str(out)},
    })
    path = out / "in.yaml"
    recipe.to_yaml(path)
    run(str(path), [], resume=False, engine="verl", dry_run=True)
    return out / "verl"


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location("zoo_test_reward_fn", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dry_run_writes_all_files(exported):
    assert {p.name for p in exported.iterdir()} >= {"train.parquet", "reward_fn.py", "verl_args.yaml", "run_verl.sh",
                                                    "model"}
    assert os.access(exported / "run_verl.sh", os.X_OK)


def test_parquet_has_verl_columns(exported):
    table = pq.read_table(exported / "train.parquet")
    assert set(table.column_names) == {"data_source", "prompt", "images", "ability", "reward_model", "extra_info"}
    rows = table.to_pylist()
    assert len(rows) == 8
    for i, row in enumerate(rows):
        user = next(m for m in row["prompt"] if m["role"] == "user")
        assert user["content"].count("<image>") == len(row["images"]) == 1
        assert row["images"][0]["bytes"][:8] == b"\x89PNG\r\n\x1a\n"
        assert row["data_source"] == "recipe-verl-export"
        assert row["reward_model"]["style"] == "rule"
        assert json.loads(row["reward_model"]["ground_truth"])["answer"] in ("red", "green", "blue", "yellow")
        assert row["extra_info"]["index"] == i and row["extra_info"]["split"] == "train"


def test_reward_module_scores_with_the_zoo_reward(exported):
    compute_score = load_module(exported / "reward_fn.py").compute_score
    row = pq.read_table(exported / "train.parquet").to_pylist()[0]
    truth = row["reward_model"]["ground_truth"]
    answer = json.loads(truth)["answer"]
    right = compute_score(row["data_source"], answer, truth, row["extra_info"])
    wrong = compute_score(row["data_source"], "purple", truth, row["extra_info"])
    assert right["score"] == pytest.approx(1.1) and right["synthetic-colour/correct"] == 1.0
    assert wrong["score"] == 0.0 and set(wrong) == set(right), "verl needs the same keys on every call"


def test_overrides_use_zoo_estimator_loss_and_recipe_values(exported):
    args = yaml.safe_load((exported / "verl_args.yaml").read_text())
    assert args["algorithm.adv_estimator"] == "zoo_grpo"
    assert args["actor_rollout_ref.actor.policy_loss.loss_mode"] == "zoo_vanilla"
    assert args["actor_rollout_ref.actor.loss_agg_mode"] == "token-mean"  # dapo
    assert args["actor_rollout_ref.actor.clip_ratio_high"] == "0.28"  # DAPO clip-higher default
    assert args["actor_rollout_ref.rollout.n"] == "4"
    assert args["data.max_response_length"] == "8"
    assert args["reward.custom_reward_function.path"] == str(exported / "reward_fn.py")
    assert "VERL_USE_EXTERNAL_MODULES=zoo.engines.vlm.verl_plugin" in (exported / "run_verl.sh").read_text()


@pytest.mark.skipif(HAS_VERL, reason="checks the message shown when verl is missing")
def test_launch_without_verl_says_how_to_install(exported):
    path = exported.parent / "recipe.yaml"
    with pytest.raises(RuntimeError, match=r"pip install 'rl-model-zoo\[verl\]'"):
        run(str(path), [], engine="verl", dry_run=False)


# --- with verl installed ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def verl_config(exported):
    pytest.importorskip("verl")
    import verl
    from hydra import compose, initialize_config_dir

    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    args = yaml.safe_load((exported / "verl_args.yaml").read_text())
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(config_name="ppo_trainer", overrides=[f"{k}={v}" for k, v in args.items()])


@pytest.mark.verl
def test_verl_dataset_reads_the_parquet(verl_config):
    from transformers import AutoProcessor
    from verl.utils.dataset.rl_dataset import RLHFDataset

    processor = AutoProcessor.from_pretrained(verl_config.actor_rollout_ref.model.path)
    dataset = RLHFDataset(verl_config.data.train_files, processor.tokenizer, verl_config.data, processor=processor)
    assert len(dataset) == 8
    content = dataset[0]["raw_prompt"][-1]["content"]
    assert [part["type"] for part in content] == ["image", "text"]


@pytest.mark.verl
def test_verl_loads_and_calls_the_reward(verl_config, exported):
    from verl.trainer.ppo.reward import get_custom_reward_fn

    reward_fn = get_custom_reward_fn(verl_config)
    row = pq.read_table(exported / "train.parquet").to_pylist()[0]
    truth = row["reward_model"]["ground_truth"]
    scored = reward_fn(data_source=row["data_source"], solution_str=json.loads(truth)["answer"], ground_truth=truth,
                       extra_info=row["extra_info"])
    assert scored["score"] == pytest.approx(1.1)


@pytest.mark.verl
def test_zoo_registrations_match_verl_builtins(verl_config):
    import torch
    from verl.trainer.ppo import core_algos

    import zoo.engines.vlm.verl_plugin  # noqa: F401

    torch.manual_seed(0)
    rewards = torch.zeros(8, 5)
    rewards[:, -1] = torch.rand(8)
    mask = torch.ones(8, 5)
    index = [0] * 4 + [1] * 4
    ours, _ = core_algos.get_adv_estimator_fn("zoo_grpo")(rewards, mask, index=index, config=verl_config.algorithm)
    theirs, _ = core_algos.compute_grpo_outcome_advantage(rewards, mask, index)
    torch.testing.assert_close(ours, theirs)

    from verl.utils.config import omega_conf_to_dataclass

    actor = omega_conf_to_dataclass(verl_config.actor_rollout_ref.actor)  # as verl's workers build it
    logp, old = torch.randn(8, 5) * 0.1 - 1, torch.randn(8, 5) * 0.1 - 1
    ours = core_algos.get_policy_loss_fn("zoo_vanilla")(old, logp, theirs, mask, "token-mean", actor)[0]
    builtin = core_algos.get_policy_loss_fn("vanilla")(old, logp, theirs, mask, "token-mean", actor)[0]
    torch.testing.assert_close(ours, builtin)
