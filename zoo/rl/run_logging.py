"""Readable run logs: ``metrics.csv`` (one row per logging step) and ``reward_curve.png`` at the end.

TensorBoard events come from transformers' own ``TensorBoardCallback`` (the trainer asks for it
through ``report_to`` when tensorboard is importable); the progress bar is the Trainer's tqdm
bar. What the ecosystem lacks is a plain CSV a reader can open in a spreadsheet, with one column
per reward term and per reward component, and a PNG of the reward curve — this module adds them.
"""

from __future__ import annotations

import csv
import logging
import os
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.csv"
CURVE_FILE = "reward_curve.png"


class RunLogger(TrainerCallback):
    """Appends every training log to ``metrics.csv``; draws ``reward_curve.png`` when training ends.

    Columns are the union of the keys seen so far (components can appear after the first step), so
    the file is rewritten when a new key shows up; rows are few (one per logging step), so this is
    cheap. On resume, the rows already in the file up to the resumed step are kept.
    """

    def __init__(self, output_dir: str | Path) -> None:
        self.path = Path(output_dir) / METRICS_FILE
        self.rows: list[dict[str, Any]] = []
        self.columns: list[str] = ["step"]

    def on_train_begin(self, args, state, control, **kwargs):
        start = state.global_step
        if self.path.exists():
            with self.path.open(newline="") as f:
                reader = csv.DictReader(f)
                self.columns = list(reader.fieldnames or ["step"])
                self.rows = [r for r in reader if r.get("step") and int(float(r["step"])) <= start]

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        row = {"step": state.global_step, **{k: v for k, v in logs.items() if _is_scalar(v)}}
        new = [k for k in row if k not in self.columns]
        self.columns.extend(new)
        self.rows.append(row)
        if new or not self.path.exists():
            self._rewrite()
        else:
            with self.path.open("a", newline="") as f:
                csv.DictWriter(f, self.columns).writerow(row)

    def on_train_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero and self.rows:
            try:
                plot_reward_curve(self.path, self.path.with_name(CURVE_FILE))
            except Exception as err:  # a failed plot must not lose a finished run
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
