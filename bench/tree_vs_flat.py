"""Held-out reward reached per denoiser evaluation: TreeGRPO against flat Flow-GRPO, in one run.

Both start from the same tiny pre-trained SD3-architecture model (``bench/diffusion_learns.py``'s
pre-training, cached), train on the same prompts with the same reward, clip and learning rate
(``bench/recipes/diffusion-learns-flow-grpo.yaml``), and groups of G = 8 images:

* flat: 8 independent SDE trajectories per prompt, every step trained (G T sampling and G T
  training evaluations per prompt);
* tree: one shared start, SDE branching x2 at ``--branch-steps`` (ODE elsewhere), 8 leaves; only
  the branch transitions are trained, one parent forward for its children. The step advantages are the
  zoo's own construction and the branch steps are fixed (:mod:`zoo.engines.diffusion.tree`: the authors'
  code, with its sliding tree window, could not be read), so this measures the zoo's TreeGRPO.

Denoiser evaluations are counted by the engine (``sample_evals`` + ``train_evals`` per round). The
printed ratio is flat's evaluations to reach a held-out reward target over tree's for the same
target; the target is ``--target-fraction`` of the smaller of the two runs' final gains, so both
runs reach it. TreeGRPO's paper reports 2.4x faster training.

    OMP_NUM_THREADS=1 python bench/tree_vs_flat.py --seeds 0
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
from pathlib import Path

import torch
from diffusion_learns import pretrained  # the same cached pre-trained model

from zoo.train import run as zoo_train

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "bench" / "recipes" / "diffusion-learns-flow-grpo.yaml"


def curve(run_dir: Path) -> list[tuple[int, float]]:
    """(cumulative denoiser evaluations, held-out reward) at each evaluation of a run."""
    points, evals = [], 0
    with (run_dir / "metrics.csv").open() as f:
        for row in csv.DictReader(f):
            evals += int(float(row.get("sample_evals") or 0)) + int(float(row.get("train_evals") or 0))
            if row.get("eval/reward"):
                points.append((evals, float(row["eval/reward"])))
    return points


def evals_to_reach(points: list[tuple[int, float]], target: float) -> float:
    """Evaluations at which the held-out reward first reaches ``target`` (linear between evaluations)."""
    for (e0, r0), (e1, r1) in itertools.pairwise(points):
        if r1 >= target:
            return e0 + (e1 - e0) * (target - r0) / (r1 - r0) if r1 > r0 else e1
    return float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--flat-rounds", type=int, default=30)
    parser.add_argument("--tree-rounds", type=int, default=60)
    parser.add_argument("--branch-steps", default="[1, 2, 3]")
    parser.add_argument("--eval-every", type=int, default=5)
    parser.add_argument("--target-fraction", type=float, default=0.8)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench-diffusion-learns")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for seed in args.seeds:
        model_dir = pretrained("flow_grpo", seed, args.out / "pretrained", 400, 800)
        common = [f"model.name={model_dir}", f"training.seed={seed}", f"training.eval_every={args.eval_every}"]
        runs = {
            "flat": [*common, f"training.steps={args.flat_rounds}"],
            "tree": [*common, f"training.steps={args.tree_rounds}", "algorithm.method=tree_grpo",
                     f"algorithm.branch_steps={args.branch_steps}", "algorithm.branch_factor=2"],
        }  # fmt: skip
        points = {name: curve(zoo_train(str(RECIPE), sets, output_dir=str(args.out / f"tree-vs-flat-seed{seed}-{name}")))
                  for name, sets in runs.items()}  # fmt: skip
        start = points["flat"][0][1]
        gain = min(points["flat"][-1][1], points["tree"][-1][1]) - start
        target = start + args.target_fraction * gain
        reach = {name: evals_to_reach(p, target) for name, p in points.items()}
        print(json.dumps({"seed": seed, "start": round(start, 3), "target": round(target, 3),
                          "evals_to_target": {k: round(v) for k, v in reach.items()},
                          "flat_over_tree": round(reach["flat"] / reach["tree"], 2),
                          "curves": {k: [(e, round(r, 2)) for e, r in p] for k, p in points.items()}}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
