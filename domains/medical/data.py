"""Medical data as :class:`~zoo.data.Sample` lists: PathMMU json, U2-Bench TSV, synthetic images.

Formats (read in the benchmarks' own code, see the docstrings below):

* PathMMU ``data.json``: ``{"PubMed": {"test_tiny": [{"No", "question", "options": ["(A) ..."],
  "answer": "D", "img": "relative/path.jpg"}, ...]}}``, images under ``<root>/images/``
  (PathMMU-Benchmark/PathMMU@f1ca4d3:eval/utils/data_utils.py:66-87).
* U2-Bench, as released (https://huggingface.co/datasets/DolphinAI/u2-bench): eight task folders of
  TSVs, one row per case, with ``dataset_name`` (``"10.FPUS23"``), ``img_data`` (base64 image),
  ``prompt``, ``anatomy_location``, ``classification_task``, ``class_label``, ``options``,
  ``gt_bbox``, ``keypoints``, ``measurement``, ``caption``, ``report``, ... (the card's
  ``an_explanation_of_the_columns.tsv``). The truth of each folder and the evalkit rule that
  scores it are in :data:`U2_TASKS` (dolphin-sound/u2-bench-evalkit@782350b:vlmeval/eval_func/*.py).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from domains.medical import prompts
from domains.medical.metrics import MEASUREMENT_KEYS, NOT_VISIBLE, box_position_label, position_label
from domains.medical.synthetic import TISSUE_CLASSES, US_CLASSES, pathology_image, ultrasound_case
from domains.medical.u2_prompts import PromptSource, U2Prompts
from zoo.data import Sample, path_under
from zoo.images import ImageError, image_size

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)

#: The evalkit's four scoring rules (its ``--task_type``); the synthetic ultrasound tasks map onto them.
U2_RULES = ("cla", "seg", "measurement", "report")
US_TASKS = ("classification", "localization", "measurement", "report")
_U2_FROM_US = dict(zip(US_TASKS, U2_RULES))


def messages(text: str) -> list[dict[str, Any]]:
    """One user turn: an image placeholder then the raw question ``text`` (the image travels in ``Sample.images``).

    No system prompt and no template: a recipe's ``model.entry`` wraps the question in its entry's
    (``patho-r1-7b``: Patho-R1's CoT system prompt; ``dolphin-r1``:
    :data:`~domains.medical.prompts.US_REASONING_SYSTEM`), as ``zoo.load`` of that entry does at inference
    (:mod:`zoo.engines.vlm.contract`)."""
    return [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]


# --- synthetic ---------------------------------------------------------------------------------


def synthetic_pathology(n: int = 8, task: str = "mcq", seed: int = 0, size: int = 64) -> list[Sample]:
    """``n`` H&E-like patches with a tissue-pattern question: ``mcq`` (4 options in Patho-R1's ``" /n "`` layout,
    :func:`~domains.medical.prompts.format_mcq`) or ``vqa`` (open). Raw questions: the system prompt is the
    recipe's ``model.entry``'s (:func:`messages`)."""
    if task not in ("mcq", "vqa"):
        raise ValueError(f"synthetic pathology task must be 'mcq' or 'vqa', got {task!r}")
    rng = np.random.default_rng(seed)
    names = sorted(TISSUE_CLASSES)
    samples = []
    for i in range(n):
        tissue = names[int(rng.integers(len(names)))]
        image = pathology_image(rng, tissue, size)
        question = "Which tissue pattern does this H&E patch show?"
        if task == "mcq":
            order = [names[j] for j in rng.permutation(len(names))]
            options = {chr(ord("A") + j): name for j, name in enumerate(order)}
            letter = next(k for k, v in options.items() if v == tissue)
            text, target = prompts.format_mcq(question, options), {"answer": letter, "options": options}
        else:
            text, target = question, {"answer": tissue}
        samples.append(Sample(f"synth-patho-{task}-{i}", (image,), messages(text), target, {"task": task}))
    return samples


def _report_text(label: str | None, position: str, diameter: float | None) -> str:
    if label is None:
        return "No focal lesion is seen."
    shape = "an oval lesion with smooth margins" if label == "benign" else "a lobulated lesion with irregular margins"
    return f"There is {shape}, hypoechoic, in the {position} of the image, measuring {diameter} mm."


def synthetic_ultrasound(
    n: int = 8,
    task: str = "localization",
    seed: int = 0,
    size: tuple[int, int] = (96, 80),
    mm_per_px: float = 0.5,
) -> list[Sample]:
    """``n`` speckled B-mode-like frames for one of the four U2-Bench task types (:data:`US_TASKS`),
    or ``"mixed"``: the four in turn, as a multi-task RL stage trains on them. The question is the task's
    U2-Bench-style prompt, raw: the reasoning system prompt is the recipe's ``model.entry``'s
    (``dolphin-r1``, :func:`messages`)."""
    if task not in (*US_TASKS, "mixed"):
        raise ValueError(f"ultrasound task must be one of {US_TASKS} or 'mixed', got {task!r}")
    rng = np.random.default_rng(seed)
    anatomy = "a synthetic phantom"
    high = round(0.3 * max(size) * mm_per_px, 1)  # the generator's largest lesion extent
    samples = []
    mixed = task == "mixed"
    for i in range(n):
        task = US_TASKS[i % len(US_TASKS)] if mixed else task
        case = ultrasound_case(rng, size, lesion=task in ("classification", "measurement") or rng.random() < 0.85,
                               mm_per_px=mm_per_px)
        position = box_position_label(case.bbox, size)
        if task == "classification":
            text = prompts.US_CLASSIFICATION_TEMPLATE.format(anatomy=anatomy, options=", ".join(US_CLASSES))
            target: dict[str, Any] = {"label": case.label}
        elif task == "localization":
            text = prompts.U2BENCH_LOCALIZATION_PROMPT.format(anatomy=anatomy)
            target = {"bbox": case.bbox, "image_size": list(size), "position": position}
        elif task == "measurement":
            text = prompts.US_MEASUREMENT_TEMPLATE.format(anatomy=anatomy, mm_per_px=mm_per_px, low=0.0, high=high)
            target = {"value": case.diameter_mm, "range": [0.0, high]}
        else:
            text = prompts.US_REPORT_TEMPLATE.format(anatomy=anatomy)
            target = {"report": _report_text(case.label, position, case.diameter_mm)}
        target["task"] = task  # lets the multi-task reward `us-answer` pick the task's rule
        meta = {"task": task, "u2_task": _U2_FROM_US[task]}
        samples.append(Sample(f"synth-us-{task}-{i}", (case.image,), messages(text), target, meta))
    return samples


# --- PathMMU -----------------------------------------------------------------------------------


def pathmmu_option_text(option: str) -> str:
    """PathMMU's option content: ``option.split(')')[1].strip()``
    (PathMMU-Benchmark/PathMMU@f1ca4d3:eval/utils/data_utils.py:136), kept verbatim because both the
    prompt and the accuracy use these strings; ``"(A) x (y) z"`` gives ``"x (y"``. An option without
    ``)`` raises IndexError, as there, and the question is left out (eval/main.py:116-122)."""
    return option.split(")")[1].strip()


#: Why PathMMU questions are left out, as the authors' code leaves them out: its loader skips a
#: question whose image is missing (eval/utils/data_utils.py:78-82); ``construct_prompt`` raises on an
#: option without ``)`` (data_utils.py:136) or an answer letter past the options (data_utils.py:149)
#: and ``main.py`` skips the question (eval/main.py:116-122).
PATHMMU_LEFT_OUT = ("image missing", "option without ')'", "answer names no option")


def pathmmu_samples(
    path: str | Path,
    category: str = "PubMed_test_tiny",
    limit: int | None = None,
) -> tuple[list[Sample], dict[str, int]]:
    """Samples of one PathMMU category and how many questions were left out, by reason
    (:data:`PATHMMU_LEFT_OUT`); :func:`load_pathmmu` documents the arguments."""
    file = Path(path)
    file = file / "data.json" if file.is_dir() else file
    if not file.is_file():
        raise FileNotFoundError(f"PathMMU data.json not found at {file}; pass the file or its folder")
    data = _read_pathmmu(file)
    source, _, split = category.partition("_")
    if source not in data or split not in data[source]:
        known = [f"{s}_{sp}" for s, splits in data.items() for sp in splits]
        raise ValueError(f"PathMMU category {category!r} not in {file.name}; available: {known}")
    samples: list[Sample] = []
    left_out = dict.fromkeys(PATHMMU_LEFT_OUT, 0)
    for i, item in enumerate(data[source][split][:limit]):
        where = f"{file.name} {category}[{i}]"
        _check_pathmmu_item(item, where)
        image = path_under(file.parent / "images", item["img"], where)
        if not image.is_file():
            left_out["image missing"] += 1
            continue
        letters = [chr(ord("A") + k) for k in range(len(item["options"]))]
        try:
            options = {k: pathmmu_option_text(o) for k, o in zip(letters, item["options"])}
        except IndexError:
            left_out["option without ')'"] += 1
            continue
        try:  # new_options[ord(answer[0].upper()) - ord('A')] (data_utils.py:149), Python's indexing included
            letter = letters[ord(item["answer"][0].upper()) - ord("A")]
        except IndexError:
            left_out["answer names no option"] += 1
            continue
        target = {"answer": letter, "options": options, "answer_text": options[letter]}
        meta = {"No": item["No"], "category": category, "index2ans": options}
        text = prompts.format_mcq(item["question"], options)
        samples.append(Sample(str(item["No"]), (str(image),), messages(text), target, meta))
    if left_out["image missing"] and not samples:
        raise FileNotFoundError(
            f"PathMMU {category}: the images of all {left_out['image missing']} questions are missing under "
            f"{file.parent / 'images'}; download them (some sources are fetched separately under their own licences)"
        )
    if any(left_out.values()):
        total = sum(left_out.values()) + len(samples)
        reasons = ", ".join(f"{n} {why}" for why, n in left_out.items() if n)
        logger.warning("PathMMU %s: %d of %d questions left out, as PathMMU's code does (%s)", category,
                       sum(left_out.values()), total, reasons)  # fmt: skip
    return samples, left_out


def load_pathmmu(
    path: str | Path,
    category: str = "PubMed_test_tiny",
    limit: int | None = None,
) -> list[Sample]:
    """Samples of one PathMMU category (``<Source>_<split>``, e.g. ``Atlas_test``) from ``data.json``.

    ``path`` is ``data.json`` or the folder holding it and ``images/``. The option texts (shown in
    the prompt and compared by the accuracy) are PathMMU's ``split(')')[1]``; the questions PathMMU's
    own code leaves out (image missing, an option without ``)``, an answer naming no option) are left
    out here too, with a warning (:data:`PATHMMU_LEFT_OUT`). The question is PathMMU's question and options in
    Patho-R1's ``" /n "`` layout (:func:`~domains.medical.prompts.format_mcq`), raw: the system prompt is the
    evaluated or trained entry's (``patho-r1-7b``, :func:`messages`).
    """
    return pathmmu_samples(path, category, limit)[0]


#: Fields every PathMMU question has, and their JSON types.
_PATHMMU_FIELDS = {"No": (int, str), "question": (str,), "options": (list,), "answer": (str,), "img": (str,)}


def _read_pathmmu(file: Path) -> dict[str, dict[str, list[Any]]]:
    """``data.json`` as ``{source: {split: [question, ...]}}``, or a ValueError naming what is wrong."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{file} is not valid JSON ({err}); expected PathMMU's data.json") from err
    shape_ok = isinstance(data, dict) and all(
        isinstance(splits, dict) and all(isinstance(items, list) for items in splits.values())
        for splits in data.values()
    )
    if not shape_ok:
        raise ValueError(
            f"{file} must map source -> split -> list of questions ({{\"PubMed\": {{\"test_tiny\": [...]}}}}), "
            f"got a {type(data).__name__} of another shape"
        )
    return data


def _check_pathmmu_item(item: Any, where: str) -> None:
    if not isinstance(item, dict):
        raise ValueError(f"{where}: a PathMMU question is a JSON object, got {item!r:.80}")  # noqa: TRY004 - bad file content
    for key, types in _PATHMMU_FIELDS.items():
        if not isinstance(item.get(key), types):
            raise ValueError(  # noqa: TRY004 - bad file content
                f"{where}: field {key!r} must be {' or '.join(t.__name__ for t in types)}, got {item.get(key)!r:.80} "
                f"(fields present: {sorted(item)})"
            )
    if not all(isinstance(option, str) for option in item["options"]):
        raise ValueError(f"{where}: options must be strings like '(A) text', got {item['options']!r:.120}")


# --- U2-Bench ----------------------------------------------------------------------------------


def read_table(path: str | Path) -> pd.DataFrame:
    """A U2-Bench table (``.tsv``, ``.csv`` or ``.xlsx``) as a DataFrame, read as the evalkit reads it.

    pandas' default parsing (ground-truth types inferred, empty/``null`` cells as NaN) is what the
    evalkit's ``pd.read_excel`` path does; model answers stay text (``"2"`` is not turned into 2),
    as they are in the spreadsheet cells VLMEvalKit writes.
    """
    import pandas as pd

    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"U2-Bench table not found: {file}")
    answers = {"response": str, "prediction": str}
    if file.suffix == ".xlsx":
        return pd.read_excel(file, dtype=answers)
    return pd.read_csv(file, sep="," if file.suffix == ".csv" else "\t", dtype=answers)


def _first_value(value: Any) -> Any:
    """The evalkit's ``extract_coordinates``: first value of a (single-quoted) JSON dict or list of dicts."""
    if not isinstance(value, str):
        return value
    try:
        data = json.loads(value.replace("'", '"'))
        return next(iter(data.values())) if isinstance(data, dict) else next(iter(data[0].values()))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def u2bench_position(value: Any) -> str:
    """Ground-truth position label of a ``gt_bbox``/``keypoints`` cell (``get_bounding_box_location_v1``).

    The cell holds normalised ``[cx, cy, (w, h)]``; anything unreadable (NaN and infinite
    coordinates included) is ``"not visible"``.
    """
    coords = _first_value(value)
    if not isinstance(coords, (list, tuple)) or len(coords) < 2:
        return NOT_VISIBLE
    try:
        cx, cy = float(coords[0]), float(coords[1])
    except (TypeError, ValueError):
        return NOT_VISIBLE
    return position_label(cx, cy) if math.isfinite(cx) and math.isfinite(cy) else NOT_VISIBLE


def u2bench_measurement(value: Any, dataset: str) -> float | None:
    """Ground-truth number of a ``measurement`` cell (``extract_mea``); ``None`` when absent, unreadable
    or not finite."""
    if isinstance(value, list):
        value = value[0]
    if not isinstance(value, str):
        return None
    try:
        data = json.loads(value.replace("'", '"'))
        if isinstance(data, dict):
            key = MEASUREMENT_KEYS.get(str(dataset), "fat value")
            found = next(iter(data[key])) if str(dataset) == "27" else data[key]
        elif isinstance(data, list):
            found = next(iter(data[0].values()))
        else:
            return None
        number = float(found)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class U2Task:
    """One task of the U2-Bench release: the evalkit rule that scores it and the released column that
    holds its ground truth."""

    rule: str
    """``cla``, ``seg``, ``measurement`` or ``report``: the evalkit's task type (its readme.md
    ``--task_type``), whose ``vlmeval/eval_func`` scorer applies."""
    column: str
    """The column of the released TSV with the truth (``an_explanation_of_the_columns.tsv``)."""


#: The eight task folders of the release (https://huggingface.co/datasets/DolphinAI/u2-bench/blob/main/README.md
#: at 63fdafb, "Dataset Structure" and "Tasks"). Scorers, all in dolphin-sound/u2-bench-evalkit@782350b:
#: ``cla_eval.model_eval`` for the two classification tasks; ``seg_eval_v1.1.new_seg_eval`` for the
#: three detection tasks ("locate ... with spatial classification"), on ``gt_bbox`` or ``keypoints``
#: (vlmeval/eval_func/seg_eval_v1.1.py:70-73); ``measure_eval_v1.2.meaeval`` for clinical values;
#: ``report_eval.report_eval`` for both text tasks (the evalkit scores captions and reports alike:
#: vlmeval/dataset/image_report.py:77-97, 112-121). Truth columns: ``class_label``, ``gt_bbox``,
#: ``keypoints``, ``measurement``, ``report``, ``caption``
#: (https://huggingface.co/datasets/DolphinAI/u2-bench/commit/6b74ff015a8bae4220f675c7a174540c7ef49bf3).
U2_TASKS: dict[str, U2Task] = {
    "disease_diagnosis": U2Task("cla", "class_label"),
    "view_recognition_and_assessment": U2Task("cla", "class_label"),
    "lesion_localisation": U2Task("seg", "gt_bbox"),
    "organ_detection": U2Task("seg", "gt_bbox"),
    "keypoint_detection": U2Task("seg", "keypoints"),
    "clinical_value_estimation": U2Task("measurement", "measurement"),
    "report_generation": U2Task("report", "report"),
    "caption_generation": U2Task("report", "caption"),
}
#: The evalkit's task types as short names, each for the folder it scores first.
U2_ALIASES = {
    "cla": "disease_diagnosis",
    "seg": "lesion_localisation",
    "measurement": "clinical_value_estimation",
    "report": "report_generation",
}


def u2_task(name: str) -> tuple[str, U2Task]:
    """The folder name and :class:`U2Task` of a task name (a folder of the release or an evalkit alias)."""
    folder = U2_ALIASES.get(name, name)
    if folder not in U2_TASKS:
        raise ValueError(f"U2-Bench task must be one of {[*U2_TASKS, *U2_ALIASES]}, got {name!r}")
    return folder, U2_TASKS[folder]


def _filled(frame: pd.DataFrame, column: str) -> bool:
    return column in frame.columns and bool(frame[column].notna().any())


def truth_column(frame: pd.DataFrame, task: str) -> str:
    """The ground-truth column of a ``task`` table.

    A released file may carry every column of the release, empty where its task has no use for them
    (the dataset viewer of DolphinAI/u2-bench shows one schema for all folders). A task whose column is
    missing, or empty in every row while another task's column is filled, is a ValueError naming the
    task that does fit (the evalkit's ``new_seg_eval`` would silently score an empty ``gt_bbox`` of a
    keypoint table as "not visible" everywhere: seg_eval_v1.1.py:138).
    """
    folder, spec = u2_task(task)
    filled = {s.column: t for t, s in U2_TASKS.items() if _filled(frame, s.column)}
    if spec.column in filled or (spec.column in frame.columns and not filled):
        return spec.column
    where = (f"is empty in every row; this table fills {sorted(filled)} (--data "
             + ", ".join(f"u2bench-{t}" for t in dict.fromkeys(filled.values())) + ")"
             if filled else f"is missing; this table has {list(frame.columns)}")  # fmt: skip
    raise ValueError(f"the U2-Bench task {folder} reads the column {spec.column!r}, which {where}")


def dataset_id(value: Any) -> str | None:
    """U2-Bench's dataset number, two digits, from a ``dataset_name`` cell (``"10.FPUS23"`` -> ``"10"``)
    or a file name (``18_1.Ultrasound_Heart...tsv`` -> ``"18"``); ``None`` when it starts with none."""
    match = re.match(r"\s*(\d+)", value) if isinstance(value, str) else None
    return str(int(match.group(1))).zfill(2) if match else None


def row_datasets(frame: pd.DataFrame, path: str | Path, dataset: str | None = None) -> list[str]:
    """Each row's dataset id: ``dataset`` when given, else the row's ``dataset_name``, else the file name's
    number (the evalkit keys its prompts and measurement ranges by it), else ``""``."""
    from_name = dataset_id(Path(path).name) or ""
    names = frame["dataset_name"] if "dataset_name" in frame.columns else [None] * len(frame)
    return [dataset or dataset_id(name) or from_name for name in names]


def _u2_target(cell: Any, rule: str, dataset: str) -> dict[str, Any]:
    if rule == "cla":
        return {"label": str(cell)}
    if rule == "seg":
        return {"position": u2bench_position(cell)}
    if rule == "measurement":
        return {"value": u2bench_measurement(cell, dataset), "dataset": dataset}
    return {"report": str(cell)}


def _u2_image(row: Mapping[str, Any], where: str) -> bytes:
    """The row's ``img_data`` (base64, as released), still encoded: its header is checked here and its
    pixels are decoded when the sample is used (a table of large images would not fit in memory decoded)."""
    cell = row.get("img_data")
    if not isinstance(cell, str) or not cell.strip():
        raise ValueError(f"{where} has no 'img_data' (the released tables hold each image there, base64)")
    try:
        encoded = base64.b64decode(cell, validate=True)
    except binascii.Error as err:
        raise ValueError(f"{where}: the 'img_data' cell is not base64 ({err})") from err
    try:
        image_size(encoded)
    except ImageError as err:
        raise ValueError(f"{where}: {err}") from err
    return encoded


def load_u2bench_tsv(
    path: str | Path,
    task: str,
    dataset: str | None = None,
    prompt_file: str | Path | None = None,
    limit: int | None = None,
    evalkit: str | Path | None = None,
    prompts: PromptSource = "evalkit",
) -> list[Sample]:
    """Samples of one table of the U2-Bench release (:data:`U2_TASKS`: a folder name, or ``cla``,
    ``seg``, ``measurement``, ``report``).

    Images come from ``img_data`` (base64), the truth from the task's column, the dataset id from
    ``dataset_name`` (``dataset`` overrides it). Prompts are the evalkit's (:mod:`domains.medical.u2_prompts`):
    ``cla``/``measurement`` from ``prompt_file`` or the ``evalkit`` checkout's JSON, the others as its code builds
    them; ``prompts="row"`` asks the release's ``prompt`` cells instead. The prompt is the question, raw: a system
    prompt is the evaluated or trained entry's (:func:`messages`). Each sample's ``meta["prompts"]`` says which.
    """
    folder, spec = u2_task(task)
    frame = read_table(path)
    frame = frame.head(limit) if limit else frame
    column = truth_column(frame, folder)
    asked = U2Prompts.choose(spec.rule, prompts, evalkit, prompt_file)
    samples = []
    for i, (row, ds) in enumerate(zip(frame.to_dict("records"), row_datasets(frame, path, dataset))):
        sample_id = str(row.get("index", i))
        text = asked.question(row, spec.rule, ds)
        target = _u2_target(row[column], spec.rule, ds)
        meta = {"u2_task": spec.rule, "task": folder, "dataset": ds, "row": i, "prompts": asked.record(spec.rule)}
        image = _u2_image(row, f"{Path(path).name} row {i}")
        samples.append(Sample(sample_id, (image,), messages(text), target, meta))
    return samples
