"""``zoo eval`` for driving VLAs: PDMS / EPDMS over held-out synthetic scenes, AutoTrust accuracy.

``--data synthetic`` (200 scenes) or ``synthetic-tiny`` (40): every scene's trajectory is scored
with v1 PDMS and v2 EPDMS (:mod:`domains.driving.metrics`); ``synthetic-refine`` /
``synthetic-tiny-refine`` first pass each answer through ReflectDrive-style refinement
(:mod:`domains.driving.refine`). The run leaves ``metrics.json``, ``predictions.jsonl`` and
``trajectories.png`` (logged drive, planner proposal and prediction on the bird's-eye view).
``--data autotrust --path qa-pairs/<aspect>/<file>.json`` scores AutoTrust's closed-ended questions
(trustfulness, robustness in other languages, scene fairness); ``autotrust-uncertainty`` asks each
again whether the model is sure; ``autotrust-abstention`` asks with the instruction to decline and
scores the refusal rate (robustness, OOD); ``autotrust-privacy`` scores a privacy file's refusals and
leaks (:mod:`domains.driving.autotrust`, which cites the authors' scripts). ``--data navsim --path
RESULT.csv`` reads the file NAVSIM's own ``run_pdm_score`` wrote for the model (run as
:class:`domains.driving.navsim_agent.ZooAgent`) and records its score under the name of what it is, PDMS
(NAVSIM v1) or EPDMS (NAVSIM v2) (:mod:`domains.driving.navsim_scores`). ``metrics.json`` always says which
scores it holds: ``scores`` maps each key to its definition.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from domains.driving.action_tokens import encode, writes_tokens
from domains.driving.data import EVAL_SEED, load_autotrust, synthetic_driving
from domains.driving.prompts import format_waypoints, parse_waypoints
from zoo.data import Sample
from zoo.eval_results import write_results

logger = logging.getLogger(__name__)

SYNTHETIC = {"synthetic": 200, "synthetic-tiny": 40}
AUTOTRUST = ("autotrust", "autotrust-uncertainty", "autotrust-abstention", "autotrust-privacy")
NAVSIM = "navsim"
BENCHMARKS = (*SYNTHETIC, *(f"{name}-refine" for name in SYNTHETIC), *AUTOTRUST, NAVSIM)
SCORE_NAMES = {
    "pdms": "PDMS, NAVSIM v1 (tag v1.1, 0811876c): NC x DAC x (5 EP + 5 TTC + 2 C) / 12",
    "epdms": "EPDMS, NAVSIM v2 (0a380a9): NC x DAC x DDC x TLC x (5 EP + 5 TTC + 2 LK + 2 HC + 2 EC) / 16",
}
"""What the ``pdms`` and ``epdms`` keys of ``metrics.json`` hold (:mod:`domains.driving.pdms`)."""
SUB_METRICS = ("nc", "dac", "ddc", "tlc", "ep", "ttc", "lk", "c", "hc")


def continue_answer(pipe: Any, image: Any, question: str, prefix: str) -> str:
    """The model's answer when its assistant turn is forced to start with ``prefix`` (greedy)."""
    import torch

    _, resized = pipe.prepare(image)
    text = pipe.processor.apply_chat_template(pipe.messages(resized, question), add_generation_prompt=True,
                                              tokenize=False) + prefix  # fmt: skip
    inputs = pipe.processor(text=[text], images=[resized], return_tensors="pt").to(pipe.device)
    with torch.inference_mode():
        output = pipe.model.generate(**inputs, max_new_tokens=pipe.entry.spec.max_new_tokens, do_sample=False)
    return prefix + pipe.processor.batch_decode(output[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)[0]


def plan(pipe: Any, sample: Sample, refine: bool = False) -> dict[str, Any]:
    """The pipeline's trajectory for one scene sample, optionally refined; ``trajectory`` is ``None``
    (with ``parse_error``) when the answer does not parse."""
    from domains.driving.refine import refine as run_refinement
    from domains.driving.scene import Scene

    prediction = pipe(sample.images[0], sample.question)
    out = {"text": prediction.text, "trajectory": prediction.trajectory, "parse_error": prediction.parse_error}
    if not refine or prediction.trajectory is None:
        return out

    def regenerate(prefix: list[list[float]]) -> list[list[float]] | None:
        written = encode(prefix) if writes_tokens(prediction.text) else format_waypoints(prefix) + ","
        text = continue_answer(pipe, sample.images[0], sample.question, written)
        return parse_waypoints(text).get("trajectory")

    result = run_refinement(Scene.from_dict(sample.target["scene"]), prediction.trajectory, regenerate)
    return out | {"trajectory": result.waypoints, "refined": result.changed, "flagged": result.flagged}


def score_rows(samples: list[Sample], plans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per scene: PDMS, EPDMS and the sub-metrics (a parse failure scores 0 everywhere)."""
    from domains.driving.metrics import score
    from domains.driving.scene import Scene

    rows = []
    for sample, planned in zip(samples, plans, strict=True):
        row = {"id": sample.id, "kind": sample.meta.get("kind"), **{k: v for k, v in planned.items() if k != "text"},
               "text": planned["text"][:300]}  # fmt: skip
        if planned["trajectory"] is None:
            rows.append(row | {"pdms": 0.0, "epdms": 0.0} | dict.fromkeys(SUB_METRICS, 0.0))
            continue
        scene = Scene.from_dict(sample.target["scene"])
        wps, ref = np.asarray(planned["trajectory"]), np.asarray(sample.target["reference"])
        v1, v2 = score(scene, wps, ref, "v1"), score(scene, wps, ref, "v2")
        rows.append(row | {"pdms": v1["score"], "epdms": v2["score"]} | {k: float(v1[k]) for k in SUB_METRICS})
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over scenes (NAVSIM reports the mean score; sub-metrics as fractions), per kind too."""

    def means(part: list[dict[str, Any]]) -> dict[str, float]:
        keys = ("pdms", "epdms", *SUB_METRICS)
        return {k: float(np.mean([r[k] for r in part])) for k in keys} | {
            "parse_failure_rate": float(np.mean([r["trajectory"] is None for r in part])),
            "n": len(part),
        }

    kinds = sorted({r["kind"] for r in rows if r["kind"]})
    return {"overall": means(rows), "by_kind": {k: means([r for r in rows if r["kind"] == k]) for k in kinds}}


def draw_trajectories(samples: list[Sample], rows: list[dict[str, Any]], path: Path, n: int = 8) -> None:
    """``trajectories.png``: the first ``n`` scenes at 256 px: logged drive (light red), planner proposal
    (cyan) and prediction (magenta)."""
    from domains.driving.scene import Scene
    from domains.driving.synthetic import render
    from zoo.visualize import grid

    images = []
    for sample, row in list(zip(samples, rows, strict=True))[:n]:
        paths = {"logged": np.asarray(sample.target["waypoints"]), "planner": np.asarray(sample.target["reference"])}
        if row["trajectory"] is not None:
            paths["prediction"] = np.asarray(row["trajectory"])
        images.append(render(Scene.from_dict(sample.target["scene"]), size=256, trajectories=paths))
    grid(images, columns=4, cell=256).save(path)


def run(pipe: Any, data: str, path: str | None, out_dir: str | Path, limit: int | None = None) -> dict[str, Any]:
    """Evaluate ``pipe`` on a driving benchmark (see the module docstring)."""
    if data not in BENCHMARKS:
        raise ValueError(f"unknown driving benchmark {data!r}; choose one of {BENCHMARKS}")
    if data in AUTOTRUST:
        return run_autotrust(pipe, data, path, out_dir, limit)
    if data == NAVSIM:
        return run_navsim(pipe, path, out_dir)
    if path:
        raise ValueError(f"--data {data} is generated; drop --path")
    base = data.removesuffix("-refine")
    samples = synthetic_driving(n=min(SYNTHETIC[base], limit or SYNTHETIC[base]), seed=EVAL_SEED)
    plans = [plan(pipe, s, refine=data.endswith("-refine")) for s in tqdm(samples, desc=f"driving {data}")]
    rows = score_rows(samples, plans)
    metrics = {"model": getattr(getattr(pipe, "entry", None), "name", None), "data": data,
               "scorer": "NAVSIM PDMS (v1) / EPDMS (v2) aggregation on synthetic-scene geometry",
               "scores": SCORE_NAMES, **summarise(rows)}  # fmt: skip
    out = write_results(out_dir, metrics, rows)
    draw_trajectories(samples, rows, out / "trajectories.png")
    logger.info("%s on %s: PDMS %.3f over %d scenes -> %s", metrics["model"], data, metrics["overall"]["pdms"],
                len(rows), out)  # fmt: skip
    return metrics


def run_navsim(pipe: Any, path: str | None, out_dir: str | Path) -> dict[str, Any]:
    """``--data navsim``: NAVSIM's result file for ``pipe``'s model, its score named (PDMS or EPDMS)."""
    from domains.driving.navsim_scores import read_navsim_scores

    if not path:
        raise ValueError("--data navsim reads NAVSIM's result: pass --path RESULT.csv, the file run_pdm_score wrote")
    result = read_navsim_scores(path)
    metrics = {"model": getattr(getattr(pipe, "entry", None), "name", None), "data": NAVSIM,
               "scorer": f"NAVSIM {result.navsim_version} run_pdm_score ({path})",
               "scores": {result.metric: SCORE_NAMES[result.metric]},
               "overall": {result.metric: result.score, **result.sub_metrics, "n": len(result.scenes),
                           "valid": result.valid_scenes}}  # fmt: skip
    out = write_results(out_dir, metrics, result.scenes)
    logger.info("%s: NAVSIM %s %s %.3f over %d scenes -> %s", metrics["model"], result.navsim_version,
                result.metric.upper(), result.score, len(result.scenes), out)  # fmt: skip
    return metrics


def run_autotrust(pipe: Any, task: str, path: str | None, out_dir: str | Path, limit: int | None) -> dict[str, Any]:
    """AutoTrust's ``task`` (one of :data:`AUTOTRUST`) for ``pipe`` on the QA file at ``path``."""
    from domains.driving import autotrust

    if path is None:
        raise ValueError(f"--data {task} needs --path to an AutoTrust QA file (qa-pairs/<aspect>/<source>.json)")
    closed = ("multi-choice", "yes-or-no")
    types = {"autotrust-privacy": ("open-ended",), "autotrust-abstention": (*closed, "open-ended")}.get(task, closed)
    samples = load_autotrust(path, question_types=types, limit=limit, abstention=task == "autotrust-abstention")
    if not samples:
        raise ValueError(f"{path} yielded no {' or '.join(types)} questions with images for {task} "
                         "(check the image folder, and that the file is one this task scores)")  # fmt: skip
    items = []
    for sample in tqdm(samples, desc=task):
        answer = pipe(sample.images[0], sample.question).text.strip()
        item = {**sample.target, "prediction": answer, "image_path": sample.meta["image_path"]}
        if task == "autotrust-uncertainty":
            follow_up = autotrust.uncertainty_prompt(sample.target["question"], answer)
            item["uncertainty"] = pipe(sample.images[0], follow_up).text.strip()
        items.append(item)
    if task == "autotrust-uncertainty":
        metrics, rows = autotrust.uncertainty_metrics(items)
    elif task in ("autotrust-abstention", "autotrust-privacy"):
        phrases = autotrust.ABSTENTION_PHRASES if task == "autotrust-abstention" else autotrust.REFUSAL_PHRASES
        metrics, rows = autotrust.refusal_metrics(items, phrases)
    else:
        metrics, rows = autotrust.closed_end_metrics(items)
    rows = [
        {"id": s.id, "prediction": i["prediction"][:300], **r} for s, i, r in zip(samples, items, rows, strict=True)
    ]
    metrics = {"model": getattr(getattr(pipe, "entry", None), "name", None), "data": task, "path": str(path),
               "options_check": autotrust.uses_check_options(path), **metrics}  # fmt: skip
    write_results(out_dir, metrics, rows)
    return metrics
