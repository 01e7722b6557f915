"""Residual RL proof: success of the frozen BC base vs base + residual on the same seeded episodes.

Both policies run deterministically on FetchPush-v4 (sparse success, episodes end on success, 50
steps) with episode i reset by seed ``--seed + i``, through ``pipe.act`` (the base's chunk queue
kept, the residual applied every step). Prints, as JSON: each policy's success rate with its 95 %
Wilson interval, the paired difference with a 95 % bootstrap interval over episodes (resampling
episodes keeps the pairing), and the discordant counts (episodes only one policy solves). Saves
a before/after rollout strip (PNG) of the first seed the base fails and the residual solves.

    MUJOCO_GL=egl OMP_NUM_THREADS=1 python bench/robot_residual.py --episodes 100

Any two policy directories compare the same way, e.g. DPPO's behaviour-cloned and fine-tuned
policies: ``--base runs/fetch-push-dppo/pretrained --policy runs/fetch-push-dppo/final``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("MUJOCO_GL", "egl")

import zoo
from domains.robot.envs import make_fetch_push
from zoo.engines.policy.evaluate import success_rate


def paired_bootstrap(a: np.ndarray, b: np.ndarray, draws: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """95 % percentile interval of ``mean(b) - mean(a)`` resampling episodes (pairs) with replacement."""
    rng = np.random.default_rng(seed)
    index = rng.integers(0, len(a), size=(draws, len(a)))
    diffs = b[index].mean(1) - a[index].mean(1)
    return float(np.quantile(diffs, 0.025)), float(np.quantile(diffs, 0.975))


def frames(pipe, seed: int, count: int = 6) -> tuple[list[np.ndarray], list[int], bool]:
    """``count`` evenly spaced rendered frames of one episode, their steps, and whether it succeeded."""
    env = make_fetch_push(render_mode="rgb_array")
    obs, _ = env.reset(seed=seed)
    pipe.reset()
    shots, done, info = [env.render()], False, {}
    while not done:
        obs, _, terminated, truncated, info = env.step(pipe.act(obs))
        done = terminated or truncated
        shots.append(env.render())
    env.close()
    steps = np.linspace(0, len(shots) - 1, count).round().astype(int).tolist()
    return [shots[s] for s in steps], steps, bool(info.get("is_success"))


def strip(base, trained, seed: int, out: Path) -> Path:
    """Two rows (base, base + residual) of frames of episode ``seed``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [("base", *frames(base, seed)), ("base + residual", *frames(trained, seed))]
    fig, axes = plt.subplots(2, 6, figsize=(12, 4.4))
    for r, (label, shots, steps, success) in enumerate(rows):
        for c, (shot, step) in enumerate(zip(shots, steps)):
            ax = axes[r, c]
            ax.imshow(shot[60:420, 60:420])
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"t={step}", fontsize=8)
        axes[r, 0].set_ylabel(f"{label}\n({'success' if success else 'failure'})", fontsize=9)
    fig.suptitle(f"FetchPush-v4, seed {seed}: the red dot is the goal", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="fetch-push-bc-tiny", help="zoo name or directory of the base")
    parser.add_argument("--policy", default="fetch-push-resip-tiny", help="zoo name or directory of base + residual")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1000, help="episode i uses seed + i")
    parser.add_argument("--strip", type=Path, default=ROOT / "runs" / "robot_residual_strip.png")
    args = parser.parse_args()
    base, trained = zoo.load(args.base), zoo.load(args.policy)
    env = make_fetch_push()
    results = {label: success_rate(env, pipe.act, args.episodes, args.seed, on_reset=pipe.reset)
               for label, pipe in (("base", base), ("residual", trained))}  # fmt: skip
    a = np.asarray(results["base"].successes, dtype=float)
    b = np.asarray(results["residual"].successes, dtype=float)
    report = {"env": "FetchPush-v4 (sparse success, terminate on success, 50 steps)", "seed": args.seed,
              "base": {"model": args.base, **results["base"].to_json()},
              "residual": {"model": args.policy, **results["residual"].to_json()},
              "difference": float(b.mean() - a.mean()), "difference_ci95_paired_bootstrap": paired_bootstrap(a, b),
              "only_base_succeeds": int(((a == 1) & (b == 0)).sum()),
              "only_residual_succeeds": int(((a == 0) & (b == 1)).sum())}  # fmt: skip
    shown = next((args.seed + i for i in range(args.episodes) if a[i] == 0 and b[i] == 1), None)
    if shown is not None:
        args.strip.parent.mkdir(parents=True, exist_ok=True)
        report["strip"] = str(strip(base, trained, shown, args.strip))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
