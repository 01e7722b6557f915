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
Vision-R1-Data              ``datasets`` folder (``save_to_disk``): ``problem``,    ``solution`` JSON
                            ``image``, ``solution``, ``width``, ``height``,         ``[[label, [[x1, y1,
                            ``num_instances``, ``target_id_maps``, ``source``       x2, y2]]], ...]``
Curr-ReFT-data              JSON lines ``{problem, solution, task, image}``         (in ``solution``)
R1-Reward-RL                parquet / JSON lines ``{message, question, answer,      (none: 1 or 2)
                            image}``; ``message`` a JSON chat with the image path
==========================  ======================================================  ====================

Sources: om-ai-lab/VLM-R1 ``src/eval/test_rec_r1.py`` (reads ``image``, ``problem``, ``solution``)
and ``src/open-r1-multimodal/src/open_r1/grpo_jsonl.py`` (``conversations[0]`` is the question with
``<image>``, ``conversations[1]`` the answer); om-ai-lab/OVDEval ``Evaluation.md`` (COCO json whose
``images`` carry positive ``text`` and hard-negative ``neg_text`` labels); Liuziyu77/Visual-RFT
``src/virft/src/open_r1/grpo_lisa.py`` (``<img>`` path in the user value, boxes divided by 1000);
the Vision-R1-Data, Curr-ReFT-data and R1-Reward-RL loaders name their sources.

Questions are yielded raw (``Sample.prompt`` a string, as the dataset asks it, built from the record's
fields where the format lists labels or options): no loader writes a system prompt or a user template. A
recipe names the entry whose prompt it trains with (``model.entry``: ``vlm-r1-rec-3b`` for RefCOCO,
``vlm-r1-ovd-3b`` for OVDEval, ``visual-rft-lisa-7b`` with ``model.variant: train`` for LISA,
``vision-r1-7b``, ``curr-reft-7b``, ``r1-reward-7b``) and the training loops wrap each question in that
entry's template as ``zoo.load(entry)`` does; a dataset asking several kinds of question (Curr-ReFT's
stages) names the entry's template per sample in ``meta["template"]``.

Which files are evaluation data: OVDEval is a benchmark (``eval_datasets`` of the domain); RefCOCO's
``*_val``/``testA``/``testB``, LISA's ``lisa_test`` and Curr-ReFT's ``*_test`` files are the authors'
evaluation splits, while their ``*_train`` files (and Curr-ReFT's ``*_val``, which its data card says
the authors trained on) are training data.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from domains.perception.prompts import VLM_R1_OVD_PROBLEM
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


def load_refcoco(path: str | Sequence[str], image_root: str | None = None, limit: int | None = None) -> list[Sample]:
    """RefCOCO/+/g or LISA-grounding in VLM-R1's files: one referring expression -> one box.

    ``path`` is one file or a list of them, read in order: VLM-R1's REC run trains on
    ``refcoco_train``, ``refcocop_train`` and ``refcocog_train`` together
    (om-ai-lab/VLM-R1@90052f4:src/open-r1-multimodal/data_config/rec.yaml:1-4), images found under one
    ``image_root`` (the folder holding ``train2014/``, ``src/eval/test_rec_r1.py`` L50, L122).
    The question is the bare expression; VLM-R1 asks it in its REC template with no system prompt, in
    training (grpo_rec.py:161-173, the template of qwen_module.py:70-73) and in its evaluation
    (test_rec_r1.py:111, 124-134): the ``vlm-r1-rec-3b`` entry's prompt, which a recipe names with
    ``model.entry`` and a pipeline applies. ``limit`` counts samples over all files.
    """
    if not isinstance(path, str):
        samples = [s for one in path for s in load_refcoco(one, image_root, None)]
        return _limit(samples, limit)
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
        samples.append(Sample(id=str(rec.get("id", f"{file.stem}-{i}")), images=(image,), prompt=question,
                              target={"bbox": _xyxy(box, where), "image_size": size},
                              meta={"expression": question, "source": file.name}))
    return samples


def load_ovdeval(path: str, image_root: str | None = None, limit: int | None = None) -> list[Sample]:
    """OVDEval (one COCO json per sub-task): one image -> its labelled boxes, asked with all its labels.

    The question lists the image's positive ``text`` and hard-negative ``neg_text`` labels in the
    file's order (the paper's ``{target list}``; its exact joining is not published: ``", "`` here),
    in the paper's OVD problem (:data:`~domains.perception.prompts.VLM_R1_OVD_PROBLEM`): that is the
    question, to which the ``vlm-r1-ovd-3b`` entry's template appends the thinking sentence.
    ``target["objects"]`` holds the positive boxes; ``neg_labels`` the labels that must not be detected;
    ``meta["image_id"]`` the file's image id. Images are looked up in ``image_root``, else in the
    published layout (``images/<sub-task>/`` beside ``annotations/``), else beside the file.
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
            prompt=question,
            target={"objects": by_image.get(img["id"], []), "image_size": size, "neg_labels": img.get("neg_text", [])},
            meta={"subset": file.stem, "labels": labels, "image_id": img["id"]},
        ))  # fmt: skip
    return samples


def load_lisa(path: str, image_root: str | None = None, limit: int | None = None,
              template: str | None = "train") -> list[Sample]:  # fmt: skip
    """LISA reasoning grounding in Visual-RFT's format; the 0-1000 box becomes original pixels.

    The question is the user turn without its ``<img>`` tag, as Visual-RFT cuts it
    (Liuziyu77/Visual-RFT@9486633:src/virft/src/open_r1/grpo_lisa.py:198-210) before its QUESTION_TEMPLATE
    wraps it with no system prompt: the ``visual-rft-lisa-7b`` entry's ``train`` template (``meta["template"]``,
    ``template=None`` for an entry without one) with ``model.variant: train``. The question already carries the
    authors' "Output the bounding box ..." prefix, which that entry's default template adds for direct use.
    ``target["bbox_norm1000"]`` keeps the file's numbers (the frame the Visual-RFT model answers in) and
    ``target["solution"]`` the reference as grpo_lisa.py:214 writes it (``visual-rft-lisa-giou`` reads it).
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
            prompt=question,
            target={"bbox": [norm[0] * width / 1000, norm[1] * height / 1000, norm[2] * width / 1000,
                             norm[3] * height / 1000], "bbox_norm1000": norm, "image_size": [width, height],
                    "solution": "<answer> " + answer + " </answer>"},
            meta={"source": file.name, **({"template": template} if template else {})},
        ))  # fmt: skip
    return samples


#: Vision-R1's rewrite of Vision-R1-Data's questions for Qwen models (jefferyZhan/Griffon@9866875:
#: Vision-R1/vision_r1/visionr1_qwen.py:426-434), applied in this order; other wording raises upstream. A
#: conversion of the data's wording, not a prompt template: the rewritten question is the whole user turn.
VISION_R1_QWEN_REWRITES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Examine the image for any objects from the category set. Report the coordinates of each detected object.",
     (("Examine the image for any objects from the category set. Report the coordinates of each detected object.",
       "Locate every item from the category list in the image and output the coordinates in JSON format."),)),
    ("Can you point out", (("Can you point out", "Locate every"),
                           ("in the image and provide the coordinates of its location?",
                            "in the image and output the coordinates in JSON format."))),
    ("Locate the exact position of", (("Locate the exact position of", "Locate every"),
                                      ("in the picture, if you can.",
                                       "in the image and output the coordinates in JSON format."))),
)  # fmt: skip
VISION_R1_DATA_COLUMNS = ("problem", "image", "solution", "width", "height", "num_instances", "target_id_maps")


def vision_r1_qwen_question(problem: str) -> str:
    """Vision-R1-Data's ``problem`` as Vision-R1 asks it of a Qwen model (``make_conversation_image``)."""
    for marker, replacements in VISION_R1_QWEN_REWRITES:
        if marker in problem:
            for old, new in replacements:
                problem = problem.replace(old, new)
            return problem
    raise ValueError(f"Vision-R1-Data question {problem[:80]!r} has none of the wordings Vision-R1 rewrites for Qwen "
                     "(visionr1_qwen.py:426-434); pass qwen_wording=False to keep it as written")  # fmt: skip


def _vision_r1_objects(solution: Any, where: str) -> list[dict[str, Any]]:
    """``solution`` JSON ``[[label, [[x1, y1, x2, y2]]], ...]`` (the SFT script reads ``item[1][0]``,
    sft_qwen.py:160-162; the reward views each item's box as ``(-1, 4)``, visionr1_qwen.py:294-298)."""
    items = json.loads(solution) if isinstance(solution, str) else solution
    pairs = items if isinstance(items, list) else [items]
    objects = []
    for item in pairs:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise ValueError(f"{where}: solution must be a JSON list of [label, [[x1, y1, x2, y2]]] pairs, got "
                             f"{str(item)[:60]!r}")  # fmt: skip
        label, box = item
        boxes = box if box and isinstance(box[0], (list, tuple)) else [box]
        if len(boxes) != 1:
            raise ValueError(f"{where}: solution item {label!r} holds {len(boxes)} boxes; Vision-R1 reads one per label")
        objects.append({"bbox": _xyxy(boxes[0], where), "label": str(label)})
    return objects


def load_vision_r1_data(path: str, limit: int | None = None, qwen_wording: bool = True, split: str = "train",
                        min_instances: int = 1, max_instances: int = 30) -> list[Sample]:  # fmt: skip
    """JefferyZhan/Vision-R1-Data, the data Vision-R1 trains on (``run_qwen_vision_r1.sh`` L14).

    ``path`` is the dataset folder as the Hub holds it and ``datasets.save_to_disk`` writes it
    (``dataset_info.json``, ``state.json``, ``data-*.arrow``; features ``problem``, ``image``,
    ``solution``, ``width``, ``height``, ``num_instances``, ``target_id_maps``, ``source``:
    https://huggingface.co/datasets/JefferyZhan/Vision-R1-Data/blob/refs%2Fpr%2F3/dataset_info.json at
    0a17371), read as Vision-R1 reads it (``load_from_disk``, visionr1_qwen.py:418-421); a folder of
    splits gives ``split``. As upstream: images with ``min_instances`` to ``max_instances`` objects are
    kept (L450-460), sorted by object count (L461; the trainer's sampler shuffles them again).

    ``qwen_wording`` is the authors' conversion of the data for Qwen models, not a prompt template: Vision-R1
    rewrites each question's wording (:func:`vision_r1_qwen_question`, L423-436) whenever the model's path
    names Qwen (L453-455), and asks the rewritten question as the whole user turn, image first, with no
    system prompt (L438-447), which is the ``vision-r1-7b`` entry's prompt (its user template is
    ``{question}``). ``False`` keeps the data's own wording (Vision-R1 on a model not named Qwen).

    Targets are in the frame of the ``width``/``height`` columns, which the reward maps predictions to
    (L280-281) and which may differ from the stored image's size (the SFT script rescales between the
    two, sft_qwen.py:158-163): ``objects``, ``image_size = [width, height]``, ``label_ids`` (the row's
    ``target_id_maps``, class 0 being background). Images stay encoded until used.
    """
    from datasets import DatasetDict, load_from_disk
    from datasets import Image as ImageFeature

    folder = Path(path)
    if not (folder / "dataset_info.json").is_file() and not (folder / "dataset_dict.json").is_file():
        raise FileNotFoundError(f"{str(path)!r} is not a datasets folder (no dataset_info.json or dataset_dict.json): "
                                "download JefferyZhan/Vision-R1-Data and pass its folder")  # fmt: skip
    data = load_from_disk(str(folder))
    if isinstance(data, DatasetDict):
        if split not in data:
            raise ValueError(f"{str(path)!r} has splits {sorted(data)}, not split={split!r}")
        data = data[split]
    missing = [c for c in VISION_R1_DATA_COLUMNS if c not in data.column_names]
    if missing:
        raise ValueError(f"{str(path)!r} is not Vision-R1-Data: it lacks the column(s) {', '.join(missing)}")
    data = data.cast_column("image", ImageFeature(decode=False))
    rows = [r for r in data if min_instances <= int(r["num_instances"]) <= max_instances]
    rows.sort(key=lambda r: int(r["num_instances"]))  # stable, as datasets' sort
    samples = []
    for i, row in enumerate(_limit(rows, limit)):
        where = f"{folder.name} row {i}"
        problem = str(row["problem"])
        prompt = vision_r1_qwen_question(problem) if qwen_wording else problem
        cell = row["image"] or {}
        image = cell.get("bytes") or cell.get("path")
        if not image:
            raise ValueError(f"{where}: the image column holds neither bytes nor a path")
        samples.append(Sample(
            id=f"{folder.name}-{i}", images=(image,), prompt=prompt,
            target={"objects": _vision_r1_objects(row["solution"], where),
                    "image_size": [int(row["width"]), int(row["height"])],
                    "label_ids": json.loads(row["target_id_maps"])},
            meta={"source": row.get("source"), "num_instances": int(row["num_instances"])},
        ))  # fmt: skip
    return samples


#: Curr-ReFT's stages and, per task, the curr-reft entries' user template it is asked in: a name of their
#: ``templates`` (:data:`~domains.perception.prompts.CURR_REFT_TEMPLATES`), ``None`` for their default ``user``;
#: ``"*"`` is the stage's template for other tasks (ding523/Curr_REFT@f123433
#: train_code/grpo/open-r1-multimodal/src/open_r1/): Stage1_judge_math_resize.py:207-214,
#: Stage2_choice_math_resize.py:207-222, Stage3_open_math_resize.py:206-222.
CURR_REFT_STAGE_TEMPLATES: dict[str, Mapping[str, str | None]] = {
    "judge": {"*": "judge"},
    "choice": {"*": "choice", "classify": "choice-classify"},
    "open": {"*": None, "detection": "open-detection", "coco_vqa": "open-vqa"},
}


def curr_reft_template(stage: str, task: str) -> str | None:
    """The name of the curr-reft entries' user template Curr-ReFT asks ``task`` in at ``stage`` (``None``: their
    default ``user``, the open stage's QUESTION_TEMPLATE_NORMAL)."""
    if stage not in CURR_REFT_STAGE_TEMPLATES:
        raise ValueError(f"stage={stage!r}; Curr-ReFT's stages are judge, choice and open")
    names = CURR_REFT_STAGE_TEMPLATES[stage]
    return names.get(task, names["*"])


def load_curr_reft(path: str, stage: str, image_root: str | None = None, limit: int | None = None) -> list[Sample]:
    """One stage file of ZTE-AIM/Curr-ReFT-data (``grpo_data/train/<stage>/...jsonl``).

    Rows are ``{problem, solution, task, image}`` (the data card, mirrored in the repository's
    ``Evaluation&Data_Usage.md`` "Data Format"; ``image`` relative to ``image_root``, as the trainers
    join it, Stage3_open_math_resize.py:310). ``stage`` is ``judge``, ``choice`` or ``open``. The question
    is the row's ``problem``; each sample names in ``meta["template"]`` the curr-reft entries' user template
    the stage asks its ``task`` in (:func:`curr_reft_template`; no key for the entries' default, the open
    stage's), with no system prompt (the image branch has it commented out, Stage3_open_math_resize.py:226),
    as a recipe naming ``model.entry: curr-reft-7b`` (or ``-3b``) trains. The card's ``*_test`` files are
    evaluation data; its ``*_val`` files are training data ("The _val files ... are incorporated into the
    training data").

    Targets: ``{"answer": solution, "task": task, "stage": stage}``, what the ``curr-reft`` rewards read.
    Not reproduced: the trainers shrink images above 262,144 (stage 1, math) or 410,000 pixels (stage 3)
    themselves before the processor (Stage1_judge_math_resize.py:318-329, Stage3_open_math_resize.py:347-381);
    set ``model.max_pixels`` for a comparable resolution.
    """
    curr_reft_template(stage, "")  # an unknown stage fails before the file is read
    file = Path(path)
    root = Path(image_root) if image_root else file.parent
    samples = []
    for i, rec in enumerate(_limit(read_records(file), limit)):
        where = f"{file.name} record {i}"
        task, problem = str(record_field(rec, "task", where)), str(record_field(rec, "problem", where))
        image, _ = _image(root, str(record_field(rec, "image", where)), where)
        template = curr_reft_template(stage, task)
        samples.append(Sample(
            id=f"{file.stem}-{i}", images=(image,), prompt=problem,
            target={"answer": str(record_field(rec, "solution", where)), "task": task, "stage": stage},
            meta={"task": task, "stage": stage, "source": file.name, **({"template": template} if template else {})},
        ))  # fmt: skip
    return samples


def read_message_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of an OpenRLHF-style prompt set (R1-Reward-RL, SCS): parquet shards (a file, or a folder with
    ``data/*.parquet``), a JSON list or JSON lines."""
    if path.is_dir():
        files = sorted(path.glob("data/*.parquet")) or sorted(path.glob("*.parquet"))
        if not files:
            raise FileNotFoundError(f"no parquet files in {str(path)!r} (the dataset holds data/train-*.parquet)")
    else:
        files = [path]
    if files[0].suffix != ".parquet":
        return read_records(path)
    import pyarrow.parquet as pq

    return [row for file in files for row in pq.read_table(file).to_pylist()]


def message_image(row: Mapping[str, Any], chat: list[dict[str, Any]], root: Path | None, where: str) -> str | bytes:
    """The image of a row whose ``message`` is a chat naming it (R1-Reward README L60-69, SCS README L37-54): the
    path (a ``file://`` URI's path) found as written or by file name under ``root``; else the ``image`` column,
    a path or base64."""
    named = [str(part["image"]).removeprefix("file://") for turn in chat for part in turn.get("content") or []
             if isinstance(part, dict) and part.get("type") == "image" and part.get("image")]  # fmt: skip
    column = str(row.get("image") or "")
    for name in [*named, column] if column else named:
        for candidate in (Path(name), root / Path(name).name) if root else (Path(name),):
            try:
                if candidate.is_file():
                    return str(candidate)
            except OSError:  # base64 text is no file name (too long)
                break
    try:
        decoded = base64.b64decode(column, validate=True) if column else b""
    except (binascii.Error, ValueError):
        decoded = b""
    if decoded:
        return decoded
    raise FileNotFoundError(f"{where}: image {named[0] if named else column[:60]!r} not found; save the images "
                            "locally and pass image_root= their folder")  # fmt: skip


def user_texts(chat: list[dict[str, Any]]) -> list[str]:
    """The text parts of a chat's user turns, in order (a turn's content a string or a list of parts)."""
    return [str(part.get("text", "")) for turn in chat if turn.get("role") == "user"
            for part in (turn.get("content") if isinstance(turn.get("content"), list) else
                         [{"type": "text", "text": turn.get("content")}]) if part.get("type") == "text"]  # fmt: skip


def load_r1_reward_rl(path: str, image_root: str | None = None, limit: int | None = None) -> list[Sample]:
    """yifanzhang114/R1-Reward-RL, R1-Reward's RL data: judge two responses to an image question.

    Rows ``{message, question, answer, image}`` (card at c3243ab: ``question``/``message``/``image``
    strings, ``answer`` a list of strings; https://huggingface.co/datasets/yifanzhang114/R1-Reward-RL/blob/
    c3243abfad994265c38923a15fc0b2749c9df3c0/README.md). ``message`` is a JSON chat whose user turn holds
    the whole judge prompt and the image path (yfzhang114/r1_reward@3693413:README.md:71-80); the
    training reads it with ``--input_key message`` and scores against ``answer`` (scripts/train.sh:13,
    openrlhf/models/remote_rm/math_verifier_mllm.py:282-286). The sample's prompt is that judge prompt,
    its target ``{"answer": answer[0]}`` (``"<answer>2</answer>"``, which ``r1-reward`` reads).
    That judge prompt is the data's question, raw: the release writes the whole of it in each row, and the
    ``r1-reward-7b`` entry's user template is ``{question}`` (its callers build the same text with
    :func:`~domains.perception.prompts.format_r1_reward_question`), so ``model.entry: r1-reward-7b`` trains on it
    unchanged. zoo: the TRL path puts the image before the text; the release's messages put it after.
    """
    file = Path(path)
    root = Path(image_root) if image_root else None
    samples = []
    for i, row in enumerate(_limit(read_message_rows(file), limit)):
        where = f"{file.name} row {i}"
        message = record_field(row, "message", where)
        chat = json.loads(message) if isinstance(message, str) else message
        texts = user_texts(chat)
        answers = record_field(row, "answer", where)
        if not texts or not isinstance(answers, list) or not answers:
            raise ValueError(f"{where}: expected a user turn with the judge prompt and answer = ['<answer>1|2</answer>']")
        samples.append(Sample(id=f"{file.stem}-{i}", images=(message_image(row, chat, root, where),),
                              prompt="\n".join(texts), target={"answer": str(answers[0])},
                              meta={"question": row.get("question")}))  # fmt: skip
    return samples


def load_synthetic(n: int = 16, seed: int = 0, task: str = "rec", size: int = 56) -> list[Sample]:
    """Seeded shape images (:mod:`domains.perception.synthetic`) for offline recipes and tests: raw questions,
    which the entry the module docstring names per task wraps."""
    from domains.perception.synthetic import synthetic_samples

    return synthetic_samples(n=n, seed=seed, task=task, size=size)


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
