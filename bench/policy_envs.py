"""Environment steps per second of the ``policy`` engine's training environments: in process vs worker processes.

    OMP_NUM_THREADS=1 python bench/policy_envs.py [--steps 300] [--envs 1 2] [--recipe R.yaml ...]

For each recipe (default: the ResiP smoke recipe, FetchPush with its frozen base network run at every
step, and the CaRL smoke recipe, highway-env's Python simulation) and each number of environments, the
environments are built as the engine builds them (:class:`zoo.engines.policy.envs.EnvFactory`, the recipe's
method wrapping the registered environment) in both layouts of ``training.vec_env``: ``dummy`` (one after
another in this process, the baseline) and ``subproc`` (a worker process each). Each steps ``--steps`` times
with the same seeded actions (small, within the action space) in ``--repeats`` timed blocks, the fastest
counting (other work on a shared machine only slows a block down); episodes reset as in training. Only stepping is
timed, after a warm-up: the workers' start-up is printed apart (a run pays it once), and no learning happens,
so the rates bound what a layout can feed a learner. Prints a table with env steps/s and two ratios measured
in the same run: against ``dummy`` with as many environments, and against ``dummy`` with the fewest.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch

from zoo.engines.policy.envs import EnvFactory, training_envs
from zoo.engines.policy.methods import POLICY_METHODS
from zoo.engines.reading import load_recipe

ROOT = Path(__file__).resolve().parents[1]
RECIPES = [ROOT / "domains/robot/recipes/fetch-push-resip-smoke.yaml",
           ROOT / "domains/driving/recipes/carl-highway-smoke.yaml"]  # fmt: skip
LAYOUTS = ("dummy", "subproc")
WARMUP = 5


def factory(path: Path) -> EnvFactory:
    """The recipe's training environment as the engine builds it (the base policy loaded on the CPU)."""
    import zoo

    recipe = load_recipe(path)
    base = zoo.load(recipe.base.model, device="cpu", dtype="float32") if recipe.base.model else None
    return EnvFactory(POLICY_METHODS.get(recipe.algorithm.method), recipe, base)


def steps_per_second(make: EnvFactory, n_envs: int, layout: str, steps: int, repeats: int,
                     seed: int) -> tuple[float, float]:  # fmt: skip
    """(start-up seconds, env steps per second of the fastest of ``repeats`` timed blocks) in ``layout``."""
    start = time.perf_counter()
    venv = training_envs(make, n_envs, layout)
    try:
        venv.seed(seed)
        venv.reset()
        started = time.perf_counter() - start
        space = venv.action_space
        rng = np.random.default_rng(seed)
        low, high = np.clip(space.low, -0.1, 0.1), np.clip(space.high, -0.1, 0.1)
        actions = rng.uniform(low, high, (WARMUP + steps, n_envs, *space.shape)).astype(space.dtype)
        for action in actions[:WARMUP]:
            venv.step(action)
        best = float("inf")
        for _ in range(repeats):
            begin = time.perf_counter()
            for action in actions[WARMUP:]:
                venv.step(action)
            best = min(best, time.perf_counter() - begin)
        return started, n_envs * steps / best
    finally:
        venv.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", type=Path, nargs="+", default=RECIPES, help="policy-engine recipes to build")
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 2], help="numbers of environments to compare")
    parser.add_argument("--steps", type=int, default=300, help="timed vectorised steps per configuration")
    parser.add_argument("--repeats", type=int, default=3, help="timed blocks per configuration; the fastest counts")
    parser.add_argument("--seed", type=int, default=0, help="seed of the environments and the actions")
    args = parser.parse_args()
    if min(args.steps, args.repeats, *args.envs) < 1:
        parser.error("--steps, --repeats and every --envs must be >= 1")
    torch.set_num_threads(1)  # as each worker runs; the dummy baseline's base network gets no extra threads
    print(f"{os.cpu_count()} CPU cores; fastest of {args.repeats} blocks of {args.steps} steps after {WARMUP} warm-up; "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")  # fmt: skip
    header = f"{'recipe':26s} {'envs':>4s} {'layout':8s} {'start s':>8s} {'env steps/s':>12s} " \
             f"{'vs dummy, same envs':>20s} {'vs dummy x' + str(min(args.envs)):>14s}"  # fmt: skip
    print(header)
    print("-" * len(header))
    for path in args.recipe:
        make = factory(path)
        rates: dict[tuple[int, str], float] = {}
        for n_envs in sorted(set(args.envs)):
            for layout in LAYOUTS:
                started, rate = steps_per_second(make, n_envs, layout, args.steps, args.repeats, args.seed)
                rates[n_envs, layout] = rate
                same, fewest = rate / rates[n_envs, "dummy"], rate / rates[min(args.envs), "dummy"]
                print(f"{path.stem:26s} {n_envs:4d} {layout:8s} {started:8.2f} {rate:12.1f} "
                      f"{same:19.2f}x {fewest:13.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
