"""Readable run logs for every engine: ``metrics.csv`` (one row per logging step) and ``reward_curve.png``.

TensorBoard events and progress bars are each engine's trainer's own (transformers'
``TensorBoardCallback`` for the VLM engine). What the ecosystem lacks is a plain CSV a reader can
open in a spreadsheet, with one column per reward term and per reward component, and a PNG of
the reward curve: :class:`MetricsLog` writes them for any engine.
"""

from __future__ import annotations

import csv
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

from zoo.runs import RunStart, is_main_process

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.csv"
CPU_MINUTES = "cpu_minutes"  # CPU time of the training process (all threads), summed over resumes


#: The largest ``metrics.csv`` a resume reads back (a million logged steps of 100 columns is well under it).
MAX_METRICS_BYTES = 256 << 20

class MetricsLog:
    """``metrics.csv`` of a run: one row per logging step, a column per metric seen so far.

    Engine-agnostic: an engine calls :meth:`start` with the step it starts (or resumes) from, then
    :meth:`log` per logging step, then :meth:`finish`. Columns are the union of the keys seen so far
    (components can appear after the first step), so the file is rewritten when a new key shows up;
    rows are few, so this is cheap. On resume, rows past the resumed step are dropped from the file
    itself (they belong to the interrupted run and will be logged again). Every row carries
    ``cpu_minutes`` (continued across resumes), the x axis of equal-compute comparisons.

    In a multi-process run only the main process writes the file (one writer: every rank
    rewriting it through the same temporary name raced, and each rank's row would repeat the
    step); the engine logs values that are already the same on every rank (gathered).
    """

    def __init__(self, output_dir: str | Path, curve: str = "reward") -> None:
        self.path = Path(output_dir) / METRICS_FILE
        self.writes = is_main_process()
        self.curve = curve  # the metric :meth:`finish` draws into ``<curve>_curve.png``
        self._cpu_start = time.process_time()
        self._cpu_before = 0.0  # CPU minutes of the run before a resume
        self.rows: list[dict[str, Any]] = []
        self.columns: list[str] = ["step"]

    @classmethod
    def for_run(cls, start: RunStart, curve: str = "reward") -> MetricsLog:
        """The run's ``metrics.csv``, started at ``start.step`` (:func:`zoo.runs.start_run`).

        Resumed, the rows past the checkpoint go (the interrupted run logged them; they are logged again).
        Fresh, every row goes, a step-0 row included: rows left in the directory belong to another run.
        Called by the loop once its model is built, so that ``cpu_minutes`` counts training, not loading.
        """
        log = cls(start.output_dir, curve=curve)
        log.start(start.step if start.checkpoint is not None else -1)
        return log

    def start(self, step: int) -> None:
        """Keep the rows of steps ``<= step`` (a resumed run), in memory and on disk."""
        if not self.writes or not self.path.exists():
            return
        if not self.path.is_file() or self.path.stat().st_size > MAX_METRICS_BYTES:  # a handed directory's file
            raise ValueError(f"{self.path} is not a metrics file this zoo writes (not a regular file, or over "
                             f"{MAX_METRICS_BYTES >> 20} MiB); move it aside to resume")  # fmt: skip
        with self.path.open(newline="") as f:
            reader = csv.DictReader(f)
            self.columns = list(reader.fieldnames or ["step"])
            rows = list(reader)
        self.rows = [r for r in rows if r.get("step") and int(float(r["step"])) <= step]
        if len(self.rows) != len(rows):
            self._rewrite()
        if self.rows and self.rows[-1].get(CPU_MINUTES):
            self._cpu_before = float(self.rows[-1][CPU_MINUTES])
        self._cpu_start = time.process_time()

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        """Append one row (scalars only), with the run's CPU minutes so far unless the engine gives them; a second
        log of the same step (the trainer's end-of-training summary after the step's own metrics) joins that step's
        row, so ``metrics.csv`` holds one row per step."""
        cpu = self._cpu_before + (time.process_time() - self._cpu_start) / 60
        row = {"step": step, CPU_MINUTES: cpu, **{k: v for k, v in metrics.items() if _is_scalar(v)}}
        new = [k for k in row if k not in self.columns]
        self.columns.extend(new)
        again = bool(self.rows) and str(self.rows[-1].get("step")) == str(step)
        if again:
            self.rows[-1] = {**self.rows[-1], **row}
        else:
            self.rows.append(row)
        if not self.writes:
            return
        if new or again or not self.path.exists():
            self._rewrite()
        else:
            with self.path.open("a", newline="") as f:
                csv.DictWriter(f, self.columns).writerow(row)

    def finish(self) -> None:
        """Draw ``<curve>_curve.png`` beside the CSV (a failed plot never loses a finished run)."""
        if not self.rows or not self.writes:
            return
        try:
            plot_curve(self.path, self.path.with_name(f"{self.curve}_curve.png"), self.curve)
        except Exception as err:  # noqa: BLE001
            logger.warning("could not draw the reward curve: %s", err)

    def _rewrite(self) -> None:
        tmp = self.path.with_suffix(f".csv.tmp{os.getpid()}")
        with tmp.open("w", newline="") as f:
            writer = csv.DictWriter(f, self.columns)
            writer.writeheader()
            writer.writerows(self.rows)
        os.replace(tmp, self.path)


def _is_scalar(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def rolling_mean(values: list[float], window: int) -> list[float]:
    """The mean of each value and the ``window - 1`` before it (fewer at the start), as pandas'
    ``Series.rolling(window, min_periods=1).mean()`` computes it."""
    return [sum(values[max(0, i - window + 1) : i + 1]) / (i + 1 - max(0, i - window + 1)) for i in range(len(values))]


def _logged(rows: list[dict[str, str]], column: str) -> tuple[list[float], list[float]]:
    """``(steps, values)`` of the rows that logged ``column`` (a CSV cell left empty, or NaN, is a step that did not)."""
    pairs = [(float(row["step"]), float(row[column])) for row in rows if row.get(column) not in (None, "")
             and row.get("step") not in (None, "")]  # fmt: skip
    pairs = [(step, value) for step, value in pairs if not (math.isnan(step) or math.isnan(value))]
    return [step for step, _ in pairs], [value for _, value in pairs]


def plot_curve(metrics_csv: str | Path, out_png: str | Path, metric: str = "reward") -> Path:
    """Plot ``metric`` (with a rolling mean) against the step; for ``reward``, every
    ``rewards/<term>/mean`` column too."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(metrics_csv, newline="") as handle:
        rows = list(csv.DictReader(handle))
    header = list(rows[0]) if rows else []
    terms = metric == "reward"
    columns = [c for c in header if c == metric or (terms and c.startswith("rewards/") and c.endswith("/mean"))]
    if not columns:
        raise ValueError(f"{metrics_csv} has no {metric} column to plot")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for column in columns:
        steps, values = _logged(rows, column)
        ax.plot(steps, values, label=column, linewidth=1, alpha=0.5 if column == metric else 0.8)
    steps, values = _logged(rows, metric)
    if len(values) >= 10:  # sampled rewards and batch losses are noisy: add a rolling mean
        window = max(2, len(values) // 10)
        ax.plot(steps, rolling_mean(values, window), color="black", linewidth=2, label=f"{metric}, mean of {window} steps")
    ax.set_xlabel("optimiser step")
    ax.set_ylabel(f"mean {metric}" if terms else metric)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_png, dpi=100)
    plt.close(fig)
    return Path(out_png)
