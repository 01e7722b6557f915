"""GUI grounding evaluation: point-in-box accuracy by platform and element type, as ScreenSpot reports it.

A prediction is correct when its click point lies inside the ground-truth box, borders included
(SeeClick ``pretrain/screenspot_test.py``; ScreenSpot-Pro ``eval_screenspot_pro.py``
``eval_sample_positive_gt``). A model that answers with a box clicks its centre (InfiGUI-R1 issue
#9; GUI-G1's ``hit``). Unparsable answers count as wrong and are reported as ``wrong_format``.

``zoo eval NAME --data screenspot|screenspot-v2|screenspot-pro|synthetic|synthetic-tiny [--path DIR]``
calls :func:`run` (agent trajectories, ``android-control`` and friends: :mod:`domains.gui.agent_eval`), which writes ``metrics.json``, ``predictions.jsonl`` and ``predictions.png``
(screenshots with the ground-truth box in green and the prediction in magenta).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from rewards import grounding
from rewards.grounding import click_point
from zoo.data import Sample
from zoo.eval_results import write_results

logger = logging.getLogger(__name__)

#: Held-out seeds of the synthetic sets (the tiny checkpoint's training never uses them).
SYNTHETIC_SEED = 2024
SYNTHETIC_TINY_SEED = 12345


def _synthetic(path: str | None, limit: int | None, task: str, seed: int, default_n: int) -> list[Sample]:
    from domains.gui.data import load_synthetic

    if path is not None:
        raise ValueError(f"--data {('synthetic' if task == 'screens' else 'synthetic-tiny')} is generated; drop --path")
    return load_synthetic(n=limit or default_n, seed=seed, task=task)


def _needs_path(loader: Callable[..., list[Sample]], name: str) -> Callable[[str | None, int | None], list[Sample]]:
    def load(path: str | None, limit: int | None) -> list[Sample]:
        if path is None:
            raise ValueError(f"--data {name} needs --path pointing at the downloaded benchmark folder")
        return loader(path, limit=limit)

    return load


def _loaders() -> dict[str, Callable[[str | None, int | None], list[Sample]]]:
    from domains.gui import data

    return {
        "screenspot": _needs_path(data.load_screenspot, "screenspot"),
        "screenspot-v2": _needs_path(data.load_screenspot_v2, "screenspot-v2"),
        "screenspot-pro": _needs_path(data.load_screenspot_pro, "screenspot-pro"),
        "synthetic": lambda path, limit: _synthetic(path, limit, "screens", SYNTHETIC_SEED, 200),
        "synthetic-tiny": lambda path, limit: _synthetic(path, limit, "single", SYNTHETIC_TINY_SEED, 400),
    }


def load_eval_data(data: str, path: str | None = None, limit: int | None = None) -> list[Sample]:
    """The evaluation samples for a ``--data`` name."""
    loaders = _loaders()
    if data not in loaders:
        raise ValueError(f"unknown GUI benchmark {data!r}; choose one of {', '.join(loaders)}")
    return loaders[data](path, limit)


# --- scoring ------------------------------------------------------------------------------------


def point_in_box(point: Sequence[float] | None, box: Sequence[float]) -> bool:
    """Inclusive point-in-box test of the ScreenSpot family of benchmarks; no click (``None``) misses."""
    return point is not None and grounding.point_in_box(point, box)


def predict(pipe: Any, samples: Sequence[Sample], batch_size: int = 16) -> list[Any]:
    """Greedy predictions for ``samples`` (their first image and bare instruction), in batches."""
    out: list[Any] = []
    for start in tqdm(range(0, len(samples), batch_size), desc="eval", disable=None, leave=False):
        chunk = samples[start : start + batch_size]
        out.extend(pipe([s.images[0] for s in chunk], [s.question for s in chunk]))
    return out


def hit_rate(pipe: Any, samples: Sequence[Sample], batch_size: int = 50) -> float:
    """Fraction of ``samples`` whose predicted click lands in the target box."""
    if not samples:
        raise ValueError("hit_rate needs at least one sample")
    preds = predict(pipe, samples, batch_size)
    return sum(point_in_box(click_point(p), s.target["bbox"]) for p, s in zip(preds, samples)) / len(samples)


def score_rows(samples: Sequence[Sample], predictions: Sequence[Any]) -> list[dict[str, Any]]:
    """One JSON-ready row per sample: ids, groups, truth, prediction and correctness."""
    rows = []
    for sample, pred in zip(samples, predictions):
        point = click_point(pred)
        correct = point_in_box(point, sample.target["bbox"])
        rows.append(
            {
                "id": sample.id,
                "instruction": sample.question,
                "platform": str(sample.meta.get("platform", "unknown")),
                "element_type": str(sample.meta.get("element_type", "unknown")),
                "group": sample.meta.get("group"),
                "bbox": sample.target["bbox"],
                "image_size": sample.target.get("image_size"),
                "pred_bbox": pred.bbox,
                "pred_point": point,
                "text": pred.text,
                "parse_error": pred.parse_error,
                "correctness": "correct" if correct else ("wrong_format" if point is None else "wrong"),
            }
        )
    return rows


def _accuracy(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    n = len(rows)
    correct = sum(r["correctness"] == "correct" for r in rows)
    wrong_format = sum(r["correctness"] == "wrong_format" for r in rows)
    return {"accuracy": correct / n if n else 0.0, "n": n, "correct": correct, "wrong_format": wrong_format}


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Overall accuracy and accuracy by platform, element type, platform x type and group."""
    groups: dict[str, dict[str, list]] = {k: defaultdict(list) for k in ("platform", "element_type", "platform/type")}
    for row in rows:
        groups["platform"][row["platform"]].append(row)
        groups["element_type"][row["element_type"]].append(row)
        groups["platform/type"][f"{row['platform']}/{row['element_type']}"].append(row)
        if row.get("group"):
            groups.setdefault("group", defaultdict(list))[row["group"]].append(row)
    out: dict[str, Any] = {"overall": _accuracy(rows)}
    for key, members in groups.items():
        out[f"by_{key.replace('/', '_x_')}"] = {name: _accuracy(m) for name, m in sorted(members.items())}
    return out


# --- outputs --------------------------------------------------------------------------------------


def draw_grid(samples: Sequence[Sample], rows: Sequence[dict[str, Any]], path: Path, n: int = 16) -> Path:
    """The first ``n`` screenshots with truth (green) and prediction (magenta), tiled into one PNG."""
    from zoo.images import load_image
    from zoo.visualize import draw_prediction, grid

    tiles = []
    for sample, row in list(zip(samples, rows))[:n]:
        mark = {"correct": "OK", "wrong": "MISS", "wrong_format": "FORMAT"}[row["correctness"]]
        tiles.append(
            draw_prediction(
                load_image(sample.images[0]),
                bbox=row["pred_bbox"],
                point=row["pred_point"],
                truth=row["bbox"],
                label=f"{mark} {row['instruction']}",
            )
        )
    if not tiles:
        raise ValueError("nothing to draw: the evaluation set is empty")
    grid(tiles, columns=4, cell=320).save(path)
    return path


def run(pipe: Any, data: str, path: str | None, out_dir: str | Path, limit: int | None = None) -> dict[str, Any]:
    """Evaluate ``pipe`` on a GUI benchmark; writes metrics, per-sample predictions and a PNG grid.

    Agent benchmarks (multi-step trajectories) go to :func:`domains.gui.agent_eval.run`.
    """
    from domains.gui import agent_eval

    if data in agent_eval.AGENT_BENCHMARKS:
        return agent_eval.run(pipe, data, path, out_dir, limit)
    samples = load_eval_data(data, path, limit)
    if not samples:
        raise ValueError(f"--data {data} yielded no samples (check --path and --limit)")
    rows = score_rows(samples, predict(pipe, samples))
    metrics = {"model": getattr(getattr(pipe, "entry", None), "name", None), "data": data, **summarise(rows)}
    out_dir = write_results(out_dir, metrics, rows)
    draw_grid(samples, rows, out_dir / "predictions.png")
    logger.info("%s on %s: accuracy %.3f over %d samples -> %s", metrics["model"], data,
                metrics["overall"]["accuracy"], len(rows), out_dir)  # fmt: skip
    return metrics
