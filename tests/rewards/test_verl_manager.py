"""``rewards.verl_hook.compute_score`` inside verl's own ``NaiveRewardManager`` (verl 0.9.1).

Skipped where verl is not installed (CI never installs it: it pins transformers < 5.11).
Run it with a verl environment, e.g. ``PYTHONPATH=. /path/to/verl-venv/bin/python -m pytest
tests/rewards/test_verl_manager.py -p no:cacheprovider``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

verl = pytest.importorskip("verl")
from verl import DataProto
from verl.workers.reward_manager.naive import NaiveRewardManager

from rewards.verl_hook import compute_score

pytestmark = pytest.mark.verl


class ByteTokenizer:
    """Decodes byte ids, which is all the naive manager asks of a tokenizer."""

    @staticmethod
    def encode(text: str) -> list[int]:
        return list(text.encode())

    @staticmethod
    def decode(ids, skip_special_tokens: bool = True) -> str:
        return bytes(int(i) for i in ids if int(i) != 0).decode()


def batch(responses: list[str], rows: list[dict]) -> DataProto:
    """Left-padded prompts and right-padded responses, as verl's rollout produces them."""
    tok = ByteTokenizer()
    prompt_len = 4
    resp_len = max(len(tok.encode(r)) for r in responses)
    prompts = torch.zeros(len(responses), prompt_len, dtype=torch.long)
    resp = torch.zeros(len(responses), resp_len, dtype=torch.long)
    mask = torch.zeros(len(responses), prompt_len + resp_len, dtype=torch.long)
    for i, text in enumerate(responses):
        ids = tok.encode(text)
        prompts[i] = torch.tensor(tok.encode("why?"))
        resp[i, : len(ids)] = torch.tensor(ids)
        mask[i, : prompt_len + len(ids)] = 1
    non_tensors = {
        "data_source": np.array([r["data_source"] for r in rows], dtype=object),
        "reward_model": np.array([{"ground_truth": r["ground_truth"], "style": "rule"} for r in rows], dtype=object),
        "extra_info": np.array([{"index": i} for i in range(len(rows))], dtype=object),
    }
    return DataProto.from_dict(tensors={"prompts": prompts, "responses": resp, "attention_mask": mask},
                               non_tensors=non_tensors)


def test_naive_reward_manager_scores_with_the_registered_rewards() -> None:
    rows = [{"data_source": "multiple-choice", "ground_truth": json.dumps({"answer": "B"})},
            {"data_source": "multiple-choice", "ground_truth": json.dumps({"answer": "B"})},
            {"data_source": "numeric-relaxed", "ground_truth": "100"}]
    responses = ["<answer>B</answer>", "<answer>C</answer>", "<answer>about 103 km</answer>"]
    manager = NaiveRewardManager(tokenizer=ByteTokenizer(), num_examine=0, compute_score=compute_score)
    out = manager(batch(responses, rows), return_dict=True)
    lengths = [len(r.encode()) for r in responses]
    scores = [out["reward_tensor"][i, n - 1].item() for i, n in enumerate(lengths)]
    assert scores == [1.0, 0.0, 1.0]
    assert out["reward_tensor"].sum().item() == 2.0  # the score sits on the last response token only
    assert out["reward_extra_info"]["unscored"] == [0.0, 0.0, 0.0]
