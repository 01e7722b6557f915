"""VL-RewardBench as R1-Reward's authors score it, against a transcription of their code, on hand-written rows.

``_upstream_*`` transcribe yfzhang114/r1_reward@3693413 ``inference/VL-Reward-Bench/r1_reward.py:137-152`` (the
verdict) and ``get_acc.py:5-70`` (the metrics; its ``rewards[:1]`` slice, which raises on every row, read as the
comparison of both rewards it makes on the next line).
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from PIL import Image

from domains.perception.evaluate import run
from domains.perception.prompts import format_r1_reward_question
from domains.perception.vl_reward_bench import bench_scores, category, chosen_wins, load_vl_reward_bench


def _upstream_rewards(critic):  # r1_reward.py:137-152
    try:
        content_match = re.search(r"<answer>(.*?)</answer>", critic, re.DOTALL)
        if content_match:
            student_answer = content_match.group(1).strip()
        else:
            last_match = re.findall(r"[12]", critic)
            student_answer = last_match[-1] if last_match else None
        if student_answer is not None and float(student_answer) == 1:
            return [1, 0]
        return [0, 1]
    except Exception:  # noqa: BLE001 - upstream's bare except
        return [0, 1]


def _upstream_classify(data_id):  # get_acc.py:5-11
    if "mmmu" in data_id or "mathverse" in data_id:
        return "reasoning"
    elif "hallucination" in data_id or "rlhf" in data_id or "rlaif" in data_id:
        return "hallucination"
    return "general"


def _upstream_scores(rows):  # get_acc.py:14-70
    stats = {"reasoning": {"count": 0, "correct": 0}, "hallucination": {"count": 0, "correct": 0},
             "general": {"count": 0, "correct": 0}}  # fmt: skip
    for row in rows:
        cat = _upstream_classify(row["id"])
        stats[cat]["count"] += 1
        rewards = row["rewards"]
        if rewards[0] > rewards[1]:
            stats[cat]["correct"] += 1
    results = {c: (v["correct"] / v["count"] if v["count"] > 0 else 0) for c, v in stats.items()}
    total = sum(v["count"] for v in stats.values())
    average = sum(v["correct"] for v in stats.values()) / total if total > 0 else 0
    return results, average, sum(results.values()) / 3


CRITICS = [
    "<think>Response 1 is grounded.</think><answer>1</answer>",
    "<think>Response 2 is better.</think><answer>2</answer>",
    "<think>no tags at the end</think> so I pick 2, then 1",  # no <answer>: the last 1 or 2
    "<think>x</think><answer> 1 </answer>",
    "<think>x</think><answer>Response 1</answer>",  # not a number: the rejected one wins
    "<answer>\n1\n</answer>",  # DOTALL
    "nothing to read",
    "<answer>1.0</answer>",
]
IDS = ["hallucination_pair-1", "RLAIF-V-2", "RLHF-V-3", "mathverse_4", "mmmu_pro_test_Art_5", "wildvision-battle-6",
       "svit-complex_reasoning-7", "LRVInstruction-8"]  # fmt: skip


def test_verdict_and_category_match_the_authors():
    for critic in CRITICS:
        assert chosen_wins(critic) == (_upstream_rewards(critic) == [1, 0]), critic
    for pair_id in IDS:
        assert category(pair_id) == _upstream_classify(pair_id)


def test_scores_match_get_acc_overall_and_macro():
    rows = [{"id": i, "category": category(i), "correct": chosen_wins(c), "rewards": _upstream_rewards(c)}
            for i, c in zip(IDS, CRITICS, strict=True)]  # fmt: skip
    per, overall, macro = _upstream_scores(rows)
    mine = bench_scores(rows)
    assert mine["accuracy"] == pytest.approx(overall) and mine["macro_accuracy"] == pytest.approx(macro)
    assert {name: c["accuracy"] for name, c in mine["categories"].items()} == pytest.approx(per)
    only_general = bench_scores([{"category": "general", "correct": True}])  # empty categories count 0 in the macro
    assert only_general["accuracy"] == 1.0 and only_general["macro_accuracy"] == pytest.approx(1 / 3)


def _bench(tmp_path):
    (tmp_path / "vl_reward" / "img").mkdir(parents=True)
    for k in range(2):
        Image.new("RGB", (32, 24), "white").save(tmp_path / "vl_reward" / "img" / f"image_{k}.jpg")
    rows = [{"id": "hallucination_pair-1003", "prompt": "Describe this image in detail.", "chosen": "A white square.",
             "rejected": "A red circle.", "image": "vl_reward/img/image_0.jpg", "chosen_reason": "", "rejected_reason": ""},
            {"id": "mathverse_2279", "prompt": "What is x?", "chosen": "x = 2", "rejected": "x = 3",
             "image": "vl_reward/img/image_1.jpg", "chosen_reason": "", "rejected_reason": ""}]  # fmt: skip
    (tmp_path / "data.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    return tmp_path / "data.jsonl"


def test_loader_asks_chosen_first_and_run_writes_the_metrics(tmp_path):
    path = _bench(tmp_path)
    samples = load_vl_reward_bench(str(path))
    assert samples[0].prompt == format_r1_reward_question("Describe this image in detail.", "A white square.", "A red circle.")
    assert samples[1].meta["category"] == "reasoning" and samples[0].images[0].endswith("image_0.jpg")

    class Judge:  # answers "1" to the first pair and "2" to the second; records the budget it was asked with
        entry = SimpleNamespace(name="r1-reward-7b")

        def __call__(self, images, questions, **generation):
            self.generation = generation
            return [SimpleNamespace(text=f"<think>t</think><answer>{1 if 'white' in q else 2}</answer>") for q in questions]

    judge = Judge()
    metrics = run(judge, "vl-reward-bench", str(path), tmp_path / "out")
    assert judge.generation == {"max_new_tokens": 4096}  # r1_reward.py:127
    assert metrics["accuracy"] == 0.5 and metrics["categories"]["hallucination"]["accuracy"] == 1.0
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["macro_accuracy"] == pytest.approx(1 / 3)
    with pytest.raises(FileNotFoundError, match="image_root"):
        load_vl_reward_bench(str(path), image_root=str(tmp_path / "elsewhere"))
    with pytest.raises(ValueError, match="needs --path"):
        run(judge, "vl-reward-bench", None, tmp_path / "out")
