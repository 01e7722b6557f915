"""SVG-Bench image-to-SVG evaluation (StarVector, arXiv 2312.11556) with the authors' own metrics.

``zoo eval starvector-1b-im2svg --trust-remote-code --data svg-stack --path svg-stack/`` (or ``svg-fonts``,
``svg-icons``, ``svg-emoji``, ``svg-diagrams``: the five sets of the README's DinoScore table,
joanrod/star-vector@0e083c1:README.md:156-168) reads the split the authors evaluate (``split: test``,
``configs/generation/hf/starvector-1b/im2svg.yaml:22``) from a local copy: a parquet or JSON-lines file, or the
downloaded dataset's folder, whose ``test*`` files are read (the Hub export's layout, UNVERIFIED here). Each row has
``Svg`` and ``Filename``, the columns the authors' validation loader reads (``starvector/validation/
starvector_hf_validator.py:30-31``); a sample's id is the file name before its first dot
(``svg_validator_base.py:221``).

The steps are the authors' validator's (``starvector/validation/svg_validator_base.py``):

1. The model sees the reference drawn at 224x224 (``rasterize_svg(svg, resolution=im_size)`` with ``im_size: 224``,
   ``starvector_hf_validator.py:32``, ``im2svg.yaml:23``), asked as its entry asks (StarVector takes no text;
   ``rlrf`` and ``svg-scenes-tiny`` put the zoo's SVG prompt; ``--entry rlrf`` asks any other model so).
2. The answer (the pipeline's parsed ``<svg>`` element, else its raw text) and the reference are drawn at 512x512 on
   white (``rasterize_svg(..., resolution=512, dpi=100, scale=1)``, L269-270), by cairosvg as theirs, inside the
   zoo's render sandbox (the ``svg`` kind): model-written SVG is never parsed outside it.
3. An answer that does not render becomes the authors' placeholder ``<svg></svg>`` (L400-406,
   ``starvector/data/util.py:120-121``), a white canvas, and is scored like any answer: it stays in every mean and
   ``no_compile`` counts it. A reference that does not render is a white canvas too (``rasterize_svg``'s fallback,
   util.py:159-160); ``failed_references`` counts it.
4. ``L2``, ``SSIM`` and ``DinoScore`` (:mod:`domains.visual_code.svg_bench_metrics`) per pair, each averaged over
   the samples (``BaseMetric.calculate_score``, ``starvector/metrics/base_metric.py:16-36``).

The differences (:data:`DIFFERENCES`) are written into ``metrics.json``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from domains.visual_code.data import DataFormatError, iter_rows, need_fields
from domains.visual_code.prompts import parse_svg
from domains.visual_code.svg_bench_metrics import DINO_MODEL, NOT_COMPUTED, l2, load_dino_score, ssim
from zoo.eval_results import write_results

logger = logging.getLogger(__name__)

#: The image-to-SVG sets of SVG-Bench, as the authors' Hub datasets name them (starvector/<name>).
SVG_BENCH = ("svg-stack", "svg-fonts", "svg-icons", "svg-emoji", "svg-diagrams")
INPUT_SIZE = 224  # im2svg.yaml:23, the model's input render
METRIC_SIZE = 512  # svg_validator_base.py:269-270, the rasters the metrics compare
#: Samples drawn, answered and scored together; a chunk's rasters are dropped before the next (SVG-Stack's 5.7k test
#: rows would otherwise hold about 9 GB of 512-px images).
CHUNK = 64
GRID = 8  # columns of grid.png, the first samples'
METRICS = {
    "L2": "mean squared error of the RGB rasters in [0, 1] (the authors' name; compute_l2.py)",
    "SSIM": "scikit-image SSIM, 11x11 uniform window, RGB channels averaged (compute_SSIM.py)",
    "DinoScore": "(cos + 1) / 2 of DINOv2 features, each the mean of all last_hidden_state tokens "
                 "(compute_dino_score.py)",
}
DIFFERENCES = (
    "zoo: the sandbox's cairosvg renders at its default 96 dpi, the authors' at 100 (and 128 for the 224-px input): "
    "only lengths in physical units (pt, mm, in) and the default 12pt font size scale by 0.96",
    "zoo: the drawing is composited over white instead of drawn on a white ground: equal up to 8-bit rounding at "
    "anti-aliased edges",
    "zoo: an unfinished answer is not repaired: the authors retry a failed parse through BeautifulSoup's XML recovery "
    "and cairosvg's SVG output (clean_svg, starvector/data/util.py:88-117), which can close a truncated document; "
    "untrusted XML is parsed only inside the sandbox here, so such an answer is the placeholder",
    "zoo: a sample whose render the sandbox could not judge (a lost worker, status infra) is masked: left out of the "
    "means and counted in `masked`",
)


def bench_files(path: str | Path) -> list[Path]:
    """The test split's files: ``path`` itself, or the ``test*.parquet`` / ``test*.jsonl`` files under a folder."""
    root = Path(path)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise DataFormatError(f"{root} does not exist (expected an SVG-Bench test split: a .parquet/.jsonl file or "
                              "the downloaded dataset's folder)")  # fmt: skip
    files = sorted(f for f in root.rglob("test*") if f.suffix in (".parquet", ".jsonl", ".json") and f.is_file())
    if not files:
        raise DataFormatError(f"{root} holds no test*.parquet or test*.jsonl file (the test split of an SVG-Bench "
                              "dataset); pass the file itself")  # fmt: skip
    return files


def load_svg_bench(data: str, path: str | Path, limit: int | None = None) -> list[tuple[str, str]]:
    """``(sample id, reference SVG)`` per row of the test split, in file order."""
    rows: list[tuple[str, str]] = []
    for file in bench_files(path):
        for i, row in enumerate(iter_rows(file)):
            need_fields(row, ("Filename", "Svg"), f"{data} {file.name} row {i}")
            rows.append((str(row["Filename"]).split(".")[0], str(row["Svg"])))
            if limit is not None and len(rows) >= limit:
                return rows
    return rows


def _render(sources: Sequence[str], size: int) -> list[Any]:
    from rewards.rendering import render_many

    return render_many("svg", list(sources), size=(size, size))


def _white(size: int = METRIC_SIZE) -> Any:
    """What the authors' placeholder ``<svg></svg>`` and ``rasterize_svg``'s fallback draw: a white canvas."""
    from PIL import Image

    return Image.new("RGB", (size, size), "white")


def ask(pipe: Any, images: Sequence[Any]) -> list[tuple[str, str]]:
    """``(raw text, SVG source to draw)`` per image: the first complete ``<svg>`` element (the pipeline's parse, else
    :func:`~domains.visual_code.prompts.parse_svg`'s), else the whole text, which the renderer judges as the authors'
    validator judges the raw output."""
    answers = []
    for image in tqdm(images, desc="generate", disable=None, leave=False):
        prediction = pipe(image, "")
        text = getattr(prediction, "text", prediction)
        answers.append((text, getattr(prediction, "code", None) or parse_svg(text).get("code") or text))
    return answers


def score(ids: Sequence[str], references: Sequence[Any], answers: Sequence[tuple[str, str]], scorer: Any,
          ) -> list[dict[str, Any]]:  # fmt: skip
    """One row per sample: the three metrics on the 512-px rasters, or ``masked`` when the sandbox could not judge.
    ``references`` are the reference renders at :data:`METRIC_SIZE` (``RenderResult`` objects)."""
    generated = _render([source for _, source in answers], METRIC_SIZE)
    rows, pairs = [], []
    for sample_id, ref, gen, (text, source) in zip(ids, references, generated, answers, strict=True):
        masked = ref.infra_failure or gen.infra_failure
        row: dict[str, Any] = {"id": sample_id, "masked": masked, "no_compile": not masked and not gen.ok,
                               "reference_failed": not masked and not ref.ok, "error": gen.error,
                               "svg": source, "response": text}  # fmt: skip
        rows.append(row)
        if not masked:
            pairs.append((row, ref.image if ref.ok else _white(), gen.image if gen.ok else _white()))
    dino = scorer.scores([ref for _, ref, _ in pairs], [gen for _, _, gen in pairs])
    for (row, ref, gen), dino_score in zip(pairs, dino, strict=True):
        x, y = np.asarray(ref, dtype=np.uint8), np.asarray(gen, dtype=np.uint8)
        row.update({"L2": l2(x, y), "SSIM": ssim(x, y), "DinoScore": dino_score, "_images": (ref, gen)})
    return rows


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Means over the judged samples, as the authors' ``BaseMetric`` averages the values it got."""
    judged = [r for r in rows if not r["masked"]]
    if not judged:
        raise RuntimeError("the render sandbox could judge none of the samples (every render was an infra failure)")
    return {"n": len(rows), "scored": len(judged), "masked": len(rows) - len(judged),
            "failed_references": sum(r["reference_failed"] for r in judged),
            "no_compile": sum(r["no_compile"] for r in judged) / len(judged),
            **{name: sum(r[name] for r in judged) / len(judged) for name in METRICS}}


def evaluate_rows(pipe: Any, rows: Sequence[tuple[str, str]], scorer: Any) -> list[dict[str, Any]]:
    """Draw, ask and :func:`score` the ``(id, SVG)`` rows chunk by chunk; the first :data:`GRID` keep their images."""
    results: list[dict[str, Any]] = []
    for start in tqdm(range(0, len(rows), CHUNK), desc="svg-bench", disable=None, leave=False):
        ids, svgs = zip(*rows[start:start + CHUNK], strict=True)
        inputs = [r.image if r.ok else _white(INPUT_SIZE) for r in _render(svgs, INPUT_SIZE)]
        for row in score(ids, _render(svgs, METRIC_SIZE), ask(pipe, inputs), scorer):
            if len(results) >= GRID:
                row.pop("_images", None)
            results.append(row)
    return results


def draw_grid(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """References (top) over the answers' renders (bottom, white where the answer did not render)."""
    from zoo.visualize import grid

    shown = [r["_images"] for r in rows if "_images" in r][:GRID]
    if shown:
        grid([ref for ref, _ in shown] + [gen for _, gen in shown], columns=len(shown), cell=192).save(path)


def run(pipe: Any, data: str, path: str | None, out_dir: str | Path, limit: int | None = None,
        dino_model: str = DINO_MODEL) -> dict[str, Any]:
    """Evaluate ``pipe`` on an SVG-Bench set; writes ``metrics.json``, ``predictions.jsonl`` and ``grid.png``.

    ``dino_model`` is the DINOv2 of the DinoScore: the authors' ``facebook/dinov2-base`` from the local cache by
    default, ``tiny`` for a smoke run (random weights: its DinoScore means nothing, and ``metrics.json`` says so).
    """
    import torch

    if data not in SVG_BENCH:
        raise ValueError(f"--data {data} is not an SVG-Bench set; choose one of {', '.join(SVG_BENCH)}")
    if not path:
        raise ValueError(f"--data {data} needs --path (a local copy of its test split: a parquet/jsonl file or the "
                         "dataset's folder)")  # fmt: skip
    rows = load_svg_bench(data, path, limit)
    if not rows:
        raise ValueError(f"--data {data} --path {path} yielded no rows (check the file and --limit)")
    scorer = load_dino_score(dino_model, "cuda" if torch.cuda.is_available() else "cpu")  # before any generation
    results = evaluate_rows(pipe, rows, scorer)
    summary = summarise(results)
    if summary["failed_references"]:
        logger.warning("%d reference SVGs of %s do not render: scored against a white canvas, as the authors' "
                       "rasterize_svg falls back", summary["failed_references"], data)  # fmt: skip
    metrics = {"model": getattr(getattr(pipe, "entry", None), "name", None), "data": data, **summary,
               "dino_model": dino_model if dino_model != "tiny" else "tiny (random weights: a smoke run, not the "
               "authors' DinoScore)", "metrics": METRICS, "not_computed": NOT_COMPUTED,
               "render": f"cairosvg in the zoo's sandbox, {METRIC_SIZE}x{METRIC_SIZE} on white (model input "
                         f"{INPUT_SIZE}x{INPUT_SIZE})", "differences": list(DIFFERENCES)}  # fmt: skip
    out = write_results(out_dir, metrics, ({k: v for k, v in r.items() if k != "_images"} for r in results))
    draw_grid(results, out / "grid.png")
    logger.info("%s on %s: DinoScore %.3f, L2 %.4f, SSIM %.3f over %d -> %s", metrics["model"], data,
                metrics["DinoScore"], metrics["L2"], metrics["SSIM"], summary["scored"], out)
    return metrics
