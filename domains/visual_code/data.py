"""Chart, SVG and CAD code data as :class:`~zoo.data.Sample` lists, in the benchmarks' published formats.

* ChartMimic (ChartMimic/ChartMimic, ``dataset/ori_500/``): ``<name>.png`` next to ``<name>.py``,
  the reference chart and the matplotlib code that drew it (direct-mimic task).
* Plot2Code (TencentARC/Plot2Code on the Hub, split ``test``, 368 rows): columns ``image``,
  ``url``, ``code``, ``instruction``, read from the parquet export or a jsonl file (an image is
  a datasets ``{"bytes", "path"}`` struct, a base64 string or a path).
* VinciCoder's released RL set (``DocTron-Hub/VinciCoder-42k-RL``, the MSRL group's training data):
  columns ``problem``, ``answer``, ``images``, as VinciCoder's EasyR1 trainer reads them
  (:func:`load_vincicoder_rl`); the rows of one language (chart code is ``python``) are kept.
* SVG-Stack (``starvector/svg-stack``): columns ``Filename`` and ``Svg``
  (joanrod/star-vector ``starvector/data/stacksvg.py``); parquet or jsonl.
* Text2CAD: the annotation CSV's ``uid`` and one text level column (``abstract``, ``beginner``,
  ``intermediate``, ``expert``; column names UNVERIFIED beyond these), with an optional folder
  of CadQuery scripts ``<uid>.py`` as references (ExeCAD's CadQuery scripts are unpublished, so
  the zoo reads such a folder when one exists).

Each sample's ``target`` holds ``code`` (reference code), ``language`` (``matplotlib``, ``svg``,
``cadquery``) and, for image tasks, ``image``: the reference picture as a file path or a PNG
``data:`` URI, so targets stay JSON for TRL's dataset (:func:`rewards.code_render.reference_image`
reads both).

Questions are raw, as the data holds them: none (``""``) for a chart or an SVG picture, whose image is the
task; Plot2Code's instruction when asked for; a part's text description for text-to-CAD. The model's prompt is
its entry's: a recipe's ``model.entry`` wraps the question in it, as ``zoo.load`` does (``msrl``/``msrl-sft``:
MSRL's prompt; ``rlrf`` and ``svg-scenes-tiny``: the zoo's SVG prompt; ``cad-rl``: the zoo's CadQuery prompt;
:mod:`domains.visual_code.prompts`). VinciCoder's rows differ: each row's
``problem`` is a whole instruction written by the dataset's authors, so it is the question, kept as their
trainer reads it.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from domains.visual_code.synthetic import PALETTE, SHAPES, random_cad_part, random_chart_code, random_svg
from zoo.data import Sample

logger = logging.getLogger(__name__)


class DataFormatError(ValueError):
    """A file is not in the published format the loader reads; the message names what is missing."""


def data_uri(image: Any) -> str:
    """A PNG ``data:`` URI: the reference image inside a JSON-serialisable target (TRL's dataset)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _render_targets(kind: str, codes: list[str], size: int) -> list[Any]:
    """Reference images drawn by the same sandboxed renderer the rewards use."""
    from rewards.rendering import render_many

    results = render_many(kind, codes, size=(size, size))
    bad = [(i, r.error) for i, r in enumerate(results) if not r.ok]
    if bad:
        raise RuntimeError(f"synthetic {kind} references failed to render: {bad[:3]}")
    return [r.image for r in results]


# --- synthetic ---------------------------------------------------------------------------------


def synthetic_charts(n: int = 8, seed: int = 0, size: int = 64) -> list[Sample]:
    """``n`` random matplotlib charts with their code; no question (the chart is the task: MSRL's prompt is the
    ``msrl`` entry's)."""
    rng = np.random.default_rng(seed)
    made = [random_chart_code(rng) for _ in range(n)]
    images = _render_targets("matplotlib", [code for code, _ in made], size)
    return [Sample(f"synth-chart-{i}", (image,), "",
                   {"code": code, "language": "matplotlib", "image": data_uri(image)}, {"chart_type": facts["type"]})
            for i, ((code, facts), image) in enumerate(zip(made, images, strict=True))]


def synthetic_svgs(n: int = 8, seed: int = 0, size: int = 64, kind: str = "svg", shapes: tuple[int, int] = (2, 5),
                   kinds: tuple[str, ...] = SHAPES, colors: int = len(PALETTE), pixels: int | None = None,
                   compact: bool = False) -> list[Sample]:
    """``n`` random SVG scenes drawn on a ``size``-unit canvas and rendered at ``pixels`` px (default
    ``size``); ``kind`` is the renderer of the references (``svg`` or ``svg-skia``); ``shapes``,
    ``kinds``, ``colors`` and ``compact`` as in :func:`~domains.visual_code.synthetic.random_svg`. No question:
    the picture is the task (the SVG prompt is the ``rlrf`` / ``svg-scenes-tiny`` entry's)."""
    rng = np.random.default_rng(seed)
    codes = [random_svg(rng, size, tuple(shapes), tuple(kinds), colors, compact) for _ in range(n)]
    images = _render_targets(kind, codes, pixels or size)
    return [Sample(f"synth-svg-{i}", (image,), "",
                   {"code": code, "language": "svg", "image": data_uri(image)})
            for i, (code, image) in enumerate(zip(codes, images, strict=True))]


def synthetic_cad(n: int = 8, seed: int = 0) -> list[Sample]:
    """``n`` random CadQuery parts: the text description is the question (no image), the reference code in the
    target; the ``cad-rl`` entry puts the zoo's CadQuery prompt before it."""
    rng = np.random.default_rng(seed)
    parts = [random_cad_part(rng) for _ in range(n)]
    return [Sample(f"synth-cad-{i}", (), text,
                   {"code": code, "language": "cadquery", "description": text})
            for i, (code, text) in enumerate(parts)]


# --- published formats -------------------------------------------------------------------------


#: ChartMimic's Direct Mimic sets (ChartMimic/ChartMimic@c9e149c:README.md:157-182): ``direct_600`` and ``direct_1800``
#: of the current version (arXiv 2406.09961v2), ``ori_500`` of the old one (its configs' default,
#: eval_configs/direct_generation.yaml). A ``dataset/`` folder holding several is read at the first, the current one.
CHARTMIMIC_SETS = ("direct_600", "direct_1800", "ori_500")


def chartmimic_folder(path: str | Path, chartmimic_set: str | None = None) -> Path:
    """The folder of one Direct Mimic set: ``path`` itself when it is that set (``dataset/ori_500``), else
    ``path/<chartmimic_set>`` of ChartMimic's ``dataset/`` (default ``direct_600``)."""
    root = Path(path).resolve()  # absolute: targets travel through TRL's dataset to the reward
    if chartmimic_set is not None and chartmimic_set not in CHARTMIMIC_SETS:
        raise DataFormatError(f"ChartMimic set {chartmimic_set!r} is not one of {', '.join(CHARTMIMIC_SETS)}")
    if not root.is_dir():
        raise DataFormatError(f"ChartMimic path {root} is not a folder (expected ChartMimic's dataset/ or one of its "
                              f"sets, {', '.join(CHARTMIMIC_SETS)})")  # fmt: skip
    if root.name in CHARTMIMIC_SETS or (chartmimic_set is None and any(root.glob("*.png"))):
        if chartmimic_set not in (None, root.name):
            raise DataFormatError(f"{root} is ChartMimic's {root.name} set, not {chartmimic_set}: pass its dataset/ "
                                  "folder to choose a set")  # fmt: skip
        return root
    chosen = chartmimic_set or next((name for name in CHARTMIMIC_SETS if (root / name).is_dir()), CHARTMIMIC_SETS[0])
    if not (root / chosen).is_dir():
        found = [name for name in CHARTMIMIC_SETS if (root / name).is_dir()] or ["none"]
        raise DataFormatError(f"{root} has no {chosen}/ folder (sets found: {', '.join(found)}); download the set as "
                              "ChartMimic's README says")  # fmt: skip
    return root / chosen


def load_chartmimic(path: str | Path, limit: int | None = None, chartmimic_set: str | None = None) -> list[Sample]:
    """ChartMimic direct-mimic pairs from a set's folder of ``<name>.png`` + ``<name>.py`` (:func:`chartmimic_folder`).

    These are ChartMimic's evaluation data, listed in the domain's ``eval_datasets``: a recipe that trains on them
    is refused unless it says why. No question: the chart is the task, and the evaluated entry's prompt asks for its
    code (MSRL's for ``msrl``)."""
    root = chartmimic_folder(path, chartmimic_set)
    pairs = [(png, png.with_suffix(".py")) for png in sorted(root.glob("*.png")) if png.with_suffix(".py").is_file()]
    if not pairs:
        raise DataFormatError(f"{root} holds no <name>.png with a matching <name>.py (the layout of ChartMimic's sets)")
    samples = [Sample(png.stem, (str(png),), "",
                      {"code": py.read_text(encoding="utf-8"), "language": "matplotlib", "image": str(png)},
                      {"chart_type": png.stem.rsplit("_", 1)[0], "set": root.name}) for png, py in pairs]
    return samples[:limit]


def iter_rows(path: str | Path) -> Iterator[Mapping[str, Any]]:
    """The rows of a parquet or JSON-lines file, read in batches so a large table of images is not
    decoded whole."""
    file = Path(path)
    if not file.is_file():
        what = "is not a regular file" if file.exists() else "does not exist"
        raise DataFormatError(f"{file} {what} (expected a .parquet or .jsonl file)")
    if file.suffix == ".parquet":
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(file).iter_batches(batch_size=64):
            yield from batch.to_pylist()
    elif file.suffix in (".jsonl", ".json"):
        with file.open(encoding="utf-8") as handle:
            yield from (json.loads(line) for line in handle if line.strip())
    else:
        raise DataFormatError(f"{file}: unsupported suffix {file.suffix!r}; use .parquet or .jsonl")


def _rows(path: str | Path) -> list[Mapping[str, Any]]:
    return list(iter_rows(path))


def need_fields(row: Mapping[str, Any], keys: Iterable[str], where: str) -> None:
    missing = [k for k in keys if k not in row]
    if missing:
        raise DataFormatError(f"{where}: row lacks {missing}; it has {sorted(row)}")


def _image(value: Any, base: Path) -> Any:
    """A datasets image struct, base64 text or a path, as a PIL image or a path string."""
    from PIL import Image, UnidentifiedImageError

    if isinstance(value, Mapping):
        if value.get("bytes"):
            return Image.open(io.BytesIO(value["bytes"]))
        value = value.get("path")
    if isinstance(value, (bytes, bytearray)):
        return Image.open(io.BytesIO(value))
    if isinstance(value, str) and value:
        name = Path(value)  # a file is read only under `base`: a table must not point the zoo anywhere else
        if not name.is_absolute() and ".." not in name.parts and (base / name).is_file():
            return str((base / name).resolve())
        try:
            return Image.open(io.BytesIO(base64.b64decode(value, validate=True)))
        except (binascii.Error, UnidentifiedImageError):
            raise DataFormatError(f"image {value[:60]!r} is neither a file under {base} (paths are relative to it) "
                                  "nor base64 image data") from None
    raise DataFormatError(f"cannot read an image from {type(value).__name__} {str(value)[:60]!r}")


def load_plot2code(path: str | Path, limit: int | None = None, with_instruction: bool = False) -> list[Sample]:
    """Plot2Code rows; no question, or with ``with_instruction`` the row's instruction (the paper's Conditional
    Asking) on a line of its own: ``"\\n" + instruction``, so that the ``msrl`` entry's template (MSRL's prompt, which
    ends with a newline, then the question) leaves a blank line between the two."""
    samples = []
    for i, row in enumerate(_rows(path)[:limit]):
        need_fields(row, ("image", "code"), f"Plot2Code row {i}")
        question = f"\n{row['instruction']}" if with_instruction and row.get("instruction") else ""
        image = _image(row["image"], Path(path).parent)
        samples.append(Sample(f"plot2code-{i}", (image,), question,
                              {"code": row["code"], "language": "matplotlib",
                               "image": image if isinstance(image, str) else data_uri(image)},
                              {"url": row.get("url")}))
    return samples


#: VinciCoder's reward takes the code language from the prompt: the first of these words the lower-cased
#: prompt contains, ``python`` when none (DocTron-hub/VinciCoder@dbe1e94:examples/reward_function/vincicoder.py:130-140),
#: ``tikz`` read as ``latex`` (L633-635).
VINCICODER_LANGUAGES = ("svg", "html", "python", "latex", "mermaid", "tikz")
#: The zoo's render kind per language; HTML, LaTeX and Mermaid have no renderer in the zoo's sandbox.
VINCICODER_RENDER_KINDS = {"python": "matplotlib", "svg": "svg"}


def vincicoder_language(problem: str) -> str:
    """The language VinciCoder's reward expects an answer in, read from the prompt as its reward reads it."""
    found = [name for name in VINCICODER_LANGUAGES if name in problem.lower()]
    language = found[0] if found else "python"
    return "latex" if language == "tikz" else language


def _vincicoder_files(root: Path) -> list[Path]:
    if root.is_dir():
        files = sorted(root.rglob("*.parquet")) or sorted([*root.rglob("*.jsonl"), *root.rglob("*.json")])
        if not files:
            raise DataFormatError(f"{root} holds no .parquet or .jsonl files (expected VinciCoder-42k-RL's files)")
        return files
    return [root]


def load_vincicoder_rl(path: str | Path, languages: Iterable[str] = ("python",), image_dir: str | Path | None = None,
                       limit: int | None = None) -> list[Sample]:
    """The rows of VinciCoder's released RL set (DocTron-Hub/VinciCoder-42k-RL) in ``languages``, read as
    VinciCoder's trainer reads them.

    The format is the one the authors' RL run loads (DocTron-hub/VinciCoder@dbe1e94): the columns
    ``problem``, ``answer`` and ``images`` (``examples/config.yaml:4-6``; the run script
    ``examples/qwen3vl_8b_vincicder.sh:18-41`` overrides none of them), in parquet or JSON-lines files
    (``verl/utils/dataset.py:124-138``: a folder is read whole). The prompt is ``problem`` stripped
    (the run's ``format_prompt`` ``examples/format_prompt/vision.jinja`` is ``{{ content | trim }}``)
    and cut at each ``<image>``, where an image goes (``verl/utils/dataset.py:152-168``); ``images`` is a
    list of datasets image structs (``{"bytes", "path"}``), bytes, or paths under ``image_dir``
    (default: the data file's folder; ``verl/utils/dataset.py:53-62, 225-226``). ``problem`` is the authors'
    whole instruction, so it is the sample's question as written (no entry's template is applied to these rows:
    ``msrl-chart-grpo`` names none). VinciCoder's reward
    compares the render with the first image (``vincicoder.py:647``), so ``target["image"]`` is that
    picture; ``target["code"]`` is ``answer``, which the reward does not read.

    Args:
        path: a parquet/JSON-lines file or a folder of them (the dataset downloaded with ``hf download
            DocTron-Hub/VinciCoder-42k-RL --repo-type dataset``). The Hub card was not readable in this
            project's sources, so the format is taken from the authors' loader above.
        languages: which rows to keep, by :func:`vincicoder_language`: ``python`` (chart and other
            plotting code, rendered as ``matplotlib``) and/or ``svg``.
        image_dir: folder that image paths are relative to.
        limit: stop after this many kept rows.
    """
    wanted = tuple(languages)
    unknown = [name for name in wanted if name not in VINCICODER_RENDER_KINDS]
    if unknown:
        raise ValueError(f"languages {unknown} have no renderer in the zoo; choose from {sorted(VINCICODER_RENDER_KINDS)}")
    samples: list[Sample] = []
    for file in _vincicoder_files(Path(path)):
        base = Path(image_dir) if image_dir is not None else file.parent
        for i, row in enumerate(iter_rows(file)):
            where = f"VinciCoder RL {file.name} row {i}"
            need_fields(row, ("problem", "answer", "images"), where)
            language = vincicoder_language(row["problem"])
            if language not in wanted:
                continue
            samples.append(_vincicoder_sample(row, language, f"{file.stem}-{i}", base, where))
            if limit is not None and len(samples) >= limit:
                return samples
    return samples


def _vincicoder_sample(row: Mapping[str, Any], language: str, sample_id: str, base: Path, where: str) -> Sample:
    parts = row["problem"].strip().split("<image>")
    images = [_image(value, base) for value in row["images"] or ()]
    if not images or len(parts) - 1 != len(images):
        raise DataFormatError(f"{where}: the problem has {len(parts) - 1} <image> marks for {len(images)} images; "
                              "VinciCoder's loader puts one image at each mark")
    content: list[dict[str, Any]] = []
    for i, text in enumerate(parts):
        content += ([{"type": "image"}] if i else []) + ([{"type": "text", "text": text}] if text else [])
    reference = images[0] if isinstance(images[0], str) else data_uri(images[0])
    return Sample(sample_id, tuple(images), [{"role": "user", "content": content}],
                  {"code": row["answer"], "language": VINCICODER_RENDER_KINDS[language], "image": reference},
                  {"source": "VinciCoder-42k-RL", "language": language})


def load_svg_stack(path: str | Path, limit: int | None = None, size: int = 224, kind: str = "svg") -> list[Sample]:
    """SVG-Stack rows (``Filename``, ``Svg``); reference images are rendered from ``Svg`` in the sandbox. No
    question: the picture is the task (the SVG prompt is the ``rlrf`` entry's).

    Rows whose SVG does not render are dropped with a warning (SVG-Stack holds some; StarVector's
    own loader swaps in a placeholder instead, which would teach a model to draw it).
    """
    rows = _rows(path)[:limit]
    for i, row in enumerate(rows):
        need_fields(row, ("Filename", "Svg"), f"SVG-Stack row {i}")
    from rewards.rendering import render_many

    samples = []
    for row, result in zip(rows, render_many(kind, [r["Svg"] for r in rows], size=(size, size)), strict=True):
        if not result.ok:
            logger.warning("SVG-Stack %s does not render (%s): dropped", row["Filename"], result.error)
            continue
        samples.append(Sample(str(row["Filename"]), (result.image,), "",
                              {"code": row["Svg"], "language": "svg", "image": data_uri(result.image)}))
    return samples


TEXT2CAD_LEVELS = ("abstract", "beginner", "intermediate", "expert")


def load_text2cad(path: str | Path, level: str = "expert", code_dir: str | Path | None = None,
                  limit: int | None = None) -> list[Sample]:
    """Text2CAD annotation CSV rows (``uid`` + a text level); references from ``code_dir/<uid>.py``. The
    level's text is the question (no image); the ``cad-rl`` entry puts the zoo's CadQuery prompt before it.

    With ``code_dir``, rows without a script are dropped (logged): a geometry reward needs the part.
    """
    if level not in TEXT2CAD_LEVELS:
        raise ValueError(f"level must be one of {TEXT2CAD_LEVELS}, got {level!r}")
    file = Path(path)
    if not file.is_file():
        raise DataFormatError(f"Text2CAD annotation file {file} does not exist")
    with file.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    samples, missing = [], 0
    for i, row in enumerate(rows[:limit]):
        need_fields(row, ("uid", level), f"Text2CAD row {i}")
        script = Path(code_dir) / f"{row['uid'].replace('/', '_')}.py" if code_dir else None
        target = {"language": "cadquery", "description": row[level]}
        if script is not None:
            if not script.is_file():
                missing += 1
                continue  # a geometry reward needs the reference part
            target["code"] = script.read_text(encoding="utf-8")
        samples.append(Sample(row["uid"], (), row[level], target, {"level": level}))
    if missing:
        logger.warning("Text2CAD: %d of %d rows have no <uid>.py in %s and were dropped", missing, len(rows[:limit]),
                       code_dir)
    return samples
