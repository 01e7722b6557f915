"""Perception evaluation: REC accuracy at IoU > 0.5 (VLM-R1) and OVDEval's NMS-AP (open-vocabulary detection).

VLM-R1 ``src/eval/test_rec_r1.py``: the box in ``<answer>`` is mapped from the model's input frame
to the original image, compared with the ground truth by the pixel-convention IoU
(:func:`~domains.perception.boxes.pixel_iou`), and counted correct when the IoU exceeds 0.5; an
answer without a box counts as ``[0, 0, 0, 0]`` (wrong). For an entry that answers in VLM-R1's REC
format (parser :func:`~domains.perception.prompts.parse_rec`) the box is read as VLM-R1 reads it,
:func:`vlm_r1_eval_box` (integers inside braces, the last such box), so the accuracy is comparable
with the paper's; other entries are scored on their own parser's box (``metrics["box_reader"]`` says
which). The frame the model saw comes from the pipeline (``image_grid_thw``), as upstream's.
Not reproduced: upstream's 2,000-sample subset shuffled with seed 42 and its 256 new tokens
(test_rec_r1.py:101-109, 162); ``--limit`` and the entry's token budget apply instead.

``zoo eval NAME --data refcoco|lisa-grounding --path FILE`` (VLM-R1's ``rec_jsons_processed`` files,
images next to them or in the file's folder) or ``--data synthetic-rec`` (generated, held-out seed)
calls :func:`run`, which writes ``metrics.json`` and ``predictions.jsonl``.

``zoo eval vlm-r1-ovd-3b --data ovdeval --path annotations/material.json`` (om-ai-lab/OVDEval's files;
images from ``images/material/``, or ``--option image_root=DIR``) asks each image for its positive and
hard-negative labels, turns the answer's ``objects`` (original pixels) into COCO results (the label's
category id; score 1.0, since VLM-R1's answers carry none: the zoo's choice, as VLM-R1's own mAP
reward scores every box 1.0; a label outside the file's categories is dropped and counted) and scores
them as OVDEval's ``eval.py`` does (:func:`domains.perception.ovd.ovdeval_scores`): NMS against the
ground truth, then COCO AP over the evaluated images.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from domains.perception.boxes import pixel_iou
from domains.perception.prompts import parse_rec
from rewards.parsing import extract_tag
from zoo.data import Sample
from zoo.eval_results import write_results
from zoo_common.coords import to_original

#: Held-out seed of the synthetic REC set (the smoke recipes train on seeds 0-1).
SYNTHETIC_SEED = 2024
BENCHMARKS = ("refcoco", "lisa-grounding", "synthetic-rec", "ovdeval", "lisa-visual-rft", "vl-reward-bench",
              "vision-r1-coco", "vision-r1-odinw")
#: om-ai-lab/VLM-R1@90052f4:src/eval/test_rec_r1.py:70-71 (``extract_bbox_answer``).
_REC_BOX = re.compile(r"\{.*\[(\d+),\s*(\d+),\s*(\d+),\s*(\d+)]\s*.*\}", re.DOTALL)


def vlm_r1_eval_box(text: str) -> list[int] | None:
    """The box VLM-R1's REC evaluation reads (test_rec_r1.py:68-79), ``None`` where it falls back to
    ``[0, 0, 0, 0]``: the first ``<answer>``, then four integers in brackets inside braces; with several
    boxes the greedy pattern takes the last; a bare list or a decimal box is no box."""
    answer = extract_tag(text, "answer", required=False)
    found = _REC_BOX.search(answer) if answer is not None else None
    return [int(v) for v in found.groups()] if found else None


def load_eval_data(data: str, path: str | None = None, limit: int | None = None, image_root: str | None = None,
                   ) -> list[Sample]:  # fmt: skip
    """Samples of benchmark ``data``: raw questions, as every loader yields them (the evaluated entry's pipeline
    wraps them in its own template, as it does for any caller)."""
    from domains.perception.data import load_ovdeval, load_refcoco, load_synthetic

    if data == "synthetic-rec":
        if path is not None:
            raise ValueError("--data synthetic-rec is generated; drop --path")
        return load_synthetic(n=limit or 100, seed=SYNTHETIC_SEED, task="rec")
    if data in ("refcoco", "lisa-grounding"):
        if path is None:
            raise ValueError(f"--data {data} needs --path pointing at VLM-R1's annotation file (e.g. refcoco_val.json)")
        return load_refcoco(path, image_root=image_root, limit=limit)
    if data == "ovdeval":
        if path is None:
            raise ValueError("--data ovdeval needs --path pointing at one of OVDEval's annotation files "
                             "(e.g. annotations/material.json)")  # fmt: skip
        return load_ovdeval(path, image_root=image_root, limit=limit)
    raise ValueError(f"unknown perception benchmark {data!r}; choose one of {', '.join(BENCHMARKS)}")


def score_rows(samples: Sequence[Sample], predictions: Sequence[Any], vlm_r1_frame: str | None = None,
               ) -> list[dict[str, Any]]:  # fmt: skip
    """One row per sample: the predicted box (original pixels), its IoU and whether it is correct.

    ``vlm_r1_frame`` (the entry's coordinate frame) re-reads each box from the text with
    :func:`vlm_r1_eval_box` and maps it from the frame the model saw; ``None`` takes the pipeline's box.
    """
    rows = []
    for sample, pred in zip(samples, predictions, strict=True):
        if vlm_r1_frame is None:
            found = list(pred.bbox) if pred.bbox is not None else None
        else:
            found = vlm_r1_eval_box(pred.text)
            if found is not None:
                found = to_original(found, vlm_r1_frame, sample.target["image_size"], pred.extra["model_frame_size"])
        box = found if found is not None else [0.0, 0.0, 0.0, 0.0]
        truth = sample.target["bbox"]
        try:
            overlap = pixel_iou(box, truth)
        except ZeroDivisionError:  # two empty boxes
            overlap = 0.0
        rows.append({"id": sample.id, "bbox": box, "truth": truth, "iou": overlap, "correct": overlap > 0.5,
                     "no_box": found is None, "parse_error": pred.parse_error, "text": pred.text})  # fmt: skip
    return rows


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy in percent (VLM-R1's number), mean IoU and the share of answers without a box."""
    n = max(len(rows), 1)
    return {
        "n": len(rows),
        "accuracy": 100.0 * sum(r["correct"] for r in rows) / n,
        "mean_iou": sum(r["iou"] for r in rows) / n,
        "no_box": sum(r["no_box"] for r in rows) / n,
    }


def detection_rows(samples: Sequence[Sample], predictions: Sequence[Any], categories: Sequence[dict[str, Any]],
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:  # fmt: skip
    """``(rows, detections)``: one row per image, and the COCO results of every predicted object."""
    ids = {c["name"]: c["id"] for c in categories}
    rows, detections = [], []
    for sample, pred in zip(samples, predictions, strict=True):
        objects = pred.objects or []
        mine = [{"image_id": sample.meta["image_id"], "category_id": ids[o.get("label")], "score": 1.0,
                 "bbox": [o["bbox"][0], o["bbox"][1], o["bbox"][2] - o["bbox"][0], o["bbox"][3] - o["bbox"][1]]}
                for o in objects if o.get("label") in ids]  # fmt: skip
        detections += mine
        rows.append({"id": sample.id, "image_id": sample.meta["image_id"], "objects": objects,
                     "detections": len(mine), "unknown_labels": len(objects) - len(mine),
                     "parse_error": pred.parse_error, "text": pred.text})  # fmt: skip
    return rows, detections


def _predict(pipe: Any, samples: Sequence[Sample], desc: str, batch_size: int) -> list[Any]:
    predictions = []
    for start in tqdm(range(0, len(samples), batch_size), desc=desc, disable=None):
        batch = samples[start : start + batch_size]
        predictions += pipe([s.images[0] for s in batch], [s.question for s in batch])
    return predictions


def run(pipe: Any, data: str, path: str | None, out_dir: str | Path, limit: int | None = None, batch_size: int = 16,
        image_root: str | None = None, segmenter: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Evaluate ``pipe`` on ``data``; writes ``metrics.json`` and ``predictions.jsonl`` into ``out_dir``.

    ``lisa-visual-rft`` (:mod:`~domains.perception.lisa_eval`; ``segmenter`` names the SAM checkpoint of its mask
    IoU), ``vl-reward-bench`` (:mod:`~domains.perception.vl_reward_bench`) and ``vision-r1-coco`` / ``vision-r1-odinw``
    (:mod:`~domains.perception.vision_r1_eval`) are scored in their own modules."""
    if data == "lisa-visual-rft":
        from domains.perception.lisa_eval import run_lisa

        return run_lisa(pipe, path, out_dir, limit, batch_size, segmenter)
    if data == "vl-reward-bench":
        from domains.perception.vl_reward_bench import run_vl_reward_bench

        return run_vl_reward_bench(pipe, path, out_dir, limit, batch_size, image_root)
    if data.partition(":")[0] in ("vision-r1-coco", "vision-r1-odinw"):
        from domains.perception.vision_r1_eval import run_vision_r1

        return run_vision_r1(pipe, data, path, out_dir, limit, batch_size, image_root)
    samples = load_eval_data(data, path, limit, image_root)
    predictions = _predict(pipe, samples, f"eval {data}", batch_size)
    if data == "ovdeval":
        from domains.perception.ovd import ovdeval_scores

        dataset = json.loads(Path(path).read_text(encoding="utf-8"))
        rows, detections = detection_rows(samples, predictions, dataset["categories"])
        scores = ovdeval_scores(dataset, detections, image_ids=[s.meta["image_id"] for s in samples])
        n = max(len(rows), 1)
        metrics = {"model": pipe.entry.name, "data": data, "subset": Path(path).stem, "n": len(rows), **scores,
                   "unknown_labels": sum(r["unknown_labels"] for r in rows),
                   "parse_errors": sum(r["parse_error"] is not None for r in rows) / n}  # fmt: skip
    else:
        spec = pipe.entry.spec
        strict = spec.parser is parse_rec
        rows = score_rows(samples, predictions, spec.coord_frame if strict else None)
        metrics = {"model": pipe.entry.name, "data": data, **summarise(rows),
                   "box_reader": "vlm-r1 test_rec_r1.py extract_bbox_answer" if strict else "entry parser"}  # fmt: skip
    write_results(out_dir, metrics, rows)
    return metrics
