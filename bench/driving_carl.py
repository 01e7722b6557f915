"""CaRL proof: Beta-PPO on CaRL's reward vs the untrained policy and highway-env's built-in driver.

Trains the recipe (default ``domains/driving/recipes/carl-highway.yaml``; or takes a finished run
with ``--run-dir``), then drives three policies on the *same* seeded episodes of the recipe's
environment (episode i reset with ``--seed + i``): the policy before training (the seeded initial
network, exported the same way), the trained policy (``final/``, mean action) and the built-in
driver (highway-env's ``IDMVehicle`` in the ego's seat: IDM speed control, MOBIL lane changes).
Prints, as JSON, each one's mean route completion (95 % bootstrap interval), collision, off-road
and blocked rates and success (95 % Wilson intervals), the training's CPU minutes and env steps,
and writes the report to ``<run>/driving_carl.json``.

    OMP_NUM_THREADS=1 python bench/driving_carl.py --episodes 50
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from pathlib import Path

import numpy as np
import torch

import zoo
from domains.driving.carl import CARL_PPO, export_beta_policy
from domains.driving.carl_env import ACTION_DIM
from domains.driving.carl_eval import DrivingOutcomes, drive
from zoo.engines.policy.engine import make_environment
from zoo.engines.reading import load_recipe
from zoo.train import run

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "domains" / "driving" / "recipes" / "carl-highway.yaml"


def untrained_policy(recipe, folder: Path) -> Path:
    """The network PPO starts from (same seed as training), exported as a ``beta-mlp`` directory."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.manual_seed(recipe.training.seed)
    env = DummyVecEnv([lambda: make_environment(recipe.env.name, **recipe.env.kwargs)] * recipe.algorithm.n_envs)
    return export_beta_policy(CARL_PPO.build(env, recipe), folder)


def idle(obs: np.ndarray) -> np.ndarray:
    """The built-in driver's action (ignored: the IDM vehicle in the ego's seat drives itself)."""
    return np.zeros(ACTION_DIM, np.float32)


def evaluate(recipe, policy_dir: Path, episodes: int, seed: int) -> dict[str, DrivingOutcomes]:
    """Untrained, trained and built-in driver on the same seeded episodes."""
    env = make_environment(recipe.env.name, **recipe.env.kwargs)
    reference = make_environment(recipe.env.name, **{**recipe.env.kwargs, "driver": "idm"})
    with tempfile.TemporaryDirectory() as tmp:
        before = zoo.load(str(untrained_policy(recipe, Path(tmp) / "untrained")))
        after = zoo.load(str(policy_dir))
        return {"untrained": drive(env, before.act, episodes, seed, on_reset=before.reset),
                "trained": drive(env, after.act, episodes, seed, on_reset=after.reset),
                "builtin_driver": drive(reference, idle, episodes, seed)}  # fmt: skip


def training_cost(run_dir: Path) -> dict[str, float]:
    """CPU minutes and environment steps of the run's last logged iteration (``metrics.csv``)."""
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    return {"cpu_minutes": float(rows[-1]["cpu_minutes"]), "env_steps": int(float(rows[-1]["env_steps"])),
            "iterations": int(rows[-1]["step"])}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", type=Path, default=RECIPE, help="policy-engine recipe (carl-ppo method)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="recipe override key=value")
    parser.add_argument("--run-dir", type=Path, default=None, help="evaluate this finished run instead of training")
    parser.add_argument("--episodes", type=int, default=50, help="seeded evaluation episodes per driver (>= 50)")
    parser.add_argument("--seed", type=int, default=1000, help="episode i uses seed + i")
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = args.run_dir or run(str(args.recipe), args.overrides, output_dir=str(ROOT / "runs" / args.recipe.stem))
    recipe = load_recipe(out / "recipe.yaml")
    results = evaluate(recipe, out / "final", args.episodes, args.seed)
    report = {"recipe": str(args.recipe), "run_dir": str(out), "env": recipe.env.name, "env_kwargs": recipe.env.kwargs,
              "seed": args.seed, "training": training_cost(out),
              **{name: outcome.to_json() for name, outcome in results.items()}}  # fmt: skip
    (out / "driving_carl.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
