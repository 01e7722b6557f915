"""GEdit-Bench in its published layout (the ``stepfun-ai/GEdit-Bench`` dataset's parquet files), scored as GEdit scores.

Each row (Step1X-Edit, arXiv 2504.17761; the dataset card and ``GEdit-Bench/`` scripts of
stepfun-ai/Step1X-Edit) holds ``key``, ``task_type`` (11 kinds: ``background_change`` ... ``tone_transfer``),
``instruction``, ``instruction_language`` (``en`` / ``cn``), ``input_image`` and ``input_image_raw`` (image
structs ``{"bytes", "path"}``) and ``Intersection_exist`` (the row belongs to the intersection subset the
paper also reports). ``--path`` is the dataset folder (its ``data/*.parquet``) or one parquet file.

The judge compares the edit against ``input_image``, GEdit's ``_SRCIMG`` (stepfun-ai/Step1X-Edit@570eba6:
GEdit-Bench/generate_image_example.py:41, 48, 53), with the edit first resized to that image's size
(test_gedit_score.py:25-34, :func:`judged_edit`). What the editor gets is the model's protocol: EditScore's
OmniGen2 runs edit ``input_image`` (VectorSpaceLab/EditScore@6e0f1b9:examples/OmniGen2-RL/evaluation/GEdit-Bench/
inference.py:401-405, the default here); GEdit's example feeds ``input_image_raw`` resized to about 512 x 512
(generate_image_example.py:45-46; ``edit_source="input_image_raw"`` gives the raw image, a pipeline sizes it).

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
#: The image the judge compares against, then the one the editor may get instead (``edit_source``).
SOURCE, RAW_SOURCE = "input_image", "input_image_raw"
COLUMNS = ("key", "task_type", "instruction", "instruction_language", SOURCE, RAW_SOURCE, "Intersection_exist")


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


def _image_bytes(cell: Any, key: str, column: str) -> bytes:
    if isinstance(cell, Mapping) and cell.get("bytes"):
        return cell["bytes"]
    if isinstance(cell, (bytes, bytearray)):
        return bytes(cell)
    raise ValueError(f"GEdit-Bench row {key}: {column} holds no image bytes")


def load_gedit(path: str | Path, limit: int | None = None, *, language: str = "en", intersection_only: bool = False,
               edit_source: str = SOURCE) -> list[Sample]:  # fmt: skip
    """Samples of one language (``en``, ``cn`` or ``all``), the instruction as the prompt.

    ``images[0]`` is ``input_image``, the source the judge sees; with ``edit_source="input_image_raw"``,
    ``images[1]`` is the raw image the editor gets instead (the editor edits ``images[-1]``).
    """
    import pyarrow.parquet as pq

    if language not in ("en", "cn", "all"):
        raise ValueError(f"language must be en, cn or all, got {language!r}")
    if edit_source not in (SOURCE, RAW_SOURCE):
        raise ValueError(f"edit_source must be {SOURCE} or {RAW_SOURCE}, got {edit_source!r}")
    columns = (SOURCE,) if edit_source == SOURCE else (SOURCE, RAW_SOURCE)
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
                images=tuple(_image_bytes(row[column], key, column) for column in columns), prompt=row["instruction"],
                target={"instruction": row["instruction"]},
                meta={"task_type": row["task_type"], "language": row["instruction_language"], "key": key,
                      "intersection": bool(row["Intersection_exist"])},
            ))  # fmt: skip
            if limit is not None and len(samples) >= limit:
                return samples
    return samples


def judged_edit(edited: Any, source: Any) -> Any:
    """The edit as GEdit's judge sees it: RGB, resized to the source image's size.

    stepfun-ai/Step1X-Edit@570eba6:GEdit-Bench/test_gedit_score.py:33-34 ``.convert("RGB").resize(raw.size)``;
    PIL's filter for an RGB ``resize`` without one is bicubic (their environment pins pillow 11.2.1,
    qwen25vl_environment.yml), named here so the choice does not ride on a default.
    """
    from PIL import Image

    return edited.convert("RGB").resize(source.size, Image.Resampling.BICUBIC)


def _means(group: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """SC, PQ and O of a group, O per sample from its SC and PQ (calculate_statistics.py:56-68)."""
    overall = [math.sqrt(r["sc"] * r["pq"]) for r in group]
    return {"sc": sum(r["sc"] for r in group) / len(group), "pq": sum(r["pq"] for r in group) / len(group),
            "overall": sum(overall) / len(overall)}  # fmt: skip


def _headline(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The mean of the 11 task groups' means, or ``None`` with the groups that have no score.

    GEdit's average runs over all of ``GROUPS`` (calculate_statistics.py:9-11, 84-117): a group with no row
    gives ``np.mean([])`` = NaN and so a NaN average, which is reported here as ``None`` and a sentence, not as
    an average over the groups that are present.
    """
    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_task.setdefault(row["task_type"], []).append(row)
    means = {task: _means(group) for task, group in sorted(by_task.items())}
    missing = [task for task in TASK_TYPES if task not in means]
    if missing:
        return {"sc": None, "pq": None, "overall": None, "missing_groups": missing, "by_task": means,
                "headline": f"no GEdit-Bench average: it needs all {len(TASK_TYPES)} task groups and "
                            f"{len(missing)} have no scored edit ({', '.join(missing)})"}  # fmt: skip
    return {**{k: sum(means[t][k] for t in TASK_TYPES) / len(TASK_TYPES) for k in ("sc", "pq", "overall")},
            "missing_groups": [], "by_task": means}  # fmt: skip


def summarise(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """GEdit-Bench's headline SC, PQ and O, its intersection subset's, the per-sample means and each task's.

    The headline is GEdit-Bench's own statistic (stepfun-ai/Step1X-Edit@570eba6:GEdit-Bench/calculate_statistics.py:
    13-122; VectorSpaceLab/EditScore@6e0f1b9:examples/OmniGen2-RL/evaluation/GEdit-Bench/calculate_statistics.py:
    45-153 is the same): per sample ``O = sqrt(SC * PQ)`` from the row's SC and PQ, the mean of each task group,
    then the mean of the 11 group means, for SC, PQ and O alike; ``intersection`` is the same over the
    ``Intersection_exist`` rows (L61-64, 113-117). Their statistic is per language (L51-54): rows of several
    languages are summarised per language under ``by_language``. ``sample_mean`` holds the three means over
    samples (each task weighted by its row count). Rows without a score (the judge failed) are left out, as
    their scorer leaves a failed row out of its CSV (test_gedit_score.py:57-59, 139-142).
    """
    languages = sorted({str(r["language"]) for r in rows if r.get("language")})
    if len(languages) > 1:
        return {"n": len(rows), "sc": None, "pq": None, "overall": None,
                "headline": "GEdit-Bench states its average per language: see by_language",
                "by_language": {lang: summarise([r for r in rows if r.get("language") == lang])
                                for lang in languages}}  # fmt: skip
    scored = [r for r in rows if r.get("overall") is not None]
    if not scored:
        return {"n": len(rows), "scored": 0, **_headline([])}
    intersection = _headline([r for r in scored if r.get("intersection")])
    return {"n": len(rows), "scored": len(scored), **_headline(scored), "sample_mean": _means(scored),
            "intersection": {k: v for k, v in intersection.items() if k != "by_task"}}  # fmt: skip


#: ``--use_ori_neg_prompt_template``: the system turn and token budget the authors' OmniGen2 GEdit-Bench runs encode
#: their (empty) negative prompt with (VectorSpaceLab/EditScore@6e0f1b9:examples/OmniGen2-RL/evaluation/GEdit-Bench/
#: inference.py:296-310, passed by omnigen2.sh:81-82 and omnigen2_edit_rl_single_machine_editscore7b_step500.sh:84-85).
ORI_NEGATIVE_SYSTEM, ORI_NEGATIVE_MAX_TOKENS = "You are a helpful assistant.", 1024


def omnigen2_negative_prompt(tokenizer: Any, negative_prompt: str = "") -> str:
    """The negative prompt as ``--use_ori_neg_prompt_template`` writes it, through the tokenizer's chat template.

    Without the flag, OmniGen2's pipeline wraps it in its own system turn ("You are a helpful assistant that
    generates high-quality images based on user instructions.": VectorSpaceLab/OmniGen2@0f72fa9:omnigen2/pipelines/
    omnigen2/pipeline_omnigen2.py:341-350, 418), another text and so another unconditional branch.
    """
    messages = [{"role": "system", "content": ORI_NEGATIVE_SYSTEM}, {"role": "user", "content": negative_prompt}]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)


def omnigen2_negative_prompt_embeds(pipeline: Any, device: Any, negative_prompt: str = "") -> dict[str, Any]:
    """Keyword arguments for an ``OmniGen2Pipeline`` call (the authors' class: diffusers has none) that apply the
    template as their ``inference.py`` does: the text encoded at 1,024 tokens, passed as embeddings and mask."""
    text = omnigen2_negative_prompt(pipeline.processor.tokenizer, negative_prompt)
    embeds, mask = pipeline._get_qwen2_prompt_embeds(prompt=text, device=device,
                                                     max_sequence_length=ORI_NEGATIVE_MAX_TOKENS)
    return {"negative_prompt_embeds": embeds, "negative_prompt_attention_mask": mask}
