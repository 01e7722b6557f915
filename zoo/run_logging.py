"""Readable run logs for every engine: ``metrics.csv`` (one row per logging step) and ``reward_curve.png``.

TensorBoard events and progress bars are each engine's trainer's own (transformers'
``TensorBoardCallback`` for the VLM engine). What the ecosystem lacks is a plain CSV a reader can
open in a spreadsheet, with one column per reward term and per reward component, and a PNG of
the reward curve: :class:`MetricsLog` writes them for any engine.
"""

from __future__ import annotations

import csv
import logging
import os
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.csv"
CURVE_FILE = "reward_curve.png"


class MetricsLog:
    """``metrics.csv`` of a run: one row per logging step, a column per metric seen so far.

    Engine-agnostic: an engine calls :meth:`start` with the step it starts (or resumes) from, then
    :meth:`log` per logging step, then :meth:`finish`. Columns are the union of the keys seen so far
    (components can appear after the first step), so the file is rewritten when a new key shows up;
    rows are few, so this is cheap. On resume, rows past the resumed step are dropped from the file
    itself (they belong to the interrupted run and will be logged again).
    """

    def __init__(self, output_dir: str | Path) -> None:
        self.path = Path(output_dir) / METRICS_FILE
        self.rows: list[dict[str, Any]] = []
        self.columns: list[str] = ["step"]

    def start(self, step: int) -> None:
        """Keep the rows of steps ``<= step`` (a resumed run), in memory and on disk."""
        if not self.path.exists():
            return
        with self.path.open(newline="") as f:
            reader = csv.DictReader(f)
            self.columns = list(reader.fieldnames or ["step"])
            rows = list(reader)
        self.rows = [r for r in rows if r.get("step") and int(float(r["step"])) <= step]
        if len(self.rows) != len(rows):
            self._rewrite()

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        """Append one row (scalars only)."""
        row = {"step": step, **{k: v for k, v in metrics.items() if _is_scalar(v)}}
        new = [k for k in row if k not in self.columns]
        self.columns.extend(new)
        self.rows.append(row)
        if new or not self.path.exists():
            self._rewrite()
        else:
            with self.path.open("a", newline="") as f:
                csv.DictWriter(f, self.columns).writerow(row)

    def finish(self) -> None:
        """Draw ``reward_curve.png`` beside the CSV (a failed plot never loses a finished run)."""
        if not self.rows:
            return
        try:
            plot_reward_curve(self.path, self.path.with_name(CURVE_FILE))
        except Exception as err:  # noqa: BLE001
            logger.warning("could not draw the reward curve: %s", err)

    def _rewrite(self) -> None:
        tmp = self.path.with_suffix(".csv.tmp")
        with tmp.open("w", newline="") as f:
            writer = csv.DictWriter(f, self.columns)
            writer.writeheader()
            writer.writerows(self.rows)
        os.replace(tmp, self.path)


def _is_scalar(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def plot_reward_curve(metrics_csv: str | Path, out_png: str | Path) -> Path:
    """Plot ``reward`` (with a rolling mean) and every ``rewards/<term>/mean`` column against the step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    frame = pd.read_csv(metrics_csv)
    columns = [c for c in frame.columns if c == "reward" or (c.startswith("rewards/") and c.endswith("/mean"))]
    if not columns:
        raise ValueError(f"{metrics_csv} has no reward column to plot")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for column in columns:
        data = frame[["step", column]].dropna()
        ax.plot(data["step"], data[column], label=column, linewidth=1, alpha=0.5 if column == "reward" else 0.8)
    reward = frame[["step", "reward"]].dropna() if "reward" in frame else None
    if reward is not None and len(reward) >= 10:  # sampled rewards are noisy: add a rolling mean
        window = max(2, len(reward) // 10)
        smooth = reward["reward"].rolling(window, min_periods=1).mean()
        ax.plot(reward["step"], smooth, color="black", linewidth=2, label=f"reward, mean of {window} steps")
    ax.set_xlabel("optimiser step")
    ax.set_ylabel("mean reward")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_png, dpi=100)
    plt.close(fig)
    return Path(out_png)
