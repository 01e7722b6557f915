"""``zoo eval visual-rft-lisa-7b --data lisa-visual-rft --path LISA/data/test``: Visual-RFT's LISA evaluation.

The data is LISA's own folder (dvlab-research/LISA ``data/{val,test}``: one ``NAME.json`` per ``NAME.jpg``, its
``text`` the instructions and ``shapes[0].points`` the target's polygon), read as Visual-RFT reads it
(Liuziyu77/Visual-RFT@9486633): the first instruction and the first shape's bounding box
(``lisa_evaluation/gen_box_ann.py:15-34``, ``Qwen2_VL_lisa_infere.py:104-105``), the polygon for the masks
(``mask_iou.py:43-47``; a file without shapes is skipped there and here, as is one without its image).

Metrics (:mod:`domains.perception.lisa`): ``box_miou``, the mean box IoU of ``merge_eval.py`` (an answer without a
box counts 0); with ``--option segmenter=facebook/sam-vit-huge`` (or a local SAM folder) also the mask ``giou`` and
``ciou`` of ``mask_iou.py``, each predicted box turned into a mask by SAM with one box prompt and one output mask, as
``box2mask.py:53-67`` (``multimask_output=False``) does. The answers come at the evaluated entry's budget
(``visual-rft-lisa-7b``: the authors' 128 new tokens, ``Qwen2_VL_lisa_infere.py:115``).

zoo: the authors run ``segment_anything``'s ``SamPredictor`` on ``sam_vit_h_4b8939.pth``; the zoo runs transformers'
``SamModel`` (safetensors), which the Hub card of ``facebook/sam-vit-huge`` calls a conversion of the same ViT-H
weights (UNVERIFIED here). zoo: an answer without a box gets an empty mask (IoU 0, what ``mask_iou.py:66`` warns of;
its code would reuse the previous image's mask size).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from domains.perception.lisa import box_iou, lisa_eval_box, mask_overlap, mask_scores, polygon_mask
from zoo.data import Sample
from zoo.eval_results import write_results

BoxToMask = Callable[[Image.Image, Sequence[int]], np.ndarray]


def load_lisa_folder(path: str, limit: int | None = None) -> list[Sample]:
    """LISA's annotation folder as evaluation samples: the bare instruction, the box and polygon in pixels."""
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"--path {path!r} is not a folder; pass LISA's data/test (or data/val) folder of "
                                "NAME.json + NAME.jpg pairs")  # fmt: skip
    samples = []
    for file in sorted(folder.glob("*.json")):
        image = file.with_suffix(".jpg")
        record = json.loads(file.read_text(encoding="utf-8"))
        shapes, texts = record.get("shapes") or [], record.get("text") or []
        if not image.is_file() or not shapes or not texts:
            continue
        points = [[float(x), float(y)] for x, y in shapes[0]["points"]]
        with Image.open(image) as img:
            size = [img.width, img.height]
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        samples.append(Sample(
            id=file.stem, images=(str(image),), prompt=str(texts[0] if isinstance(texts, list) else texts),
            target={"bbox": [min(xs), min(ys), max(xs), max(ys)], "polygon": points, "image_size": size},
        ))  # fmt: skip
        if limit is not None and len(samples) >= limit:
            break
    if not samples:
        raise ValueError(f"{path}: no NAME.json with shapes and text beside a NAME.jpg; is this LISA's data/test?")
    return samples


def sam_segmenter(name: str, device: str = "cpu") -> BoxToMask:
    """A box-to-mask function from a SAM checkpoint (a Hub id or a local folder) through transformers' ``SamModel``:
    one box prompt, one mask (``multimask_output=False``), thresholded and resized to the image as SAM does."""
    import torch
    from transformers import SamModel, SamProcessor

    local = Path(name)
    path = str(local) if local.is_dir() else _hub_path(name)
    model = SamModel.from_pretrained(path, use_safetensors=True).to(device).eval()
    processor = SamProcessor.from_pretrained(path)

    @torch.inference_mode()
    def box_to_mask(image: Image.Image, box: Sequence[int]) -> np.ndarray:
        inputs = processor(image, input_boxes=[[list(box)]], return_tensors="pt").to(device)
        out = model(**inputs, multimask_output=False)
        masks = processor.image_processor.post_process_masks(
            out.pred_masks.cpu(), inputs["original_sizes"].cpu(), inputs["reshaped_input_sizes"].cpu())
        return masks[0][0, 0].numpy().astype(np.uint8)

    return box_to_mask


def _hub_path(repo_id: str) -> str:
    from zoo.hub import resolve_repo

    return str(resolve_repo(repo_id).path)


def score_lisa(samples: Sequence[Sample], texts: Sequence[str], box_to_mask: BoxToMask | None = None,
               ) -> tuple[dict[str, Any], list[dict[str, Any]]]:  # fmt: skip
    """``(metrics, rows)``: the box mIoU, and the mask gIoU / cIoU when ``box_to_mask`` is given."""
    rows, overlaps = [], []
    for sample, text in zip(samples, texts, strict=True):
        width, height = sample.target["image_size"]
        truth = [v / s for v, s in zip(sample.target["bbox"], (width, height, width, height))]
        box = lisa_eval_box(text)
        row: dict[str, Any] = {"id": sample.id, "pred_bbox": box, "box_iou": box_iou(box, truth) if box else 0.0,
                               "text": text}  # fmt: skip
        if box_to_mask is not None:
            truth_mask = polygon_mask(sample.target["polygon"], width, height)
            if box is None:
                predicted = np.zeros_like(truth_mask)
            else:  # box2mask.py:21-23: the fractions scaled to pixels and truncated
                with Image.open(sample.images[0]) as img:
                    pixels = [int(box[0] * width), int(box[1] * height), int(box[2] * width), int(box[3] * height)]
                    predicted = box_to_mask(img.convert("RGB"), pixels)
            inter, union, iou = mask_overlap(predicted, truth_mask)
            overlaps.append((inter, union, iou))
            row["mask_iou"] = iou
        rows.append(row)
    metrics: dict[str, Any] = {"n": len(rows), "box_miou": sum(r["box_iou"] for r in rows) / max(len(rows), 1),
                               "no_box": sum(r["pred_bbox"] is None for r in rows) / max(len(rows), 1)}  # fmt: skip
    if box_to_mask is not None:
        metrics.update(mask_scores(overlaps))
    return metrics, rows


def run_lisa(pipe: Any, path: str | None, out_dir: str | Path, limit: int | None, batch_size: int,
             segmenter: str | None) -> dict[str, Any]:  # fmt: skip
    """Ask ``pipe`` every LISA instruction, score the answers as Visual-RFT does, write the results."""
    if path is None:
        raise ValueError("--data lisa-visual-rft needs --path pointing at LISA's data/test (or data/val) folder")
    samples = load_lisa_folder(path, limit)
    texts: list[str] = []
    for start in range(0, len(samples), batch_size):
        batch = samples[start : start + batch_size]
        predictions = pipe([s.images[0] for s in batch], [s.question for s in batch])
        texts += [p.text for p in predictions]
    metrics, rows = score_lisa(samples, texts, sam_segmenter(segmenter) if segmenter else None)
    metrics = {"model": pipe.entry.name, "data": "lisa-visual-rft", "subset": Path(path).name,
               "segmenter": segmenter, **metrics}  # fmt: skip
    write_results(out_dir, metrics, rows)
    return metrics
