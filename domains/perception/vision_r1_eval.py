"""``zoo eval vision-r1-7b --data vision-r1-coco|vision-r1-odinw --path FILE``: Vision-R1's localisation evaluation.

The authors' script is jefferyZhan/Griffon@9866875e7d18e705239f3e03115a55aef30ab635
``Vision-R1/eval/eval_localization.py`` (cited below as ``.py:LINE``; its launcher ``eval_localization.sh`` as
``.sh:LINE``), its Qwen2.5-VL branch, which evaluates the ``vision-r1-7b`` checkpoint:

* Data: a COCO detection json (COCO's ``instances_val2017.json``; an ODINW dataset's
  ``annotations_without_background.json``), images beside it (ODINW) or in ``val2017/`` beside ``annotations/``
  (COCO), the layouts of ``DATASET_MAP`` / ``IMAGE_FOLDER_MAP`` (.py:70-129); ``--option image_root=DIR`` elsewhere.
* ``vision-r1-coco`` asks each image once for every category of the file (``EVALDataset``, .py:440-498) in the
  Qwen COCO prompt (.sh:3-4, README.md:78); ``vision-r1-odinw`` asks each image once per category it holds
  (``SINGLE_POS_EVALDataset``, .py:553-617, the ``--single --pos`` that .sh:21-23 asks for ODINW) in the Qwen ODINW
  prompt (.sh:5-6). Greedy, 512 new tokens (.py:926), at the processor's 28*28 to 12800*28*28 pixels (.py:816:
  the ``vision-r1-7b`` entry's limits).
* Reading (.py:1064-1092): the text after a line that is exactly ```` ```json ```` up to the next fence
  (``parse_json``, .py:226-234), ``ast.literal_eval``'d, else cut after its last ``"}`` and closed with ``]`` and
  evaluated again; an answer that still fails gives nothing. Each item's ``bbox_2d`` (x1, y1, x2, y2 in the pixels
  the model saw, ``image_grid_thw * 14``, .py:680-681) becomes x, y, w, h in float32, scaled to the json's image
  ``width``/``height``; its ``label``, lower-cased, must name a category of the file (any case); score 0.99; an
  item that fails any step is dropped (upstream's bare ``except``).
* Scoring: pycocotools ``COCOeval(gt, results, "bbox")`` over the file's images (.py:1261-1266), its 12 ``stats``
  as fractions (``ap`` is the mAP the paper prints in percent). ODINW-13 is GLIP's 13 datasets (the first 13 of
  ``DATASET_MAP``, .py:71-83; microsoft/GLIP@9dda9558c1ef59bb6cdc8e896e2bcab775a68ff0:configs/odinw_13/); ``--path``
  the ODINW ``data`` folder runs all 13 (``--data vision-r1-odinw:NAME`` one of them) and ``odinw13_map`` is the
  plain mean of their ``ap``.

zoo: the script prints each dataset's COCOeval and forms no average; the mean over datasets is GLIP's ODinW
convention, not checked here against the paper's ODINW-13 column (UNVERIFIED). zoo: for a file of 2 to 79
categories the COCO prompt is padded to 80 names with COCO names the file lacks in ``COCO_NAMES`` order; upstream
takes them from a set difference (.py:452), whose order changes with Python's hash seed. zoo: ``--limit N``
asks the first N images and scores over those images (``params.imgIds``), upstream has no limit. zoo: with no
detection at all every statistic is 0 (upstream's ``loadRes`` raises on an empty list). zoo: answers are
generated in batches of ``--option batch_size`` (default 16); ``batch_size=1`` asks one image at a time as
upstream (.py:924).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from domains.perception.ovd import coco_bbox_stats
from zoo.data import Sample, path_under, record_field
from zoo.eval_results import write_results

#: .py:56-63, the names that pad the COCO prompt of a file with fewer categories.
COCO_NAMES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
    "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich",
    "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant", "bed",
    "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone", "microwave", "oven",
    "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors", "teddy bear", "hair drier", "toothbrush",
)  # fmt: skip
#: .sh:3-4 (and README.md:78), Qwen2.5-VL on COCO.
COCO_QUERY = ("Locate every item from the category list in the image and output the coordinates in JSON format. "
              "The category set includes <category set>.")  # fmt: skip
#: .sh:5-6, Qwen2.5-VL on ODINW.
ODINW_QUERY = "Locate every <category set> in the image and output the coordinates in JSON format."
#: .py:456, the COCO-mode question for a file of one category.
ONE_CATEGORY_QUERY = "Can you point out {} in the image and provide the coordinates of its location?"
#: .py:926 (the Qwen branch ignores ``--max-new-tokens``).
MAX_NEW_TOKENS = 512
#: .py:1088, every detection's score.
SCORE = 0.99
#: ODINW-13 under the ODINW ``data`` folder: annotation file, images beside it (.py:71-83, 101-113).
ODINW13 = {
    "AerialMaritimeDrone": "AerialMaritimeDrone/large/valid/annotations_without_background.json",
    "Aquarium": "Aquarium/Aquarium Combined.v2-raw-1024.coco/valid/annotations_without_background.json",
    "CottontailRabbits": "CottontailRabbits/valid/annotations_without_background.json",
    "EgoHands": "EgoHands/generic/valid/annotations_without_background.json",
    "NorthAmericaMushrooms": "NorthAmericaMushrooms/North American Mushrooms.v1-416x416.coco/valid/"
                             "annotations_without_background.json",
    "Packages": "Packages/Raw/valid/annotations_without_background.json",
    "PascalVOC": "PascalVOC/valid/annotations_without_background.json",
    "pistols": "pistols/export/val_annotations_without_background.json",
    "pothole": "pothole/valid/annotations_without_background.json",
    "Raccoon": "Raccoon/Raccoon.v2-raw.coco/valid/annotations_without_background.json",
    "ShellfishOpenImages": "ShellfishOpenImages/raw/valid/annotations_without_background.json",
    "thermalDogsAndPeople": "thermalDogsAndPeople/valid/annotations_without_background.json",
    "VehiclesOpenImages": "VehiclesOpenImages/416x416/valid/annotations_without_background.json",
}  # fmt: skip
#: COCOeval's ``stats`` in its order (``summarize``).
STAT_NAMES = ("ap", "ap50", "ap75", "ap_small", "ap_medium", "ap_large",
              "ar1", "ar10", "ar100", "ar_small", "ar_medium", "ar_large")  # fmt: skip
#: What the prompts, the reading and COCOeval take of each record of a COCO json.
_KEYS = {"images": ("id", "file_name", "width", "height"), "categories": ("id", "name"),
         "annotations": ("id", "image_id", "category_id", "bbox", "area", "iscrowd")}  # fmt: skip


def read_coco_json(path: str | Path) -> dict[str, Any]:
    """A COCO detection json, checked for what the prompts and COCOeval read, or an error naming what is missing."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"annotation file {str(file)!r} is not a file; pass COCO's annotations/"
                                "instances_val2017.json or an ODINW annotations_without_background.json")  # fmt: skip
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as err:
        raise ValueError(f"{file.name} is not JSON ({err}); pass a COCO detection json") from err
    if not isinstance(data, dict) or not {"images", "annotations", "categories"} <= set(data):
        raise ValueError(f"{file.name} is not a COCO detection json (needs images, annotations and categories)")
    if not data["categories"]:
        raise ValueError(f"{file.name} has no categories; the prompt names them")
    for part, keys in _KEYS.items():
        for i, record in enumerate(data[part]):
            where = f"{file.name} {part} record {i}"
            if not isinstance(record, dict):
                raise ValueError(f"{where}: expected an object, got {type(record).__name__}")
            for key in keys:
                record_field(record, key, where)
    if not all(isinstance(c["name"], str) for c in data["categories"]):
        raise ValueError(f"{file.name}: every category's name must be a string (the prompt and the labels use it)")
    return data


def coco_question(categories: Sequence[Mapping[str, Any]]) -> str:
    """The question of ``vision-r1-coco`` for every image of a file with these categories (``EVALDataset``)."""
    names = list({c["id"]: c["name"] for c in categories}.values())
    if len(names) == 1:
        return ONE_CATEGORY_QUERY.format(names[0].split("-")[-1])
    if len(names) < len(COCO_NAMES):
        names += [n for n in COCO_NAMES if n not in set(names)][: len(COCO_NAMES) - len(names)]
    return COCO_QUERY.replace("<category set>", ", ".join(names))


def _image_folder(file: Path, data: str, image_root: str | None) -> Path:
    if image_root:
        return Path(image_root)
    coco_layout = file.parent.parent / "val2017"  # coco2017/annotations/X.json beside coco2017/val2017/
    return coco_layout if data == "vision-r1-coco" and coco_layout.is_dir() else file.parent


def load_detection_set(path: str | Path, data: str, image_root: str | None = None, limit: int | None = None,
                       ) -> tuple[dict[str, Any], list[Sample], list[Any]]:  # fmt: skip
    """``(ground truth, questions, evaluated image ids)`` of one COCO json, asked as ``data`` asks.

    ``vision-r1-coco``: one question per image; ``vision-r1-odinw``: one per (image, category it holds), the
    categories in the file's order. ``limit`` keeps the first images of the file.
    """
    file = Path(path)
    dataset = read_coco_json(file)
    folder = _image_folder(file, data, image_root)
    images = dataset["images"] if limit is None else dataset["images"][:limit]
    held: dict[Any, set[Any]] = {}
    for ann in dataset["annotations"]:
        held.setdefault(ann["image_id"], set()).add(ann["category_id"])
    names = {c["id"]: c["name"] for c in dataset["categories"]}
    coco = coco_question(dataset["categories"])
    samples = []
    for img in images:
        where = f"{file.name} image {img['id']}"
        image = path_under(folder, str(img["file_name"]), where)
        if not image.is_file():
            raise FileNotFoundError(f"{where}: image {str(image)!r} not found; pass --option image_root= the folder "
                                    "holding the file's images")  # fmt: skip
        size = [img["width"], img["height"]]  # the json's, as upstream scales by them (.py:475-476, 1080-1081)
        if data == "vision-r1-coco":
            asked = [(None, coco)]
        else:
            asked = [(name, ODINW_QUERY.replace("<category set>", name))
                     for cid, name in names.items() if cid in held.get(img["id"], ())]  # fmt: skip
        samples += [Sample(id=f"{img['id']}" if name is None else f"{img['id']}-{name}", images=(str(image),),
                           prompt=question, target={"image_size": size},
                           meta={"image_id": img["id"], "category": name}) for name, question in asked]  # fmt: skip
    return dataset, samples, [img["id"] for img in images]


def parse_json(text: str) -> str:
    """``parse_json`` (.py:226-234): what follows the first line equal to ```` ```json ````, up to the next fence."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line == "```json":
            return "\n".join(lines[i + 1 :]).split("```")[0]
    return text


def answer_items(text: str) -> tuple[list[Any], str | None]:
    """``(items, why nothing was read)``: the answer as .py:1068-1076 evaluates it, then iterates it."""
    body = parse_json(text)
    try:
        value = ast.literal_eval(body)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        end = body.rfind('"}')
        if end < 0:  # upstream cuts after the first character: "[]" at best, nothing read either way
            return [], "not a Python/JSON literal, and no '\"}' to cut a truncated list after"
        try:
            value = ast.literal_eval(body[: end + len('"}')] + "]")
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as err:
            return [], f"not a Python/JSON literal, even cut after its last '\"}}' ({type(err).__name__})"
    if isinstance(value, (list, tuple)):
        return list(value), None
    # a dict, string or set iterates into keys or characters, each of which fails upstream; a number is no iterable
    return [], f"a literal {type(value).__name__}, not a list of objects"


def _xywh(box: Any) -> Any:
    """``xyxy2xywh`` (.py:138-149) then ``torch.tensor(..., float32).view(-1, 4)`` (an ``(N, 4)`` tensor whose
    first row upstream keeps); ``None`` where a step raises (a box of 2 numbers, of strings, of 6...)."""
    import numpy as np
    import torch

    try:
        x = np.asarray(box)
        y = np.zeros_like(x)
        if x.ndim == 1:
            x, y = x[None], y[None]
        y[:, 0], y[:, 1] = x[:, 0], x[:, 1]
        y[:, 2], y[:, 3] = x[:, 2] - x[:, 0], x[:, 3] - x[:, 1]
        return torch.tensor(y.tolist(), dtype=torch.float32).view(-1, 4)
    except Exception:  # noqa: BLE001 (upstream's bare except, .py:1091: an item any step fails on is dropped)
        return None


def answer_detections(text: str, image_id: Any, size: Sequence[int], frame: Sequence[int],
                      category_ids: Mapping[str, Any]) -> tuple[list[dict[str, Any]], int, str | None]:  # fmt: skip
    """``(COCO results, items dropped, parse error)`` of one answer: boxes from the model's ``frame`` (w, h) to the
    image's ``size`` (w, h), labels to the file's category ids (``category_ids``: lower-cased name -> id)."""
    import torch

    items, error = answer_items(text)
    detections = []
    input_w, input_h = (torch.tensor(int(v)) for v in frame)  # image_grid_thw * 14, an int64 tensor upstream
    for item in items:
        box = _xywh(item["bbox_2d"]) if isinstance(item, dict) and "bbox_2d" in item else None
        label = item.get("label") if isinstance(item, dict) else None
        if box is None or not isinstance(label, str) or label.lower() not in category_ids:
            continue
        box[:, ::2] = box[:, ::2] / input_w * size[0]
        box[:, 1::2] = box[:, 1::2] / input_h * size[1]
        detections.append({"image_id": image_id, "category_id": category_ids[label.lower()],
                           "bbox": box.tolist()[0], "score": SCORE})  # fmt: skip
    return detections, len(items) - len(detections), error


def coco_scores(dataset: Mapping[str, Any], detections: list[dict[str, Any]], image_ids: Sequence[Any],
                ) -> dict[str, float]:  # fmt: skip
    """COCOeval's 12 statistics by name over ``image_ids`` (every one 0 when there is no detection)."""
    stats = coco_bbox_stats(dataset, detections, image_ids) if detections else [0.0] * len(STAT_NAMES)
    return {name: float(v) for name, v in zip(STAT_NAMES, stats, strict=True)}


def score_answers(dataset: Mapping[str, Any], samples: Sequence[Sample], texts: Sequence[str],
                  frames: Sequence[Sequence[int]], image_ids: Sequence[Any],
                  ) -> tuple[dict[str, Any], list[dict[str, Any]]]:  # fmt: skip
    """``(metrics, rows)`` of the answers ``texts`` (one per sample; ``frames``: the model's (w, h) for each)."""
    category_ids = {c["name"].lower(): c["id"] for c in dataset["categories"]}
    rows, detections = [], []
    for sample, text, frame in zip(samples, texts, frames, strict=True):
        found, dropped, error = answer_detections(text, sample.meta["image_id"], sample.target["image_size"], frame,
                                                  category_ids)  # fmt: skip
        detections += found
        rows.append({"id": sample.id, "image_id": sample.meta["image_id"], "category": sample.meta["category"],
                     "detections": len(found), "dropped": dropped, "parse_error": error, "text": text})  # fmt: skip
    n = max(len(rows), 1)
    metrics = {**coco_scores(dataset, detections, image_ids), "images": len(image_ids), "questions": len(rows),
               "detections": len(detections), "dropped_items": sum(r["dropped"] for r in rows),
               "unreadable_answers": sum(r["parse_error"] is not None for r in rows) / n}  # fmt: skip
    return metrics, rows


def _odinw_files(data: str, folder: Path) -> dict[str, Path]:
    """The ODINW-13 annotation files under ODINW's ``data`` folder, or the one ``vision-r1-odinw:NAME`` picks."""
    _, _, name = data.partition(":")
    if name and name not in ODINW13:
        raise ValueError(f"--data {data}: no ODINW-13 dataset {name!r}; choose one of {', '.join(ODINW13)}")
    files = {key: folder / rel for key, rel in ODINW13.items() if not name or key == name}
    missing = [f"{key} ({rel.relative_to(folder)})" for key, rel in files.items() if not rel.is_file()]
    if missing:
        raise FileNotFoundError(f"--path {folder} is not ODINW's data folder: no {', '.join(missing)}; pass the "
                                "folder holding the datasets, or one annotation file")  # fmt: skip
    return files


def _answers(pipe: Any, samples: Sequence[Sample], batch_size: int) -> tuple[list[str], list[list[int]]]:
    texts, frames = [], []
    for start in range(0, len(samples), batch_size):
        batch = samples[start : start + batch_size]
        predictions = pipe([s.images[0] for s in batch], [s.question for s in batch], max_new_tokens=MAX_NEW_TOKENS)
        texts += [p.text for p in predictions]
        frames += [list(p.extra["model_frame_size"]) for p in predictions]
    return texts, frames


def evaluate_file(pipe: Any, kind: str, path: Path, limit: int | None, batch_size: int, image_root: str | None,
                  ) -> tuple[dict[str, Any], list[dict[str, Any]]]:  # fmt: skip
    """Ask ``pipe`` one COCO json's questions as benchmark ``kind`` asks them and score the answers."""
    dataset, samples, image_ids = load_detection_set(path, kind, image_root, limit)
    texts, frames = _answers(pipe, samples, batch_size)
    return score_answers(dataset, samples, texts, frames, image_ids)


def run_vision_r1(pipe: Any, data: str, path: str | None, out_dir: str | Path, limit: int | None, batch_size: int,
                  image_root: str | None) -> dict[str, Any]:  # fmt: skip
    """Evaluate ``pipe`` as Vision-R1's ``eval_localization.py`` does; writes metrics.json and predictions.jsonl.

    ``path``: one COCO json, or (``vision-r1-odinw``) ODINW's ``data`` folder for ODINW-13 and its mean AP.
    """
    kind = data.partition(":")[0]
    if path is None:
        raise ValueError(f"--data {kind} needs --path pointing at "
                         + ("COCO's annotations/instances_val2017.json" if kind == "vision-r1-coco" else
                            "ODINW's data folder (ODINW-13) or one annotations_without_background.json"))  # fmt: skip
    if pipe.entry.spec.coord_frame != "resized":
        raise ValueError(f"--data {kind} reads boxes in the pixels the model saw, as Vision-R1's Qwen2.5-VL "
                         f"evaluation does; {pipe.entry.name} answers in {pipe.entry.spec.coord_frame!r}")  # fmt: skip
    head = {"model": pipe.entry.name, "data": data,
            "protocol": "pycocotools COCOeval bbox, jefferyZhan/Griffon@9866875:Vision-R1/eval/eval_localization.py",
            "prompt": COCO_QUERY if kind == "vision-r1-coco" else ODINW_QUERY}  # fmt: skip
    folder = Path(path)
    if kind == "vision-r1-coco" or not folder.is_dir():
        if ":" in data:
            raise ValueError(f"--data {data}: a :NAME picks an ODINW-13 dataset from ODINW's data folder, not a file")
        metrics, rows = evaluate_file(pipe, kind, folder, limit, batch_size, image_root)
        subset = next((name for name, rel in ODINW13.items() if folder.as_posix().endswith(rel)), folder.stem)
        metrics = {**head, "subset": subset, **metrics}
    else:
        if image_root:
            raise ValueError("--option image_root applies to one annotation file; ODINW's datasets keep their "
                             "images beside their annotation files")  # fmt: skip
        per, rows = {}, []
        for name, file in _odinw_files(data, folder).items():
            per[name], mine = evaluate_file(pipe, kind, file, limit, batch_size, None)
            rows += [{"dataset": name, **row} for row in mine]
        mean = sum(m["ap"] for m in per.values()) / len(per)
        metrics = {**head, "odinw13_map" if len(per) == len(ODINW13) else "mean_ap": mean, "datasets": per}
    write_results(out_dir, metrics, rows)
    return metrics
