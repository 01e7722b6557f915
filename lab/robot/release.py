"""Build the robot domain's shipped checkpoints: ``python -m lab.robot.release base|residual``.

``base``: scripted FetchPush demonstrations -> a chunked BC MLP (``checkpoints/fetch-push-bc-tiny``),
deliberately small and open-loop over 4-step chunks so that it succeeds only part of the time.
``residual``: a ResiP recipe (``--recipe``, default ``fetch-push-resip-scale0.3``) on that base,
exported with it as ``checkpoints/fetch-push-resip-tiny``. Each writes ``training.json`` (arguments, measured numbers).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from lab.records import publish_with_current_card
from zoo.hub import CHECKPOINTS_DIR

BASE_NAME = "fetch-push-bc-tiny"
RESIDUAL_NAME = "fetch-push-resip-tiny"
RECIPES = Path(__file__).resolve().parents[2] / "domains" / "robot" / "recipes"


def release_base(episodes: int = 100, chunk: int = 4, steps: int = 2000, seed: int = 0, eval_episodes: int = 100) -> Path:
    """Demonstrations, BC, evaluation; writes the base checkpoint and its ``training.json``."""
    import torch

    import zoo
    from domains.robot.bc import train_bc
    from domains.robot.envs import collect_demos, make_fetch_push
    from zoo.engines.policy.evaluate import success_rate
    from zoo.pipelines.policy import save_policy

    torch.set_num_threads(1)
    start = time.time()
    demos = collect_demos(episodes, seed=seed)
    model, config, norm, losses = train_bc(demos, chunk=chunk, steps=steps, seed=seed)
    folder = save_policy(CHECKPOINTS_DIR / BASE_NAME, model, config, norm)
    pipe = zoo.load(str(folder))
    result = success_rate(make_fetch_push(), pipe.act, eval_episodes, 1000, on_reset=pipe.reset)
    info = {"entry": BASE_NAME, "script": "python -m lab.robot.release base",
            "args": {"demo_episodes": episodes, "demo_seed": seed, "chunk": chunk, "steps": steps, "lr": 1e-3,
                     "batch_size": 256},
            "demo_transitions": len(demos["actions"]), "demo_successful_episodes": len(set(demos["episode_index"].tolist())),
            "final_bc_loss": losses[-1], "eval_seed": 1000, "eval": result.to_json(),
            "wall_seconds": round(time.time() - start, 1)}  # fmt: skip
    publish_with_current_card(info, folder)
    return folder


def release_residual(recipe: str, overrides: list[str], run_dir: Path | None = None) -> Path:
    """Train ``recipe`` (or take the finished run in ``run_dir``) and ship its ``final/`` policy with its record."""
    from zoo.train import run

    start = time.time()
    out = run_dir or run(str(RECIPES / f"{recipe}.yaml"), overrides, output_dir=f"runs/{recipe}")
    target = CHECKPOINTS_DIR / RESIDUAL_NAME
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(out / "final", target)
    for name in ("metrics.csv", "success_rate_curve.png"):
        shutil.copy(out / name, target / name)
    info = {"entry": RESIDUAL_NAME, "script": "python -m lab.robot.release residual",
            "recipe": (out / "recipe.yaml").read_text(), "overrides": overrides,
            "cpu_minutes_training": float((out / "metrics.csv").read_text().splitlines()[-1].split(",")[1]),
            "eval": json.loads((out / "eval.json").read_text())}  # fmt: skip
    if run_dir is None:
        info["wall_seconds"] = round(time.time() - start, 1)
    publish_with_current_card(info, target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=("base", "residual"))
    parser.add_argument("--recipe", default="fetch-push-resip-scale0.3", help="residual: recipe name in domains/robot/recipes/")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="residual: recipe override")
    parser.add_argument("--run-dir", type=Path, default=None, help="residual: ship this finished run instead")
    args = parser.parse_args()
    if args.stage == "base":
        print(release_base())
    else:
        print(release_residual(args.recipe, args.overrides, args.run_dir))


if __name__ == "__main__":
    main()
