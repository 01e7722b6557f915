"""Loaders for the grounding and detection formats the perception papers train and test on.

Every sample's boxes are ``[x1, y1, x2, y2]`` in **original image pixels** and ``image_size`` is
``[width, height]``; each format's own convention is converted here and named:

==========================  ======================================================  ====================
format                      records                                                 box in the file
==========================  ======================================================  ====================
RefCOCO/+/g, LISA (VLM-R1)  JSON list ``{image, problem, solution}`` (eval files)   ``solution`` x1y1x2y2
                            or JSON lines ``{image, conversations: [human, gpt]}``  gpt value x1y1x2y2
OVDEval                     COCO json; ``images[*].text`` / ``neg_text`` labels     ``bbox`` x, y, w, h
LISA (Visual-RFT)           JSON list ``{conversations: [user, assistant]}``,       ``(x1,y1),(x2,y2)``
                            image as ``<img>path</img>`` in the user turn           on a 0-1000 scale
==========================  ======================================================  ====================

Sources: om-ai-lab/VLM-R1 ``src/eval/test_rec_r1.py`` (reads ``image``, ``problem``, ``solution``)
and ``src/open-r1-multimodal/src/open_r1/grpo_jsonl.py`` (``conversations[0]`` is the question with
``<image>``, ``conversations[1]`` the answer); om-ai-lab/OVDEval ``Evaluation.md`` (COCO json whose
``images`` carry positive ``text`` and hard-negative ``neg_text`` labels); Liuziyu77/Visual-RFT
``src/virft/src/open_r1/grpo_lisa.py`` (``<img>`` path in the user value, boxes divided by 1000).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from PIL import Image

from domains.perception.prompts import VISUAL_RFT_LISA_USER, VLM_R1_OVD_PROBLEM, VLM_R1_OVD_USER, VLM_R1_REC_USER
from zoo.data import Sample, read_records, record_field


def _xyxy(value: Any, where: str) -> list[float]:
    if not isinstance(value, (list, tuple)) or len(value) != 4:
        raise ValueError(f"{where}: a box must be 4 numbers, got {value!r}")
    box = [float(v) for v in value]
    if box[2] < box[0] or box[3] < box[1]:
        raise ValueError(f"{where}: box {value!r} read as x1, y1, x2, y2 has negative width or height")
    return box


def _image(root: Path, name: str, where: str) -> tuple[str, list[int]]:
    path = root / name
    if not path.is_file():
        raise FileNotFoundError(f"{where}: image {str(path)!r} not found; pass image_root= the folder holding it")
    with Image.open(path) as img:
        return str(path), [img.width, img.height]


def _limit(records: list[Any], limit: int | None) -> list[Any]:
    return records if limit is None else records[:limit]


def load_refcoco(path: str, image_root: str | None = None, limit: int | None = None, template: bool = True,
                 ) -> list[Sample]:  # fmt: skip
    """RefCOCO/+/g or LISA-grounding in VLM-R1's files: one referring expression -> one box.

    ``template`` wraps the expression in VLM-R1's REC prompt (training and the authors' eval);
    ``False`` keeps the bare expression (a pipeline adds its entry's own template).
    """
    file = Path(path)
    root = Path(image_root) if image_root else file.parent
    samples = []
    for i, rec in enumerate(_limit(read_records(file), limit)):
        where = f"{file.name} record {i}"
        if "conversations" in rec:
            turns = record_field(rec, "conversations", where)
            question = str(turns[0]["value"]).replace("<image>", "").strip()
            box = json.loads(re.sub(r"</?answer>", "", str(turns[1]["value"])))
        else:
            question, box = str(record_field(rec, "problem", where)), record_field(rec, "solution", where)
        image, size = _image(root, str(record_field(rec, "image", where)), where)
        prompt = VLM_R1_REC_USER.replace("{question}", question) if template else question
        samples.append(Sample(id=str(rec.get("id", f"{file.stem}-{i}")), images=(image,), prompt=prompt,
                              target={"bbox": _xyxy(box, where), "image_size": size},
                              meta={"expression": question, "source": file.name}))
    return samples


def load_ovdeval(path: str, image_root: str | None = None, limit: int | None = None, template: bool = True,
                 ) -> list[Sample]:  # fmt: skip
    """OVDEval (one COCO json per sub-task): one image -> its labelled boxes, asked with all its labels.

    The question lists the image's positive ``text`` and hard-negative ``neg_text`` labels in the
    file's order (the paper's ``{target list}``; its exact joining is not published: ``", "`` here),
    in VLM-R1's OVD template. ``target["objects"]`` holds the positive boxes; ``neg_labels`` the
    labels that must not be detected; ``meta["image_id"]`` the file's image id. Images are looked up
    in ``image_root``, else in the published layout (``images/<sub-task>/`` beside ``annotations/``),
    else beside the file.
    """
    file = Path(path)
    published = file.parent.parent / "images" / file.stem  # the dataset's layout: annotations/X.json, images/X/
    root = Path(image_root) if image_root else published if published.is_dir() else file.parent
    data = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else None
    if not isinstance(data, dict) or not {"images", "annotations", "categories"} <= set(data):
        raise ValueError(f"{str(path)!r} is not an OVDEval COCO json (needs images, annotations, categories)")
    names = {c["id"]: c["name"] for c in data["categories"]}
    by_image: dict[Any, list[dict[str, Any]]] = {}
    for ann in data["annotations"]:
        x, y, w, h = (float(v) for v in ann["bbox"])
        by_image.setdefault(ann["image_id"], []).append({"bbox": [x, y, x + w, y + h], "label": names[ann["category_id"]]})
    samples = []
    for img in _limit(data["images"], limit):
        where = f"{file.name} image {img.get('id')}"
        labels = [*img.get("text", []), *img.get("neg_text", [])]
        question = VLM_R1_OVD_PROBLEM.format(labels=", ".join(labels))
        image, size = _image(root, str(record_field(img, "file_name", where)), where)
        samples.append(Sample(
            id=f"{file.stem}-{img['id']}", images=(image,),
            prompt=VLM_R1_OVD_USER.replace("{question}", question) if template else question,
            target={"objects": by_image.get(img["id"], []), "image_size": size, "neg_labels": img.get("neg_text", [])},
            meta={"subset": file.stem, "labels": labels, "image_id": img["id"]},
        ))  # fmt: skip
    return samples


def load_lisa(path: str, image_root: str | None = None, limit: int | None = None, template: bool = True,
              ) -> list[Sample]:  # fmt: skip
    """LISA reasoning grounding in Visual-RFT's format; the 0-1000 box becomes original pixels.

    ``target["bbox_norm1000"]`` keeps the file's numbers (the frame the Visual-RFT model answers in).
    """
    file = Path(path)
    root = Path(image_root) if image_root else file.parent
    samples = []
    for i, rec in enumerate(_limit(read_records(file), limit)):
        where = f"{file.name} record {i}"
        turns = {t.get("from"): str(t.get("value", "")) for t in record_field(rec, "conversations", where)}
        user, answer = turns.get("user", ""), turns.get("assistant", "")
        found = re.search(r"<img>(.*?)</img>", user)
        corners = re.findall(r"\(\s*(\d+)\s*,\s*(\d+)\s*\)", answer)
        if found is None or len(corners) < 2:
            raise ValueError(f"{where}: expected '<img>path</img> question' and '(x1,y1),(x2,y2)', got {user[:60]!r}")
        image, (width, height) = _image(root, found.group(1).strip(), where)
        norm = [float(v) for pair in corners[:2] for v in pair]
        question = user.replace(found.group(0), "").strip()
        samples.append(Sample(
            id=str(rec.get("id", f"{file.stem}-{i}")), images=(image,),
            prompt=VISUAL_RFT_LISA_USER.replace("{question}", question) if template else question,
            target={"bbox": [norm[0] * width / 1000, norm[1] * height / 1000, norm[2] * width / 1000,
                             norm[3] * height / 1000], "bbox_norm1000": norm, "image_size": [width, height]},
            meta={"source": file.name},
        ))  # fmt: skip
    return samples


def load_synthetic(n: int = 16, seed: int = 0, task: str = "rec", size: int = 56, template: bool = True) -> list[Sample]:
    """Seeded shape images (:mod:`domains.perception.synthetic`) for offline recipes and tests."""
    from domains.perception.synthetic import synthetic_samples

    return synthetic_samples(n=n, seed=seed, task=task, size=size, template=template)


def load_curriculum(stages: list[dict[str, Any]]) -> list[Sample]:
    """Registered datasets one after the other, each sample tagged with its stage: a curriculum.

    ``stages`` is a list of ``{"stage": "judge", "name": <dataset>, "kwargs": {...}}``; Curr-ReFT's
    order is judge (true/false), choice (multiple choice), open. Train it with
    ``training.shuffle: false`` so the stages arrive in this order, and a reward that reads
    ``target["stage"]`` (``curr-reft``).
    """
    from dataclasses import replace

    from zoo.data import load_dataset

    if not stages:
        raise ValueError("curriculum needs at least one stage: [{stage: judge, name: <dataset>, kwargs: {...}}]")
    samples = []
    for i, stage in enumerate(stages):
        if not isinstance(stage, dict) or "name" not in stage or "stage" not in stage:
            raise ValueError(f"curriculum stage {i} must be {{stage: ..., name: <dataset>, kwargs: {{...}}}}, got {stage!r}")
        for sample in load_dataset(stage["name"], **stage.get("kwargs", {})):
            samples.append(replace(sample, target={**sample.target, "stage": stage["stage"]},
                                   meta={**sample.meta, "stage": stage["stage"], "stage_index": i}))  # fmt: skip
    return samples
