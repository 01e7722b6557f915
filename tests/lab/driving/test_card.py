"""The card of ``checkpoints/driving-vla-tiny`` (``lab.driving.card``), rendered from its training record."""

from __future__ import annotations

from pathlib import Path

from zoo.records import read_record

ROOT = Path(__file__).resolve().parents[3]
CHECKPOINT = ROOT / "checkpoints" / "driving-vla-tiny"


def test_card_quotes_grpo_training_reward_trend_only_when_recorded():
    """The card says whether GRPO moved its own objective when the record has the trend, and stays
    silent (rather than inventing one) when it has not."""
    from lab.driving.card import render

    record = read_record(CHECKPOINT / "training.json").to_dict()["measurements"]
    record["summary"].pop("grpo_train_reward", None)
    assert "sampled training reward" not in render(record, 3.6)
    record["summary"]["grpo_train_reward"] = {"seed0": {"first": 0.551, "last": 0.603, "k": 10, "logged_steps": 48},
                                              "seed1": {"first": 0.569, "last": 0.568, "k": 10, "logged_steps": 48}}
    text = render(record, 3.6)
    assert "mean of the first 10 logged steps → the last 10: seed 0 0.551 → 0.603; seed 1 0.569 → 0.568." in text


def test_card_reads_grpo_against_control_with_the_run_as_the_unit():
    """The verdict on GRPO's edge over more SFT needs the seed-level difference (mean ± SE over seeds) and,
    where recorded, the seed-averaged difference's error over the scenes both to clear two errors."""
    from lab.driving.card import render

    record = read_record(CHECKPOINT / "training.json").to_dict()["measurements"]
    record["across_seeds"] = {"grpo_minus_control": {"diff": 0.020, "se": 0.016, "seeds": 3}}
    record["seed_mean_over_scenes"] = {"grpo_minus_control": {"diff": 0.020, "se": 0.012, "seeds": 3}}
    text = render(record, 3.6)
    assert "mean of the 3 seeds' differences" in text and "GRPO − control +0.020 ± 0.016" in text
    assert "over the scenes +0.020 ± 0.012" in text and "edge over more SFT is not shown" in text
    record["across_seeds"]["grpo_minus_control"] = {"diff": 0.020, "se": 0.008, "seeds": 7}
    assert "edge over more SFT is not shown" in render(record, 3.6)  # clears over seeds, not over scenes
    record["seed_mean_over_scenes"]["grpo_minus_control"]["se"] = 0.009
    assert "GRPO's edge over more SFT is beyond two standard errors" in render(record, 3.6)


def test_card_breaks_the_arms_down_by_scene_kind_when_recorded():
    """Where each arm gains and loses (an overall mean can hide a gain on one kind paid on another)."""
    from lab.driving.card import render

    record = read_record(CHECKPOINT / "training.json").to_dict()["measurements"]
    record["by_kind"] = {"sft": {"cruise": 0.857, "follow": 0.86}, "grpo": {"cruise": 0.894, "follow": 0.642},
                         "control": {"cruise": 0.86, "follow": 0.87}}  # fmt: skip
    text = render(record, 3.6)
    assert "By scene kind (SFT start → GRPO → control, each arm averaged over its seeds): cruise 0.857 → 0.894 → " \
           "0.860; follow 0.860 → 0.642 → 0.870." in text
    record.pop("by_kind")
    assert "By scene kind" not in render(record, 3.6)


def test_card_names_the_advantage_the_recipe_used():
    """GRPO's group-normalised advantages and Dr. GRPO's group-centred ones are different recipes; the
    card reads which from the recorded recipe."""
    from lab.driving.card import render

    record = read_record(CHECKPOINT / "training.json").to_dict()["measurements"]
    record["recipe_grpo"]["algorithm"]["normalize_std"] = True
    assert "group-normalised\n  advantages" in render(record, 3.6)
    record["recipe_grpo"]["algorithm"]["normalize_std"] = False
    text = render(record, 3.6)
    assert "group-centred (Dr. GRPO: no division by the group's std)" in text and "group-normalised" not in text
