"""Rejection-sampling SFT data (Curr-ReFT's last stage): the policy's accepted completions as targets."""

from __future__ import annotations

import pytest

import domains.perception.rewards  # noqa: F401  (registers the curr-reft rewards)
from domains.perception.rejection_sft import accepted_answer, rejection_sample
from rewards.base import get
from zoo.data import Sample, answer_format

CLASSIFY = {"answer": "<answer>cat dog</answer>", "task": "classify"}


def _samples():
    return [Sample(id="a", prompt="what animals?", target=CLASSIFY), Sample(id="b", prompt="again?", target=CLASSIFY)]


def test_keeps_only_completions_at_or_above_the_threshold_in_sampling_order():
    reward = get("curr-reft-open")  # item-set overlap: {cat} of {cat, dog} scores 0.5
    completions = [["<answer>cat</answer>", "<answer>dog cat</answer>", "<answer>cat, dog</answer>"],
                   ["<answer>bird</answer>"]]  # fmt: skip
    kept = rejection_sample(_samples(), completions, reward, threshold=1.0, per_prompt=1)
    assert [(s.id, s.target["sft_answer"], s.meta["rejection_score"]) for s in kept] == [
        ("a-rs0", "<answer>dog cat</answer>", 1.0)
    ]
    both = rejection_sample(_samples(), completions, reward, threshold=0.5, per_prompt=2)
    assert [s.target["sft_answer"] for s in both] == ["<answer>cat</answer>", "<answer>dog cat</answer>"]
    assert accepted_answer(both[1]) == "<answer>dog cat</answer>" and both[1].target["task"] == "classify"


def test_duplicates_unscorable_completions_and_empty_lists():
    reward = get("curr-reft-open")
    vqa = Sample(id="v", target={"answer": "<answer>a dog</answer>", "task": "coco_vqa"})  # scores None
    same = ["<answer>cat dog</answer>"] * 3
    kept = rejection_sample([_samples()[0], vqa, _samples()[1]], [same, ["<answer>a dog</answer>"], []], reward,
                            per_prompt=3)  # fmt: skip
    assert [s.id for s in kept] == ["a-rs0"]


def test_answer_format_is_registered_and_errors_are_named():
    assert answer_format("rejection-sample") is accepted_answer
    with pytest.raises(KeyError, match="sft_answer"):
        accepted_answer(_samples()[0])
    with pytest.raises(ValueError, match="one list per sample"):
        rejection_sample(_samples(), [["x"]], get("curr-reft-open"))
    with pytest.raises(ValueError, match="per_prompt"):
        rejection_sample(_samples(), [[], []], get("curr-reft-open"), per_prompt=0)
