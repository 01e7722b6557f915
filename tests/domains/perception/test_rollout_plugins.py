"""The perception rollout plug-ins inside the real GRPO engine: Shuffle-R1's row order and SCS's resampling.

SCS reference: GenuineWWD/SCS @ 7014027d1ad44af8a53a5f1993c0f03b7518b321,
``openrlhf/trainer/ppo_utils/experience_maker.py`` (cut at ``int(len(response) * cut_keep_rate)``,
``n_cuts_per_prompt`` continuations of prompt + prefix, only the new tokens decoded) and
``openrlhf/trainer/ppo_utils/data_processor.py`` (``add_image_noise``: Gaussian, std = level% of 255).
Shuffle-R1 reference: xiaomi-research/shuffle-r1 @ 31d3ff03, ``shuffle_r1/ray_trainer.py`` (the
pairs' rows go to the actor update in the shuffled order, no further shuffle).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from domains.perception.scs_rollout import ScsResampling, add_image_noise
from rewards.base import REWARDS, RewardResult, register
from zoo.engines.reading import load_checked, load_recipe
from zoo.engines.vlm.plugins import Rollout
from zoo.engines.vlm.trl_engine import build_trainer
from zoo.recipe import RecipeError

RECIPES = Path(__file__).parents[3] / "domains" / "perception" / "recipes"


class VowelShare:
    """A dense test reward (share of vowels), so that a random policy's rollouts differ in advantage."""

    name = "test-perception-vowel-share"

    def __call__(self, predictions, samples):
        return [RewardResult(sum(c in "aeiou" for c in p) / max(1, len(p))) for p in predictions]


if VowelShare.name not in REWARDS:
    register(VowelShare.name, VowelShare())


def first_batch(trainer):
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train(); the steps are called directly here
    return next(iter(trainer.get_train_dataloader()))


# --- SCS ----------------------------------------------------------------------------------------


def test_kept_prefix_is_the_int_share_of_the_tokens():
    plugin = ScsResampling(cut_keep_rate=0.8)
    assert plugin.kept_prefix(list(range(10))) == list(range(8))
    assert plugin.kept_prefix([5, 6, 7]) == [5, 6]  # int(2.4) = 2
    assert plugin.kept_prefix([]) == []
    assert ScsResampling(cut_keep_rate=0.0).kept_prefix([1, 2]) == []


def test_image_noise_has_the_level_as_standard_deviation():
    grey = Image.new("RGB", (64, 64), (128, 128, 128))
    rng = np.random.default_rng(0)
    assert np.array_equal(np.asarray(add_image_noise(grey, 0, rng)), np.asarray(grey))
    noisy = np.asarray(add_image_noise(grey, 10, rng), dtype=np.float64)  # std 25.5, far from the 0/255 clip
    assert noisy.std() == pytest.approx(25.5, rel=0.05)
    assert noisy.mean() == pytest.approx(127.5, abs=1.0)  # uint8 truncation lowers the mean by about 0.5


def test_before_rewards_asks_n_cuts_continuations_per_rollout_on_noisy_images():
    image = Image.new("RGB", (56, 56), (128, 128, 128))
    messages = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Q"}]}]
    asked = []

    def continue_generation(prompts, prefixes):
        asked.extend(zip(prompts, prefixes))
        return [[100 + i] for i in range(len(prompts))]

    rollout = Rollout(prompts=[messages, messages], completion_ids=[[1, 2, 3, 4, 5], [6, 7]], metas=[{}, {"k": 1}],
                      continue_generation=continue_generation, decode=lambda ids: f"<answer>{ids[0]}</answer>")  # fmt: skip
    ScsResampling(n_cuts=3, cut_keep_rate=0.5, seed=0).before_rewards(rollout)
    assert [prefix for _, prefix in asked] == [[1, 2]] * 3 + [[6]] * 3
    for prompt, _ in asked:
        part = prompt[0]["content"][0]["image"]
        assert part.size == image.size and np.asarray(part).std() > 0  # a noisy copy; the original is untouched
        assert prompt[0]["content"][1] == {"type": "text", "text": "Q"}
    assert np.asarray(image).std() == 0
    assert rollout.metas == [{"scs_resampled": ["<answer>100</answer>", "<answer>101</answer>", "<answer>102</answer>"]},
                             {"k": 1, "scs_resampled": [f"<answer>{i}</answer>" for i in (103, 104, 105)]}]  # fmt: skip


def test_continuation_starts_after_the_kept_prefix(tmp_path):
    """Greedy decoding: continuing a greedy completion from its first k tokens reproduces its remaining tokens."""
    trainer = build_trainer(load_recipe(RECIPES / "scs-smoke.yaml", [f"training.output_dir={tmp_path}"]), tmp_path)
    trainer.generation_config.do_sample = False
    row = trainer.train_dataset[0]
    prompt = [{"role": "user", "content": [{"type": "image", "image": row["images"][0]},
                                           {"type": "text", "text": row["prompt"][0]["content"]}]}]  # fmt: skip
    full = trainer.continue_generation([prompt], [[]])[0]
    k = len(full) // 2
    tail = trainer.continue_generation([prompt], [full[:k]])[0]
    assert len(full) > 2 and tail[: len(full) - k] == full[k:]


def test_engine_fills_scs_resampled_for_the_reward(tmp_path):
    trainer = build_trainer(load_recipe(RECIPES / "scs-smoke.yaml", [f"training.output_dir={tmp_path}"]), tmp_path)
    inputs = first_batch(trainer)
    trainer._generate_and_score_completions(inputs)
    metas = [json.loads(x["meta"]) for x in inputs]
    assert all(len(m["scs_resampled"]) == 2 for m in metas)  # n_cuts: 2 in the smoke recipe
    distinct = trainer._metrics["train"]["scs-mcq/distinct_answers"]
    assert distinct and 1.0 <= distinct[-1] <= 2.0


# --- Shuffle-R1 ---------------------------------------------------------------------------------


def test_engine_trains_the_chosen_pairs_in_the_chosen_order(tmp_path):
    recipe = load_recipe(RECIPES / "shuffle-r1-smoke.yaml", [f"training.output_dir={tmp_path}",
                                                             f"rewards=[{{name: {VowelShare.name}}}]"])  # fmt: skip
    trainer = build_trainer(recipe, tmp_path)
    chosen = []
    plugin = trainer._plugins[0]
    original = plugin.select_rows

    def spy(batch):
        selection = original(batch)
        chosen.append((selection.rows, batch.advantages.clone()))
        return selection

    plugin.select_rows = spy
    inputs = trainer._prepare_inputs(first_batch(trainer))
    rows, advantages = chosen[0]
    assert advantages.abs().sum() > 0  # the dense reward separates the rollouts
    assert len(rows) == 4 and inputs["completion_ids"].shape[0] == 4  # 8 rollouts, 2 of 4 pairs kept
    assert torch.equal(inputs["advantages"].cpu(), advantages[rows])  # the plug-in's order, not a shuffle
    assert all(advantages[rows[i]] >= advantages[rows[i + 1]] for i in (0, 2))  # each pair: better row first
    ranked = advantages.sort(descending=True).values
    kept = {round(a, 5) for a in advantages[rows].tolist()}
    assert kept <= {round(a, 5) for a in (*ranked[:2].tolist(), *ranked[-2:].tolist())}  # the 2 most contrasting
    assert inputs["num_items_in_batch"].item() == (inputs["completion_mask"] * inputs["zoo_row_mask"][:, None]).sum().item()


def test_recipe_refuses_what_shuffle_r1_cannot_run():
    recipe = RECIPES / "shuffle-r1-smoke.yaml"
    with pytest.raises(RecipeError, match="must be even"):
        load_checked(recipe, ["algorithm.num_generations=3", "training.batch_size=9"])
    with pytest.raises(RecipeError, match="adv_estimator: grpo"):
        load_checked(recipe, ["algorithm.adv_estimator=rloo"])
    with pytest.raises(RecipeError, match="vlm-trl"):
        load_checked(recipe, engine="vlm-verl")
    with pytest.raises(RecipeError, match="rollout plug-in"):
        load_checked(recipe, ["algorithm.plugins=[{name: shuffle-r2}]"])


def test_one_shuffle_r1_step_changes_the_parameters(tmp_path):
    recipe = load_recipe(RECIPES / "shuffle-r1-smoke.yaml", [f"training.output_dir={tmp_path}", "training.steps=1",
                                                             f"rewards=[{{name: {VowelShare.name}}}]"])  # fmt: skip
    trainer = build_trainer(recipe, tmp_path)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    trainer.train()
    changed = [n for n, p in trainer.model.named_parameters() if p.requires_grad and not torch.equal(p, before[n])]
    assert changed


def test_take_rows_indexes_every_per_row_value_and_keeps_scalars():
    from zoo.engines.vlm.plugins import take_rows

    batch = {"ids": torch.arange(6).reshape(3, 2), "pixels": [torch.zeros(1), torch.ones(2), torch.ones(3)],
             "num_items_in_batch": torch.tensor(7), "flag": None}  # fmt: skip
    out = take_rows(batch, [2, 0, 2])
    assert out["ids"].tolist() == [[4, 5], [0, 1], [4, 5]]
    assert [p.numel() for p in out["pixels"]] == [3, 1, 3]
    assert out["num_items_in_batch"].item() == 7 and out["flag"] is None
    with pytest.raises(ValueError, match="expected 3"):
        take_rows({**batch, "bad": [1, 2]}, [0])
