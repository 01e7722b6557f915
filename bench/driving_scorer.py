"""The driving scorer's CPU time per trajectory: this checkout against an earlier commit's, same trajectories.

    OMP_NUM_THREADS=1 python bench/driving_scorer.py [--scenes 64] [--baseline 298c790]

The baseline is the scorer as it was at ``--baseline`` (default: the last commit before the batched
geometry, when every box pair, corner and Savitzky-Golay filter was its own call), unpacked from git
into a temporary folder and run in a subprocess with that folder first on the path. Both sides score
the same scenes (held-out seed, 56 px: the image does not matter) with what GRPO's reward sees, a
group of 8 answers per scene (the logged drive plus 7 with waypoint noise of 0.1 to 3 m), under v1
(the reward), then each answer under v2 too (what ``zoo eval`` adds). Prints, as JSON, the CPU
milliseconds per scored trajectory of each side, the ratio baseline / current, and the largest
difference between any of the two sides' sub-metrics or scores (the batched forms change the order of
a few float sums, nothing else).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
NOISE = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0)  # [m] per answer of a group; heading noise is 1/20 of it


def measure(scenes: int, versions: list[str], out: Path) -> None:
    """Score the bench's trajectories under ``versions`` with the ``domains`` package first on the path (a fresh
    process a pass, so nothing either side remembers carries over); write the time and the numbers."""
    from domains.driving.data import EVAL_SEED, synthetic_driving
    from domains.driving.metrics import score
    from domains.driving.scene import Scene

    rng = np.random.default_rng(0)
    groups = []
    for sample in synthetic_driving(n=scenes, seed=EVAL_SEED, size=56):
        logged = np.asarray(sample.target["waypoints"], dtype=float)
        answers = [logged + rng.normal(0.0, s, logged.shape) * [1.0, 1.0, 0.05] for s in NOISE]
        groups.append((sample.target["scene"], np.asarray(sample.target["reference"], dtype=float), answers))
    rows = []
    start = time.process_time()
    for scene_dict, reference, answers in groups:
        for answer in answers:
            scene = Scene.from_dict(scene_dict)  # as the reward does, once per answer's row
            for version in versions:
                result = score(scene, answer, reference, version)
                rows.append([result[k] for k in sorted(result)])
    ms = 1e3 * (time.process_time() - start) / (len(groups) * len(NOISE))
    out.write_text(json.dumps({"ms_per_trajectory": ms, "numbers": rows}))


def run_side(tree: Path, scenes: int, tmp: Path) -> dict[str, dict]:
    """Both passes (v1; v1 and v2) on one side, each in its own process."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    passes = {}
    for versions in (["v1"], ["v1", "v2"]):
        out = tmp / f"{tree.name}-{'+'.join(versions)}.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", str(out), "--scenes", str(scenes),
               "--versions", *versions]  # fmt: skip
        subprocess.run(cmd, cwd=tree, env=env, check=True)
        passes["+".join(versions)] = json.loads(out.read_text())
    return passes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenes", type=int, default=64, help="held-out scenes, 8 answers each (default 64)")
    parser.add_argument("--baseline", default="298c790", help="the commit whose scorer is the baseline")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the subprocess of one pass
    parser.add_argument("--versions", nargs="+", default=["v1"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.scenes, args.versions, args.measure)
        return
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "baseline"
        tree.mkdir()
        archive = Path(tmp) / "baseline.tar"
        subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), args.baseline], check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(tree, filter="data")
        baseline = run_side(tree, args.scenes, Path(tmp))
        current = run_side(ROOT, args.scenes, Path(tmp))
    report = {"scenes": args.scenes, "answers_per_scene": len(NOISE), "baseline": args.baseline}
    for name, base in baseline.items():
        now = current[name]
        report[name] = {
            "ms_per_trajectory": {"baseline": round(base["ms_per_trajectory"], 2),
                                  "current": round(now["ms_per_trajectory"], 2)},
            "ratio_baseline_over_current": round(base["ms_per_trajectory"] / now["ms_per_trajectory"], 2),
            "max_abs_difference": float(np.abs(np.asarray(base["numbers"]) - np.asarray(now["numbers"])).max()),
        }  # fmt: skip
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
