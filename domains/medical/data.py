"""Medical data as :class:`~zoo.data.Sample` lists: PathMMU json, U2-Bench TSV, synthetic images.

Formats (read in the benchmarks' own code, see the docstrings below):

* PathMMU ``data.json``: ``{"PubMed": {"test_tiny": [{"No", "question", "options": ["(A) ..."],
  "answer": "D", "img": "relative/path.jpg"}, ...]}}``, images under ``<root>/images/``
  (PathMMU-Benchmark/PathMMU ``eval/utils/data_utils.py``).
* U2-Bench: VLMEvalKit-style TSV, one row per case with ``index``, ``image`` (base64) or
  ``img_path``, ``anatomy_location`` and the task's ground-truth column: ``class``/``classes``
  (``cla``), ``gt_bbox``/``keypoints`` (``seg``), ``measurement`` (``measurement``),
  ``caption`` (``report``) (dolphin-sound/u2-bench-evalkit ``vlmeval/eval_func/*.py``).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from domains.medical import prompts
from domains.medical.metrics import MEASUREMENT_KEYS, NOT_VISIBLE, box_position_label, position_label
from domains.medical.synthetic import TISSUE_CLASSES, US_CLASSES, pathology_image, ultrasound_case
from zoo.data import Sample, path_under
from zoo.images import ImageError, image_size

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)

U2_TASKS = ("cla", "seg", "measurement", "report")
US_TASKS = ("classification", "localization", "measurement", "report")
_U2_FROM_US = dict(zip(US_TASKS, U2_TASKS))


def messages(text: str, system: str | None = None) -> list[dict[str, Any]]:
    """Chat messages with one image placeholder then ``text`` (the image travels in ``Sample.images``)."""
    user = {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}
    return ([{"role": "system", "content": system}] if system else []) + [user]


# --- synthetic ---------------------------------------------------------------------------------


def synthetic_pathology(
    n: int = 8, task: str = "mcq", seed: int = 0, size: int = 64, system: str | None = prompts.PATHO_COT_SYSTEM
) -> list[Sample]:
    """``n`` H&E-like patches with a tissue-pattern question: ``mcq`` (4 options) or ``vqa`` (open)."""
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
        samples.append(Sample(f"synth-patho-{task}-{i}", (image,), messages(text, system), target, {"task": task}))
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
    system: str | None = prompts.US_REASONING_SYSTEM,
) -> list[Sample]:
    """``n`` speckled B-mode-like frames for one of the four U2-Bench task types (:data:`US_TASKS`),
    or ``"mixed"``: the four in turn, as a multi-task RL stage trains on them."""
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
        samples.append(Sample(f"synth-us-{task}-{i}", (case.image,), messages(text, system), target, meta))
    return samples


# --- PathMMU -----------------------------------------------------------------------------------


def pathmmu_option_text(option: str) -> str:
    """PathMMU's option content: ``option.split(')')[1].strip()`` (construct_prompt), kept verbatim
    because its accuracy compares these strings; ``"(A) x (y) z"`` gives ``"x (y"``."""
    parts = option.split(")")
    if len(parts) < 2:
        raise ValueError(f"PathMMU options look like '(A) text', got {option!r}")
    return parts[1].strip()


def load_pathmmu(
    path: str | Path,
    category: str = "PubMed_test_tiny",
    system: str | None = prompts.PATHO_COT_SYSTEM,
    limit: int | None = None,
) -> list[Sample]:
    """Samples of one PathMMU category (``<Source>_<split>``, e.g. ``Atlas_test``) from ``data.json``.

    ``path`` is ``data.json`` or the folder holding it and ``images/``. Questions whose image is
    missing are skipped with a warning, as PathMMU's loader does (some sources must be fetched
    separately under their own licences).
    """
    file = Path(path)
    file = file / "data.json" if file.is_dir() else file
    if not file.is_file():
        raise FileNotFoundError(f"PathMMU data.json not found at {file}; pass the file or its folder")
    data = _read_pathmmu(file)
    source, _, split = category.partition("_")
    if source not in data or split not in data[source]:
        known = [f"{s}_{sp}" for s, splits in data.items() for sp in splits]
        raise ValueError(f"PathMMU category {category!r} not in {file.name}; available: {known}")
    samples, missing = [], 0
    for i, item in enumerate(data[source][split][:limit]):
        where = f"{file.name} {category}[{i}]"
        _check_pathmmu_item(item, where)
        image = path_under(file.parent / "images", item["img"], where)
        if not image.is_file():
            missing += 1
            continue
        letters = [chr(ord("A") + i) for i in range(len(item["options"]))]
        options = {k: re.sub(r"^\s*\([A-Z]\)\s*", "", o).strip() for k, o in zip(letters, item["options"])}
        index2ans = {k: pathmmu_option_text(o) for k, o in zip(letters, item["options"])}
        letter = str(item["answer"]).strip()[:1].upper()
        if letter not in index2ans:
            raise ValueError(f"PathMMU {category} question {item.get('No')!r}: answer {item['answer']!r} names none of "
                             f"the options {letters}; check {file}")
        target = {"answer": letter, "options": options, "answer_text": index2ans[letter]}
        meta = {"No": item["No"], "category": category, "index2ans": index2ans}
        text = prompts.format_mcq(item["question"], options)
        samples.append(Sample(str(item["No"]), (str(image),), messages(text, system), target, meta))
    if missing and not samples:
        raise FileNotFoundError(
            f"PathMMU {category}: the images of all {missing} questions are missing under {file.parent / 'images'}; "
            "download them (some sources are fetched separately under their own licences)"
        )
    if missing:
        total = missing + len(samples)
        logger.warning("PathMMU %s: %d of %d questions skipped, image missing", category, missing, total)
    return samples


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


#: Ground-truth column of each U2-Bench task, the first present of these (the evalkit's names).
TRUTH_COLUMNS = {
    "cla": ("classes", "class", "cla_ans"),
    "seg": ("gt_bbox", "keypoints"),
    "measurement": ("measurement_ans", "measurement"),
    "report": ("caption", "cap_ans"),
}
_TASK_NAMES = {"cla": "classification", "seg": "localisation", "measurement": "measurement", "report": "report"}


def truth_column(frame: pd.DataFrame, task: str) -> str:
    """The ground-truth column of a ``task`` table; a table without one is a ValueError naming them."""
    for key in TRUTH_COLUMNS[task]:
        if key in frame.columns:
            return key
    names = " or ".join(repr(k) for k in TRUTH_COLUMNS[task])
    raise ValueError(f"a U2-Bench {_TASK_NAMES[task]} table needs a {names} column; this one has {list(frame.columns)}")


def class_column(frame: pd.DataFrame) -> str:
    """The ground-truth column of a classification table (first of ``classes``, ``class``, ``cla_ans``)."""
    return truth_column(frame, "cla")


def _u2_target(row: Mapping[str, Any], task: str, dataset: str, column: str) -> dict[str, Any]:
    if task == "cla":
        return {"label": str(row[column])}
    if task == "seg":
        return {"position": u2bench_position(row[column])}
    if task == "measurement":
        return {"value": u2bench_measurement(row[column], dataset), "dataset": dataset}
    return {"report": str(row[column])}


def _u2_prompt(row: Mapping[str, Any], task: str, dataset: str, table_prompts: Mapping[str, str]) -> str:
    if isinstance(row.get("question"), str):
        return row["question"]
    if dataset in table_prompts:
        return table_prompts[dataset]
    anatomy = row.get("anatomy_location", "the region shown")
    if task == "seg":
        return prompts.U2BENCH_LOCALIZATION_PROMPT.format(anatomy=anatomy)
    if task == "report":
        return prompts.US_REPORT_TEMPLATE.format(anatomy=anatomy)
    raise ValueError(
        f"U2-Bench {task} dataset {dataset!r} has per-dataset prompts: put the evalkit's cla_prompt.json / "
        "mea_prompt.json next to the table (or pass prompt_file=), or add a 'question' column"
    )


def _u2_image(row: Mapping[str, Any], root: Path, where: str) -> bytes | str:
    """The row's image, still encoded: base64 cells become bytes whose header is checked here and whose
    pixels are decoded when the sample is used (a table of large images would not fit in memory decoded)."""
    if isinstance(row.get("image"), str) and len(row["image"]) > 64:
        try:
            encoded = base64.b64decode(row["image"], validate=True)
        except binascii.Error as err:
            raise ValueError(f"{where}: the 'image' cell is not base64 ({err})") from err
        try:
            image_size(encoded)
        except ImageError as err:
            raise ValueError(f"{where}: {err}") from err
        return encoded
    if isinstance(row.get("img_path"), str):
        return str(path_under(root, row["img_path"], where))
    raise ValueError(f"{where} has neither a base64 'image' nor an 'img_path'")


#: The evalkit's per-dataset prompt files (``vlmeval/dataset/``), looked for next to a table.
_PROMPT_FILES = {"cla": "cla_prompt.json", "measurement": "mea_prompt.json"}


def dataset_id_from_path(path: str | Path) -> str | None:
    """U2-Bench names tables by dataset number (``18_1.Ultrasound_Heart...tsv`` -> ``"18"``)."""
    match = re.match(r"(\d+)", Path(path).name)
    return str(int(match.group(1))).zfill(2) if match else None


def load_u2bench_tsv(
    path: str | Path,
    task: str,
    dataset: str | None = None,
    prompt_file: str | Path | None = None,
    system: str | None = None,
    limit: int | None = None,
) -> list[Sample]:
    """Samples of one U2-Bench table; ``task`` is ``cla``, ``seg``, ``measurement`` or ``report``.

    Prompts: a ``question`` column when the table has one; else, for ``cla``/``measurement``, the
    dataset's entry in ``prompt_file`` (default: the evalkit's ``cla_prompt.json`` /
    ``mea_prompt.json`` next to the table); else U2-Bench's localisation prompt / a report prompt.
    """
    if task not in U2_TASKS:
        raise ValueError(f"U2-Bench task must be one of {U2_TASKS}, got {task!r}")
    dataset = dataset or dataset_id_from_path(path) or ""
    frame = read_table(path)
    default_file = Path(path).parent / _PROMPT_FILES.get(task, "-")
    prompt_file = prompt_file or (default_file if default_file.is_file() else None)
    table_prompts = json.loads(Path(prompt_file).read_text(encoding="utf-8")) if prompt_file else {}
    column = truth_column(frame, task)
    samples = []
    for i, row in enumerate(frame.head(limit).to_dict("records") if limit else frame.to_dict("records")):
        sample_id = str(row.get("index", row.get("id", i)))
        text = _u2_prompt(row, task, dataset, table_prompts)
        target = _u2_target(row, task, dataset, column)
        meta = {"u2_task": task, "dataset": dataset, "row": i}
        image = _u2_image(row, Path(path).parent, f"{Path(path).name} row {i} (index {sample_id})")
        samples.append(Sample(sample_id, (image,), messages(text, system), target, meta))
    return samples
