"""The TRL adapter, called through TRL's own ``GRPOTrainer._calculate_rewards`` (trl 1.x)."""

from __future__ import annotations

import pickle
import types

import pytest
import torch

import rewards
from rewards import RewardResult, WeightedSum
from rewards.adapters import as_target, completion_text

trl = pytest.importorskip("trl")
from trl import GRPOTrainer
from trl.trainer.utils import get_callable_name, is_async_callable


class Flaky:
    """Scores 1.0, or ``None`` (an infra failure) for predictions containing "FAIL"."""

    name = "test-flaky"

    def __call__(self, predictions, samples):
        return [RewardResult(None, {}, "render worker died") if "FAIL" in p else RewardResult(1.0, {"ok": 1.0})
                for p in predictions]


def trl_calculate_rewards(funcs, inputs, completions):
    """Run TRL's real ``_calculate_rewards`` with a stand-in trainer carrying only the
    attributes that method reads (device, reward funcs and names, state, loggers)."""
    metrics: dict[str, float] = {}
    trainer = types.SimpleNamespace(
        accelerator=types.SimpleNamespace(device=torch.device("cpu"), is_main_process=True),
        args=types.SimpleNamespace(report_to=[]), state=types.SimpleNamespace(global_step=0),
        reward_funcs=funcs, reward_processing_classes=[None] * len(funcs),
        reward_func_names=[get_callable_name(f) for f in funcs], environments=None,
        _log_completion_extra=lambda column, values: None, _log_metric=metrics.__setitem__,
    )
    prompts = [x["prompt"] for x in inputs]
    out = GRPOTrainer._calculate_rewards(trainer, inputs, prompts, completions, [[0]] * len(inputs))
    return out, metrics, trainer.reward_func_names


def test_trl_calls_the_adapter_with_conversational_completions() -> None:
    func = rewards.to_trl("multiple-choice")
    assert not is_async_callable(func)
    inputs = [{"prompt": [{"role": "user", "content": "Which?"}], "target": {"answer": "B"}, "image": None}] * 3
    completions = [[{"role": "assistant", "content": "<answer>B</answer>"}],
                   [{"role": "assistant", "content": [{"type": "text", "text": "<answer>C</answer>"}]}],
                   [{"role": "assistant", "content": "no letter"}]]
    out, metrics, names = trl_calculate_rewards([func], inputs, completions)
    assert names == ["multiple-choice"]
    assert out[:, 0].tolist() == [1.0, 0.0, 0.0]
    assert metrics["multiple-choice/correct"] == pytest.approx(1 / 3)


def test_none_becomes_nan_in_trl_and_weighted_sum_masks_the_row() -> None:
    flaky = rewards.to_trl(Flaky(), name="flaky")
    combined = rewards.to_trl(WeightedSum([(Flaky(), 1.0), ("format-think-answer", 1.0)]), name="combined")
    inputs = [{"prompt": "p", "target": {}}] * 2
    out, metrics, names = trl_calculate_rewards([flaky, combined], inputs, ["<think/>ok", "FAIL"])
    assert names == ["flaky", "combined"]
    assert out[0, 0] == 1.0 and torch.isnan(out[1]).all()  # row 1: every function NaN -> TRL masks it
    assert metrics["flaky/unscored_frac"] == 0.5


def test_string_json_targets_and_missing_column_message() -> None:
    func = rewards.to_trl("numeric-relaxed", target_column="solution")
    assert func(prompts=["p"], completions=["<answer>101</answer>"], solution=['{"answer": 100}']) == [1.0]
    assert func(prompts=["p"], completions=["99"], solution=["100"]) == [1.0]  # bare answer string
    with pytest.raises(KeyError, match="lacks .*columns: \\['answer'\\]"):
        func(prompts=["p"], completions=["1"], answer=["1"], trainer_state=None)


def test_adapter_pickles_by_name() -> None:
    func = pickle.loads(pickle.dumps(rewards.to_trl("exact-match", name="em")))
    assert func.__name__ == "em"
    assert func(prompts=["p"], completions=["Paris"], target=[{"answer": "paris"}]) == [1.0]


def test_completion_text_and_targets() -> None:
    assert completion_text([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]) == "a"
    with pytest.raises(TypeError, match="list of chat messages"):
        completion_text(3)
    assert as_target('{"bbox": [1, 2, 3, 4]}', "x") == {"bbox": [1, 2, 3, 4]}
    assert as_target(3.5, "x") == {"answer": 3.5}


def test_meta_and_id_columns_reach_the_reward() -> None:
    seen = []

    class Spy:
        name = "test-spy"

        def __call__(self, predictions, samples):
            seen.extend(samples)
            return [RewardResult(1.0) for _ in predictions]

    func = rewards.to_trl(Spy())
    func(prompts=["p"], completions=["c"], target=['{"answer": 1}'], sample_id=["s-1"], meta=['{"split": "train"}'],
         trainer_state=None, log_metric=lambda *a: None)
    assert seen[0].id == "s-1" and seen[0].meta == {"sample_id": "s-1", "split": "train"}
    assert seen[0].target == {"answer": 1}
