"""Referring-expression grounding evaluation as VLM-R1 reports it: accuracy at IoU > 0.5.

VLM-R1 ``src/eval/test_rec_r1.py``: the box in ``<answer>`` is mapped from the model's input frame
to the original image, compared with the ground truth by the pixel-convention IoU
(:func:`~domains.perception.boxes.pixel_iou`), and counted correct when the IoU exceeds 0.5; an
answer without a box counts as ``[0, 0, 0, 0]`` (wrong). The pipeline already returns boxes in
original pixels, so the mapping is the pipeline's.

``zoo eval NAME --data refcoco|lisa-grounding --path FILE`` (VLM-R1's ``rec_jsons_processed`` files,
images next to them or in the file's folder) or ``--data synthetic-rec`` (generated, held-out seed)
calls :func:`run`, which writes ``metrics.json`` and ``predictions.jsonl``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from domains.perception.boxes import pixel_iou
from zoo.data import Sample
from zoo.eval_results import write_results

#: Held-out seed of the synthetic REC set (the smoke recipes train on seeds 0-1).
SYNTHETIC_SEED = 2024
BENCHMARKS = ("refcoco", "lisa-grounding", "synthetic-rec")


def load_eval_data(data: str, path: str | None = None, limit: int | None = None) -> list[Sample]:
    """Samples of benchmark ``data`` with bare expressions (the pipeline adds its entry's template)."""
    from domains.perception.data import load_refcoco, load_synthetic

    if data == "synthetic-rec":
        if path is not None:
            raise ValueError("--data synthetic-rec is generated; drop --path")
        return load_synthetic(n=limit or 100, seed=SYNTHETIC_SEED, task="rec", template=False)
    if data in ("refcoco", "lisa-grounding"):
        if path is None:
            raise ValueError(f"--data {data} needs --path pointing at VLM-R1's annotation file (e.g. refcoco_val.json)")
        return load_refcoco(path, limit=limit, template=False)
    raise ValueError(f"unknown perception benchmark {data!r}; choose one of {', '.join(BENCHMARKS)}")


def score_rows(samples: Sequence[Sample], predictions: Sequence[Any]) -> list[dict[str, Any]]:
    """One row per sample: the predicted box (original pixels), its IoU and whether it is correct."""
    rows = []
    for sample, pred in zip(samples, predictions, strict=True):
        box = list(pred.bbox) if pred.bbox is not None else [0.0, 0.0, 0.0, 0.0]
        truth = sample.target["bbox"]
        try:
            overlap = pixel_iou(box, truth)
        except ZeroDivisionError:  # two empty boxes
            overlap = 0.0
        rows.append({"id": sample.id, "bbox": box, "truth": truth, "iou": overlap, "correct": overlap > 0.5,
                     "parse_error": pred.parse_error, "text": pred.text})  # fmt: skip
    return rows


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy in percent (VLM-R1's number), mean IoU and the share of answers without a box."""
    n = max(len(rows), 1)
    return {
        "n": len(rows),
        "accuracy": 100.0 * sum(r["correct"] for r in rows) / n,
        "mean_iou": sum(r["iou"] for r in rows) / n,
        "no_box": sum(r["parse_error"] is not None for r in rows) / n,
    }


def run(pipe: Any, data: str, path: str | None, out_dir: str | Path, limit: int | None = None,
        batch_size: int = 16) -> dict[str, Any]:  # fmt: skip
    """Evaluate ``pipe`` on ``data``; writes ``metrics.json`` and ``predictions.jsonl`` into ``out_dir``."""
    samples = load_eval_data(data, path, limit)
    predictions = []
    for start in tqdm(range(0, len(samples), batch_size), desc=f"eval {data}", disable=None):
        batch = samples[start : start + batch_size]
        predictions += pipe([s.images[0] for s in batch], [s.question for s in batch])
    rows = score_rows(samples, predictions)
    metrics = {"model": pipe.entry.name, "data": data, **summarise(rows)}
    write_results(out_dir, metrics, rows)
    return metrics
