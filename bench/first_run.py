"""The README's first training run, measured: does its reward rise, and in how many CPU minutes?

Runs ``zoo train domains/synthetic/recipes/synthetic-colour-grpo.yaml`` exactly as the README prints it
(GRPO from the shipped warm start ``checkpoints/synthetic-colour-sft-tiny``), once per seed, each in a
fresh process timed from the command to its exit, and prints the run's own reward curve from
``metrics.csv``: the mean training reward of every ``--window`` steps, the first and last ``--k`` steps,
the CPU minutes of the run's own counter and of the whole process, the wall time and the load average
(the machine may be shared: wall time then says little, CPU time still does).
With ``--null`` each seed also runs at learning rate 0, the same sampling with no update: how far the
last-k mean moves from the first-k mean by chance, the noise ``tests/domains/synthetic/test_first_run.py``
sets its margin above.

    python bench/first_run.py                       # seed 0, the full recipe
    python bench/first_run.py --seeds 0 1 2 --steps 30 --null
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECIPE = "domains/synthetic/recipes/synthetic-colour-grpo.yaml"


def rewards(run: Path) -> tuple[list[float], float]:
    """The per-step training rewards of ``run/metrics.csv`` and the run's CPU minutes (its last row)."""
    with (run / "metrics.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    return [float(r["reward"]) for r in rows if r.get("reward")], float(rows[-1]["cpu_minutes"])


def zoo_train(out: Path, overrides: list[str]) -> dict[str, float]:
    """``zoo train RECIPE --set ... --output-dir OUT`` in a fresh process; its wall and CPU seconds."""
    command = [sys.executable, "-m", "zoo.cli", "train", RECIPE, "--output-dir", str(out)]
    for override in overrides:
        command += ["--set", override]
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(time.perf_counter() - t0, 1), "process_cpu_min": round(cpu / 60, 2)}


def measure(seed: int, lr: str | None, args: argparse.Namespace) -> dict[str, object]:
    """One run's curve numbers: window means, first/last ``k`` means and their difference, times."""
    overrides = [f"training.seed={seed}"]
    overrides += [f"training.{key}={args.steps}" for key in ("steps", "save_steps")] if args.steps else []
    overrides += [f"training.lr={lr}"] if lr is not None else []
    out = Path(args.out) / f"seed{seed}{'-lr0' if lr is not None else ''}"
    load = os.getloadavg()[0]
    times = zoo_train(out, overrides)
    curve, run_minutes = rewards(out)
    k = args.k
    first, last = statistics.mean(curve[:k]), statistics.mean(curve[-k:])
    return {"seed": seed, "lr": lr or "recipe", "steps": len(curve), "run_cpu_min": round(run_minutes, 2), **times,
            "load_avg_1min_at_start": round(load, 1), f"first_{k}": round(first, 3), f"last_{k}": round(last, 3),
            "rise": round(last - first, 3),
            "window_means": [round(statistics.mean(curve[i : i + args.window]), 3)
                             for i in range(0, len(curve), args.window)]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--steps", type=int, default=None, help="training.steps (default: the recipe's)")
    parser.add_argument("--k", type=int, default=10, help="steps averaged at each end")
    parser.add_argument("--window", type=int, default=10, help="steps per printed curve point")
    parser.add_argument("--null", action="store_true", help="also run each seed at lr 0 (the noise of the rise)")
    parser.add_argument("--out", default="runs/bench-first-run")
    args = parser.parse_args()
    results = []
    for seed in args.seeds:
        for lr in [None, "0"] if args.null else [None]:
            results.append(measure(seed, lr, args))
            print(json.dumps(results[-1]), flush=True)
    for arm in sorted({r["lr"] for r in results}):
        rises = [r["rise"] for r in results if r["lr"] == arm]
        print(json.dumps({"lr": arm, "rise_min": min(rises), "rise_max": max(rises), "rise_mean":
                          round(statistics.mean(rises), 3), "runs": len(rises)}))  # fmt: skip


if __name__ == "__main__":
    main()
