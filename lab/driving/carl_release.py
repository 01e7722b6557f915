"""Ship a finished CaRL run as ``checkpoints/carl-highway-tiny``: ``python -m lab.driving.carl_release --run-dir RUN``.

``RUN`` is a ``carl-highway`` run that ``bench/driving_carl.py`` evaluated (it holds
``driving_carl.json``). The policy directory (``final/``), the training curve and ``metrics.csv``
are copied; ``training.json`` records the recipe, the training's CPU minutes and environment steps,
and the benchmark's measured numbers (untrained policy, trained policy, built-in driver).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from lab.records import publish_with_current_card
from zoo.hub import CHECKPOINTS_DIR

NAME = "carl-highway-tiny"
REPORT = "driving_carl.json"


def release(run_dir: Path, target: Path | None = None) -> Path:
    """Copy the run's exported policy and record into ``target`` (default ``checkpoints/carl-highway-tiny``)."""
    report_file = run_dir / REPORT
    if not report_file.is_file():
        raise FileNotFoundError(
            f"{run_dir} has no {REPORT}: run `python bench/driving_carl.py --run-dir {run_dir}` first"
        )
    target = target or CHECKPOINTS_DIR / NAME
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(run_dir / "final", target)
    for name in ("metrics.csv", "success_rate_curve.png"):
        shutil.copy(run_dir / name, target / name)
    report = json.loads(report_file.read_text())
    info = {"entry": NAME, "script": "python bench/driving_carl.py && python -m lab.driving.carl_release",
            "recipe": (run_dir / "recipe.yaml").read_text(), "training": report.pop("training"),
            "evaluation": report}  # fmt: skip
    publish_with_current_card(info, target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True, help="a carl-highway run evaluated by the bench")
    print(release(parser.parse_args().run_dir))


if __name__ == "__main__":
    main()
