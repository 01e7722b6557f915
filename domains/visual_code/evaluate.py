"""Chart-to-code evaluation in ChartMimic's format: execution rate, low-level F1s, a picture grid.

``zoo eval NAME --data chartmimic --path ChartMimic/dataset`` (the ``direct_600`` set; ``--option
chartmimic_set=ori_500`` or a set's own folder as ``--path`` picks another; or ``plot2code`` with a parquet/jsonl
file, or ``chart-synthetic``) asks the model for code, renders it and the reference code in the
sandbox and writes ``metrics.json``, ``predictions.jsonl`` and ``grid.png`` (reference above,
rendering below, per column). The charts carry no question: the evaluated entry's prompt asks for the
code (``msrl``'s is MSRL's); a model with no prompt of its own (a Hub id or a directory without ``--entry``)
is asked with MSRL's prompt as its question, which the log says.

Metrics (ChartMimic, arXiv 2406.09961; maths in :mod:`rewards.chart_metrics`):

* ``exec_rate``: share of answers whose code ran and drew a figure;
* ``text``, ``layout``, ``type``, ``color``: ChartMimic's F1s, 0 for code that did not run (as
  ChartMimic scores failed code), averaged over all samples; ``low_level`` is their mean x 100;
* ``ssim``: mean SSIM of rendering vs reference image (0 when not run), an image-level check.

A sample whose reference code does not run in the sandbox stays in the denominator with 0 for every score, as
the benchmark scores it: its evaluators read no facts from a failed reference and give F1 0
(ChartMimic/ChartMimic@c9e149c:chart2code/utils/evaluator/text_evaluator.py:89-93, layout_evaluator.py:76-80), and
its summary divides each F1's sum by the whole set's size (scripts/direct_mimic/get_results.ipynb, cells 4 and 6:
``denominator = 500``, ``.sum()*100 / denominator``). ``failed_references`` counts them; the execution rate is the
answer's own, as there.

ChartMimic's high-level score (a GPT-4o judge) is not computed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from domains.visual_code import data as vdata
from domains.visual_code import svg_bench
from domains.visual_code.prompts import MSRL_PROMPT, parse_python_block
from rewards.chart_metrics import low_level_scores
from rewards.image_similarity import ssim, to_array
from zoo.data import Sample
from zoo.eval_results import write_results

logger = logging.getLogger(__name__)
LOW_LEVEL = ("text", "layout", "type", "color")
_FACTS_SIZE = (128, 128)  # 49 KB of JSON room per chart


def load_eval_data(data: str, path: str | None, limit: int | None, chartmimic_set: str | None = None,
                   ) -> list[Sample]:  # fmt: skip
    if data == "chartmimic":
        return vdata.load_chartmimic(_need_path(data, path), limit, chartmimic_set)
    if data == "plot2code":
        return vdata.load_plot2code(_need_path(data, path), limit)
    if data == "chart-synthetic":
        return vdata.synthetic_charts(n=limit or 8, size=128)
    raise ValueError(f"unknown --data {data!r}; choose chartmimic, plot2code or chart-synthetic")


def _need_path(data: str, path: str | None) -> str:
    if not path:
        raise ValueError(f"--data {data} needs --path (the benchmark's folder or file)")
    return path


def predict_codes(pipe: Any, samples: Sequence[Sample]) -> list[tuple[str, str | None]]:
    """``(raw text, code or None)`` per sample; the pipeline's parser when it has one, else MSRL's.

    Each sample's raw question (none for a chart) goes to the pipeline, which asks it in the evaluated
    entry's prompt (``msrl``: MSRL's prompt, exactly as its README sends it), as for any other input. A model
    with no prompt of its own would see the chart alone: it is asked with MSRL's prompt instead (the task's
    instruction; zoo: ChartMimic's own direct-mimic prompt is not transcribed here).
    """
    spec = getattr(getattr(pipe, "entry", None), "spec", None)
    promptless = spec is not None and not (spec.user_text("").strip() or spec.system)
    if promptless and any(not s.question for s in samples):
        logger.warning("%s has no prompt of its own and the charts carry no question: asking with MSRL's prompt "
                       "(pass --entry NAME to ask with another model's)", pipe.entry.name)  # fmt: skip
    out = []
    for sample in tqdm(samples, desc="generate", disable=None, leave=False):
        question = MSRL_PROMPT if promptless and not sample.question else sample.question
        prediction = pipe(sample.images[0], question)
        text = getattr(prediction, "text", prediction)
        code = getattr(prediction, "code", None) or parse_python_block(text).get("code")
        out.append((text, code))
    return out


def score_codes(codes: Sequence[str | None], samples: Sequence[Sample], size: int = 256) -> list[dict[str, Any]]:
    """One row per sample: rendered or not, the four F1s, SSIM and the two images (not serialised). A sample whose
    reference fails in the sandbox scores 0 (``reference_failed``), as the benchmark scores it (module docstring)."""
    from rewards.rendering import render_many
    from rewards.rendering.chart_facts import decode_facts

    refs = [s.target["code"] for s in samples]
    runnable = [c or "" for c in codes]
    ref_facts = render_many("matplotlib-facts", refs, size=_FACTS_SIZE)
    gen_facts = render_many("matplotlib-facts", runnable, size=_FACTS_SIZE)
    gen_images = render_many("matplotlib", runnable, size=(size, size))
    ref_images = render_many("matplotlib", refs, size=(size, size))  # same renderer and size as the answer's
    rows = []
    for sample, code, ref, gen, image, ref_image in zip(samples, codes, ref_facts, gen_facts, gen_images, ref_images,
                                                         strict=True):
        reference_ok = bool(ref.ok and ref_image.ok)
        if not reference_ok:
            logger.warning("reference code of %s does not run in the sandbox (%s): scored 0, as ChartMimic scores it",
                           sample.id, ref.error or ref_image.error)  # fmt: skip
        row: dict[str, Any] = {"id": sample.id, "executed": bool(gen.ok and image.ok), "error": gen.error or image.error,
                               "reference_failed": not reference_ok}  # fmt: skip
        compared = row["executed"] and reference_ok
        scores = low_level_scores(decode_facts(gen.image), decode_facts(ref.image)) if compared else {}
        row.update({k: scores.get(k, 0.0) for k in LOW_LEVEL})
        reference = to_array(ref_image.image) if ref_image.ok else None
        row["ssim"] = ssim(image.image, reference) if compared else 0.0
        row["_images"] = (reference, to_array(image.image) if image.ok else None)
        row["code"] = code
        rows.append(row)
    return rows


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    means = {k: sum(r[k] for r in rows) / n for k in (*LOW_LEVEL, "ssim")}
    return {"n": n, "exec_rate": sum(r["executed"] for r in rows) / n, **means,
            "low_level": 100 * sum(means[k] for k in LOW_LEVEL) / len(LOW_LEVEL)}


def draw_grid(rows: Sequence[dict[str, Any]], path: Path, n: int = 8) -> Path:
    """Reference (top) over rendering (bottom), grey where the code failed, ``n`` columns."""
    import numpy as np
    from PIL import Image

    from zoo.visualize import grid

    shown = list(rows)[:n]
    shape = next((a.shape for r in shown for a in r["_images"] if a is not None), (64, 64, 3))
    refs, gens = ([Image.fromarray(r["_images"][i] if r["_images"][i] is not None else np.full(shape, 128, np.uint8))
                   for r in shown] for i in (0, 1))  # fmt: skip
    grid(refs + gens, columns=len(shown), cell=192).save(path)
    return path


def run(pipe: Any, data: str, path: str | None, out_dir: str | Path, limit: int | None = None,
        chartmimic_set: str | None = None, dino_model: str | None = None) -> dict[str, Any]:
    """Evaluate ``pipe`` on chart-to-code data; writes metrics, per-sample rows and a PNG grid.

    ``chartmimic_set`` picks one of ChartMimic's Direct Mimic sets under ``path`` (default ``direct_600``;
    ``zoo eval --option chartmimic_set=ori_500``). The SVG-Bench sets are scored in
    :mod:`~domains.visual_code.svg_bench` (``dino_model``: the DINOv2 of their DinoScore)."""
    if data in svg_bench.SVG_BENCH:
        if chartmimic_set is not None:
            raise ValueError(f"--option chartmimic_set does not apply to --data {data}, an SVG-Bench set")
        return svg_bench.run(pipe, data, path, out_dir, limit, dino_model or svg_bench.DINO_MODEL)
    if dino_model is not None:
        raise ValueError(f"--option dino_model applies to the SVG-Bench sets only, not to --data {data}")
    samples = load_eval_data(data, path, limit, chartmimic_set)
    if not samples:
        raise ValueError(f"--data {data} yielded no samples (check --path and --limit)")
    predictions = predict_codes(pipe, samples)
    rows = score_codes([code for _, code in predictions], samples)
    if all(r["reference_failed"] for r in rows):
        raise RuntimeError(f"no reference code of --data {data} runs in the render sandbox; see the warnings")
    texts = {s.id: text for s, (text, _) in zip(samples, predictions, strict=True)}
    metrics = {"model": getattr(getattr(pipe, "entry", None), "name", None), "data": data,
               **({"set": samples[0].meta["set"]} if data == "chartmimic" else {}),
               "failed_references": sum(r["reference_failed"] for r in rows), **summarise(rows)}
    out_dir = write_results(out_dir, metrics,
                  ({**{k: v for k, v in row.items() if k != "_images"}, "response": texts[row["id"]]} for row in rows))
    draw_grid(rows, out_dir / "grid.png")
    logger.info("%s on %s: exec %.3f, low-level %.1f over %d -> %s", metrics["model"], data, metrics["exec_rate"],
                metrics["low_level"], len(rows), out_dir)
    return metrics
