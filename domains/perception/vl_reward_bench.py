"""``zoo eval r1-reward-7b --data vl-reward-bench --path data.jsonl --option image_root=DIR``: VL-RewardBench as
R1-Reward's authors run and score it (yfzhang114/r1_reward@3693413, ``inference/VL-Reward-Bench/``).

Data: the release's ``data.jsonl``, one pair per line ``{id, prompt, chosen, rejected, image, chosen_reason,
rejected_reason}`` (1,250 rows), the image a path under the benchmark's image folder (``r1_reward.py:92-97``).
Asking: the judge prompt with the chosen response as Response 1 and the rejected as Response 2 (``r1_reward.py:96``,
``make_conv_rm(prompt, chosen, rejected)``), the ``r1-reward-7b`` entry's template; 4,096 new tokens (L127).
Reading: the ``<answer>`` content, else the last ``1`` or ``2`` of the text; the chosen response wins when that
reads as the number 1, anything else counts for the rejected one (L137-152).
Metrics (``get_acc.py``): each pair falls in ``reasoning`` (id holds ``mmmu`` or ``mathverse``), ``hallucination``
(``hallucination``, ``rlhf`` or ``rlaif``) or ``general``; ``accuracy`` over all pairs and ``macro_accuracy``, the
mean of the three categories' accuracies (an empty category counts 0, as the authors divide by 3).

zoo: get_acc.py slices ``rewards[:1]`` and then compares ``rewards[0] > rewards[1]``, which raises on every row;
the zoo scores the comparison the line means (the pair is right when the chosen response got the higher reward).
zoo: their processor caps images at ``1003520 // 2`` pixels (r1_reward.py:63); the zoo asks at the entry's limit,
1,003,520 (its training's), since an evaluation cannot resize outside the entry's contract.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from domains.perception.prompts import format_r1_reward_question
from zoo.data import Sample, read_records, record_field
from zoo.eval_results import write_results

CATEGORIES = ("reasoning", "hallucination", "general")
#: r1_reward.py:127 (and its --max_new_tokens default, L176).
MAX_NEW_TOKENS = 4096


def category(pair_id: str) -> str:
    """``classify_id`` of get_acc.py:5-11."""
    if "mmmu" in pair_id or "mathverse" in pair_id:
        return "reasoning"
    if "hallucination" in pair_id or "rlhf" in pair_id or "rlaif" in pair_id:
        return "hallucination"
    return "general"


def chosen_wins(text: str) -> bool:
    """Whether r1_reward.py:137-152 gives the chosen response (Response 1) the higher reward for this judgement."""
    found = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
    if found:
        verdict: str | None = found.group(1).strip()
    else:
        digits = re.findall(r"[12]", text)
        verdict = digits[-1] if digits else None
    try:
        return verdict is not None and float(verdict) == 1
    except ValueError:  # upstream's bare except: the rejected response wins
        return False


def load_vl_reward_bench(path: str, image_root: str | None = None, limit: int | None = None) -> list[Sample]:
    """The pairs of R1-Reward's ``data.jsonl`` as judge questions (chosen first); images under ``image_root``
    (default: the file's folder)."""
    file = Path(path)
    root = Path(image_root) if image_root else file.parent
    samples = []
    for i, row in enumerate(read_records(file)[:limit] if limit is not None else read_records(file)):
        where = f"{file.name} row {i}"
        image = root / str(record_field(row, "image", where))
        if not image.is_file():
            raise FileNotFoundError(f"{where}: image {str(image)!r} not found; pass --option image_root= the folder "
                                    "the rows' image paths are relative to")  # fmt: skip
        pair_id = str(record_field(row, "id", where))
        question = format_r1_reward_question(str(record_field(row, "prompt", where)),
                                             str(record_field(row, "chosen", where)),
                                             str(record_field(row, "rejected", where)))  # fmt: skip
        samples.append(Sample(id=pair_id, images=(str(image),), prompt=question, target={"answer": "1"},
                              meta={"category": category(pair_id)}))  # fmt: skip
    return samples


def bench_scores(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """get_acc.py:14-70: per-category samples and accuracy, overall ``accuracy``, ``macro_accuracy``."""
    per = {name: {"samples": 0, "correct": 0} for name in CATEGORIES}
    for row in rows:
        per[row["category"]]["samples"] += 1
        per[row["category"]]["correct"] += int(row["correct"])
    accuracy = {name: (c["correct"] / c["samples"] if c["samples"] else 0.0) for name, c in per.items()}
    total = sum(c["samples"] for c in per.values())
    categories = {name: {"samples": per[name]["samples"], "accuracy": accuracy[name]} for name in CATEGORIES}
    return {"n": total, "accuracy": sum(c["correct"] for c in per.values()) / total if total else 0.0,
            "macro_accuracy": sum(accuracy.values()) / len(CATEGORIES), "categories": categories}  # fmt: skip


def run_vl_reward_bench(pipe: Any, path: str | None, out_dir: str | Path, limit: int | None, batch_size: int,
                        image_root: str | None) -> dict[str, Any]:  # fmt: skip
    """Judge every pair with ``pipe``, score as get_acc.py, write ``metrics.json`` and ``predictions.jsonl``."""
    if path is None:
        raise ValueError("--data vl-reward-bench needs --path pointing at R1-Reward's "
                         "inference/VL-Reward-Bench/data.jsonl")
    samples = load_vl_reward_bench(path, image_root, limit)
    rows = []
    for start in range(0, len(samples), batch_size):
        batch = samples[start : start + batch_size]
        predictions = pipe([s.images[0] for s in batch], [s.question for s in batch], max_new_tokens=MAX_NEW_TOKENS)
        rows += [{"id": s.id, "category": s.meta["category"], "correct": chosen_wins(p.text), "text": p.text}
                 for s, p in zip(batch, predictions, strict=True)]  # fmt: skip
    metrics = {"model": pipe.entry.name, "data": "vl-reward-bench", **bench_scores(rows)}
    write_results(out_dir, metrics, rows)
    return metrics
