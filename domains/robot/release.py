"""Build the robot domain's shipped checkpoints: ``python -m domains.robot.release base|residual``.

``base``: scripted FetchPush demonstrations -> a chunked BC MLP (``checkpoints/fetch-push-bc-tiny``),
deliberately small and open-loop over 4-step chunks so that it succeeds only part of the time.
``residual``: the ``fetch-push-resip`` recipe on that base, exported with it as
``checkpoints/fetch-push-resip-tiny``. Each writes ``training.json`` (arguments, measured numbers).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from zoo.hub import CHECKPOINTS_DIR

BASE_NAME = "fetch-push-bc-tiny"
RESIDUAL_NAME = "fetch-push-resip-tiny"
RECIPES = Path(__file__).parent / "recipes"


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
    info = {"entry": BASE_NAME, "script": "python -m domains.robot.release base",
            "args": {"demo_episodes": episodes, "demo_seed": seed, "chunk": chunk, "steps": steps, "lr": 1e-3,
                     "batch_size": 256},
            "demo_transitions": len(demos["actions"]), "demo_successful_episodes": len(set(demos["episode_index"].tolist())),
            "final_bc_loss": losses[-1], "eval_seed": 1000, "eval": result.to_json(),
            "wall_seconds": round(time.time() - start, 1)}  # fmt: skip
    (folder / "training.json").write_text(json.dumps(info, indent=2))
    return folder


def release_residual(overrides: list[str]) -> Path:
    """Train the ``fetch-push-resip`` recipe and ship its ``final/`` policy with the run's record."""
    from zoo.train import run

    start = time.time()
    out = run(str(RECIPES / "fetch-push-resip.yaml"), overrides, output_dir=f"runs/{RESIDUAL_NAME}")
    target = CHECKPOINTS_DIR / RESIDUAL_NAME
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(out / "final", target)
    for name in ("metrics.csv", "success_rate_curve.png"):
        shutil.copy(out / name, target / name)
    info = {"entry": RESIDUAL_NAME, "script": "python -m domains.robot.release residual",
            "recipe": (out / "recipe.yaml").read_text(), "overrides": overrides,
            "eval": json.loads((out / "eval.json").read_text()), "wall_seconds": round(time.time() - start, 1)}  # fmt: skip
    (target / "training.json").write_text(json.dumps(info, indent=2))
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=("base", "residual"))
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="recipe override (residual)")
    args = parser.parse_args()
    print(release_base() if args.stage == "base" else release_residual(args.overrides))


if __name__ == "__main__":
    main()
