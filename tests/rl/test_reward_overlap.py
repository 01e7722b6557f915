"""algorithm.reward_chunks: chunks of whole groups are scored on a thread while the next generates,
and the trainer sees the reward matrix one call after generation would have given."""

from __future__ import annotations

import threading
from typing import ClassVar

import torch

from rewards.base import REWARDS, RewardResult, register
from tests.rl.test_trainer import first_batch, recipe_for
from zoo.engines.vlm.overlap import merge_generations, row_chunks
from zoo.engines.vlm.trl_engine import build_trainer


class RecordsCalls:
    """Vowel rate, recording the size and thread of every call."""

    name = "test-records-calls"
    calls: ClassVar[list[tuple[int, str]]] = []

    def __call__(self, predictions, samples):
        self.calls.append((len(predictions), threading.current_thread().name))
        return [RewardResult(sum(c in "aeiou" for c in p) / max(1, len(p))) for p in predictions]


if RecordsCalls.name not in REWARDS:
    register(RecordsCalls.name, RecordsCalls())


def test_row_chunks_keep_groups_whole() -> None:
    assert row_chunks(8, 2, 4) == [slice(0, 4), slice(4, 8)]
    assert row_chunks(12, 2, 4) == [slice(0, 8), slice(8, 12)]
    assert row_chunks(8, 5, 4) == [slice(0, 4), slice(4, 8)]  # never more chunks than groups
    assert row_chunks(8, 1, 4) == [slice(0, 8)]


def test_merge_generations_joins_rows_in_order() -> None:
    a = ([[1]], [[2]], None, ["x"], None, {"k": [1]}, None, [[]])
    b = ([[3]], [[4]], None, ["y"], None, {"k": [2]}, None, [[]])
    assert merge_generations([a, b]) == ([[1], [3]], [[2], [4]], None, ["x", "y"], None, {"k": [1, 2]}, None, [[], []])


def test_chunked_scoring_matches_the_completions_it_returns(tmp_path) -> None:
    RecordsCalls.calls.clear()
    trainer = build_trainer(recipe_for(tmp_path, "algorithm.reward_chunks=2", reward=RecordsCalls.name), tmp_path)
    batch = first_batch(trainer)
    torch.manual_seed(0)
    output = trainer._generate_and_score_completions(batch)
    assert [n for n, _ in RecordsCalls.calls] == [4, 4]  # two chunks of one group of 4 each
    assert all(name.startswith("reward-overlap") for _, name in RecordsCalls.calls)
    texts = trainer.processing_class.batch_decode(output["completion_ids"] * output["completion_mask"],
                                                  skip_special_tokens=True)
    expected = [sum(c in "aeiou" for c in t) / max(1, len(t)) for t in texts]
    assert torch.allclose(trainer._rewards_per_func[:, 0], torch.tensor(expected), atol=1e-6)
    assert output["advantages"].shape == (8,)
