"""``rewards.verl_hook.compute_score`` called the way verl's naive reward manager calls it."""

from __future__ import annotations

import json

import pytest

import rewards
from rewards import RewardResult
from rewards.verl_hook import ON_UNSCORED_ENV, UnscoredSampleError, compute_score


class _Down:
    name = "test-verl-down"

    def __call__(self, predictions, samples):
        return [RewardResult(None, {"similarity": 0.0}, "render worker died") for _ in predictions]


rewards.register("test-verl-down", _Down())


def naive_manager_step(rows: list[dict], responses: list[str]) -> tuple[list[float], dict[str, list]]:
    """What verl 0.9.1's naive manager does with each row: call by keyword, split the dict."""
    scores, extra = [], {}
    for row, response in zip(rows, responses, strict=True):
        result = compute_score(data_source=row["data_source"], solution_str=response,
                               ground_truth=row["reward_model"]["ground_truth"], extra_info=row.get("extra_info", {}))
        if isinstance(result, dict):
            scores.append(result["score"])
            for key, value in result.items():
                extra.setdefault(key, []).append(value)
        else:
            scores.append(result)
    return scores, extra


def test_dispatch_on_data_source_with_dict_and_json_ground_truths() -> None:
    rows = [
        {"data_source": "multiple-choice", "reward_model": {"ground_truth": {"answer": "A"}},
         "extra_info": {"index": 0}},
        {"data_source": "multiple-choice", "reward_model": {"ground_truth": json.dumps({"answer": "A"})}},
        {"data_source": "box-iou", "reward_model": {"ground_truth": json.dumps({"bbox": [0, 0, 10, 10]})}},
    ]
    scores, extra = naive_manager_step(rows, ["<answer>A</answer>", "<answer>B</answer>", "[0, 0, 10, 5]"])
    assert scores == [1.0, 0.0, 0.5]
    assert all(len(v) == len(rows) for k, v in extra.items() if k in ("score", "unscored"))
    assert extra["unscored"] == [0.0, 0.0, 0.0]


def test_unknown_data_source_names_close_matches() -> None:
    with pytest.raises(KeyError, match="Did you mean"):
        compute_score("multiple_choise", "A", {"answer": "A"})


def test_unscored_sample_raises_unless_a_fallback_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ON_UNSCORED_ENV, raising=False)
    with pytest.raises(UnscoredSampleError, match="render worker died"):
        compute_score("test-verl-down", "<svg/>", {"image": "x.png"})
    monkeypatch.setenv(ON_UNSCORED_ENV, "-1")
    assert compute_score("test-verl-down", "<svg/>", "{}") == {"score": -1.0, "unscored": 1.0, "similarity": 0.0}


def test_accepts_verl_default_compute_score_keywords() -> None:
    """verl's ``default_compute_score`` passes ``sandbox_fusion_url``/``concurrent_semaphore`` etc."""
    out = compute_score("exact-match", "Paris", "paris", None, sandbox_fusion_url=None, memory_limit_mb=None)
    assert out["score"] == 1.0
