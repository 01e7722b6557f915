"""Reward registry, entry-point discovery, SampleReward and WeightedSum."""

from __future__ import annotations

import math

import pytest

import rewards
from rewards import RewardResult, RewardSample, WeightedSum
from rewards.numeric import NumericMatch
from zoo_common.registry import UnknownNameError


class Fixed:
    """A reward returning given scores (``None`` allowed), for composition tests."""

    def __init__(self, name: str, scores: list[float | None]) -> None:
        self.name, self.scores = name, scores

    def __call__(self, predictions, samples):
        return [RewardResult(s, {"raw": -1.0 if s is None else s}, None if s is not None else "worker died")
                for s in self.scores[: len(predictions)]]


def test_builtins_are_registered_and_misses_suggest() -> None:
    names = rewards.list()
    for name in ("multiple-choice", "numeric-match", "box-iou", "point-in-box", "action-match", "svg-ssim"):
        assert name in names
    assert rewards.get("Multiple_Choice") is rewards.get("multiple-choice")
    with pytest.raises(UnknownNameError, match="Did you mean: multiple-choice"):
        rewards.get("multiple-choise")


def test_register_refuses_a_different_object_under_a_taken_name() -> None:
    reward = NumericMatch(rel_tol=0.1, name="test-numeric-10pct")
    rewards.register("test-numeric-10pct", reward)
    rewards.register("test-numeric-10pct", NumericMatch(rel_tol=0.1, name="test-numeric-10pct"))  # equal: no-op
    with pytest.raises(ValueError, match="already registered"):
        rewards.register("test-numeric-10pct", NumericMatch(rel_tol=0.2, name="test-numeric-10pct"))
    with pytest.raises(TypeError, match="must be callable"):
        rewards.register("test-not-callable", 3)


def test_discovery_hooks_run_once_at_first_miss() -> None:
    """How zoo makes domain rewards findable without rewards importing zoo: a hook run on a miss."""
    calls = []
    reward = Fixed("test-hooked-domain", [1.0])

    def hook():
        calls.append(1)
        rewards.register("test-hooked-domain", reward)

    rewards.REWARDS.add_discovery(hook)
    assert calls == []  # nothing runs before a lookup
    assert rewards.get("test-hooked-domain") is reward
    assert "test-hooked-domain" in rewards.list()
    rewards.get("test-hooked-domain")
    assert calls == [1]


def test_sample_reward_turns_parse_errors_into_zero_with_all_components() -> None:
    result = NumericMatch()(["no digits"], [RewardSample(target={"answer": 3})])[0]
    assert result == RewardResult(0.0, {"correct": 0.0, "rel_error": 0.0}, "no number in 'no digits'")
    with pytest.raises(ValueError, match="2 predictions for 1 samples"):
        NumericMatch()(["1", "2"], [RewardSample(target={"answer": 3})])


def test_weighted_sum_keeps_components_and_propagates_none() -> None:
    total = WeightedSum([(Fixed("fmt", [1.0, 1.0, 0.0]), 0.2), (Fixed("acc", [0.5, None, 1.0]), 0.8)])
    results = total(["a", "b", "c"], [{}, {}, {}])
    assert results[0].score == pytest.approx(0.2 + 0.4)
    assert results[0].components == {"fmt": 1.0, "fmt/raw": 1.0, "acc": 0.5, "acc/raw": 0.5}
    assert results[1].score is None and "acc: worker died" in results[1].error
    assert math.isnan(results[1].components["acc"])
    assert results[2].score == pytest.approx(0.8)


def test_weighted_sum_by_name_and_validation() -> None:
    total = WeightedSum([("multiple-choice", 1.0), ("format-think-answer", 0.5)])
    result = total(["<think>x</think><answer>B</answer>"], [RewardSample(target={"answer": "B"})])[0]
    assert result.score == 1.5 and result.components["multiple-choice/correct"] == 1.0
    zero_weight_none = WeightedSum([(Fixed("a", [1.0]), 1.0), (Fixed("b", [None]), 0.0)])
    assert zero_weight_none(["x"], [{}])[0].score == 1.0
    with pytest.raises(ValueError, match="two parts named"):
        WeightedSum([(Fixed("a", [1.0]), 1.0), (Fixed("a", [1.0]), 1.0)])
    with pytest.raises(ValueError, match="at least one"):
        WeightedSum([])
