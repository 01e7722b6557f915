"""GEdit-Bench in its published layout: the ``stepfun-ai/GEdit-Bench`` dataset's parquet files.

Each row (Step1X-Edit, arXiv 2504.17761; the dataset card and ``GEdit-Bench/`` scripts of
stepfun-ai/Step1X-Edit) holds ``key``, ``task_type`` (11 kinds: ``background_change`` ... ``tone_transfer``),
``instruction``, ``instruction_language`` (``en`` / ``cn``), ``input_image`` and ``input_image_raw`` (image
structs ``{"bytes", "path"}``) and ``Intersection_exist`` (the row belongs to the intersection subset the
paper also reports). ``--path`` is the dataset folder (its ``data/*.parquet``) or one parquet file.

Scores are EditScore's (the ``editscore`` reward): SC, PQ and O on 0-10 per edit, as GEdit-Bench reports
its VIEScore columns (G_SC, G_PQ, G_O). The headline is GEdit-Bench's statistic, the mean of the 11 task
groups' means (:func:`summarise`); ``sample_mean`` (over samples) and ``by_task`` are reported beside it.
GEdit-Bench's own judge is GPT-4.1 / Qwen2.5-VL-72B with VIEScore prompts, so numbers here are EditScore-judged,
not the paper's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from zoo.data import Sample

TASK_TYPES = ("background_change", "color_alter", "material_alter", "motion_change", "ps_human", "style_change",
              "subject-add", "subject-remove", "subject-replace", "text_change", "tone_transfer")  # fmt: skip
COLUMNS = ("key", "task_type", "instruction", "instruction_language", "input_image_raw", "Intersection_exist")


def parquet_files(path: str | Path) -> list[Path]:
    """The parquet files of a GEdit-Bench folder (``data/`` or the folder itself), or the one file given."""
    path = Path(path).expanduser()
    if path.is_file():
        return [path]
    files = sorted(path.glob("data/*.parquet")) or sorted(path.glob("*.parquet"))
    if not files:
        raise FileNotFoundError(f"no GEdit-Bench parquet files in {path} (expected data/*.parquet, as the "
                                "stepfun-ai/GEdit-Bench dataset repository holds them)")  # fmt: skip
    return files


def _image_bytes(cell: Any, key: str) -> bytes:
    if isinstance(cell, Mapping) and cell.get("bytes"):
        return cell["bytes"]
    if isinstance(cell, (bytes, bytearray)):
        return bytes(cell)
    raise ValueError(f"GEdit-Bench row {key}: input_image_raw holds no image bytes")


def load_gedit(path: str | Path, limit: int | None = None, *, language: str = "en",
               intersection_only: bool = False) -> list[Sample]:  # fmt: skip
    """Samples of one language (``en``, ``cn`` or ``all``): the source image, the instruction as the prompt."""
    import pyarrow.parquet as pq

    if language not in ("en", "cn", "all"):
        raise ValueError(f"language must be en, cn or all, got {language!r}")
    samples = []
    for file in parquet_files(path):
        table = pq.read_table(file)
        missing = [c for c in COLUMNS if c not in table.column_names]
        if missing:
            raise ValueError(f"{file} is not GEdit-Bench: it lacks the column(s) {', '.join(missing)}")
        for row in table.select(list(COLUMNS)).to_pylist():
            if language != "all" and row["instruction_language"] != language:
                continue
            if intersection_only and not row["Intersection_exist"]:
                continue
            key = str(row["key"])
            samples.append(Sample(
                id=f"{row['task_type']}/{row['instruction_language']}/{key}",
                images=(_image_bytes(row["input_image_raw"], key),), prompt=row["instruction"],
                target={"instruction": row["instruction"]},
                meta={"task_type": row["task_type"], "language": row["instruction_language"], "key": key,
                      "intersection": bool(row["Intersection_exist"])},
            ))  # fmt: skip
            if limit is not None and len(samples) >= limit:
                return samples
    return samples


def summarise(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """GEdit-Bench's headline SC, PQ and O, the per-sample means beside them, and each task type's means.

    The headline is GEdit-Bench's own statistic (VectorSpaceLab/EditScore@6e0f1b9:examples/OmniGen2-RL/evaluation/
    GEdit-Bench/calculate_statistics.py:45-153, the same as the Step1X-Edit/BAGEL ``calculate_statistics.py`` that
    scores the paper's table): per sample ``O = sqrt(SC * PQ)`` from the row's SC and PQ, the mean of each task
    group, then the mean of the group means, for SC, PQ and O alike. ``sample_mean`` holds the three means over
    samples (each task weighted by its row count). zoo: theirs averages all 11 groups (a missing one gives NaN);
    a run over fewer (``--limit``) averages the groups it has, and ``groups`` says how many.
    """
    scored = [r for r in rows if r.get("overall") is not None]
    if not scored:
        return {"n": len(rows), "scored": 0}

    def means(group: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        overall = [math.sqrt(r["sc"] * r["pq"]) for r in group]
        return {"sc": sum(r["sc"] for r in group) / len(group), "pq": sum(r["pq"] for r in group) / len(group),
                "overall": sum(overall) / len(overall)}  # fmt: skip

    tasks: dict[str, list[Mapping[str, Any]]] = {}
    for row in scored:
        tasks.setdefault(row["task_type"], []).append(row)
    by_task = {task: means(group) for task, group in sorted(tasks.items())}
    headline = {k: sum(m[k] for m in by_task.values()) / len(by_task) for k in ("sc", "pq", "overall")}
    return {"n": len(rows), "scored": len(scored), "groups": len(by_task), **headline,
            "sample_mean": means(scored), "by_task": by_task}  # fmt: skip
