"""Does UI-S1's semi-online RL beat more SFT for a tiny agent? The experiment, and ``checkpoints/gui-agent-tiny``.

A randomly initialised ~1M-parameter Qwen2.5-VL learns to act on synthetic 2-4 step phone episodes
(click a labelled button, type the word the goal names, press Back, finish) in UI-S1's answer
format, each step in its dialogue with two screenshots of memory. Every stage is a recipe
``zoo train`` runs; this driver runs them in order, evaluates their checkpoints on held-out
episodes and writes the record::

    python -m lab.gui.agent_release sft                    # ui-s1-tiny-sft.yaml: the SFT start
    python -m lab.gui.agent_release rl --seed 0            # ui-s1-tiny-cpu.yaml: UI-S1 from it
    python -m lab.gui.agent_release sft-continue --seed 0  # ui-s1-tiny-sft-control.yaml, RL's CPU time
    python -m lab.gui.agent_release confirm                # every arm again on 3,000 other episodes
    python -m lab.gui.agent_release report                 # before/after table of both arms
    python -m lab.gui.agent_release finalize               # checkpoint + training.json + card
                                                               # (when the result is worth releasing)
    python -m lab.gui.agent_release all                    # everything above, seeds 0 1

``record`` re-evaluates runs already trained (e.g. started by hand with ``zoo train`` and the
same overrides) without training again. The metric is AndroidControl's step-wise protocol
(:mod:`domains.gui.agent_eval`): greedy, every step asked on its recorded screen after the
expert's history, scored by UI-S1's matcher. **Step success** = type and arguments right;
**episode success** = every step of the episode right. Held-out episodes use a seed no training
run draws. The control arm is read at the first of its checkpoints whose CPU minutes reach the
RL run's (its ``training.max_minutes`` ends it there when run after RL).
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from domains.gui.agent_eval import SYNTHETIC_EPISODES_SEED
from lab.ladder import (
    knobs_record,
    minutes,
    paired_cluster_se,
    paired_comparisons,
    seed_level,
    sft_start,
    ship_weights,
    train,
    train_reward_trend,
    write_json,
)  # fmt: skip

logger = logging.getLogger("lab.gui.agent_release")
ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "domains" / "gui" / "recipes"
SFT_RECIPE = RECIPES / "ui-s1-tiny-sft.yaml"
RL_RECIPE = RECIPES / "ui-s1-tiny-cpu.yaml"
CONTROL_RECIPE = RECIPES / "ui-s1-tiny-sft-control.yaml"
CHECKPOINT = ROOT / "checkpoints/gui-agent-tiny"
CARD = ROOT / "model_cards/gui-agent-tiny/README.md"
ENTRY = "gui-agent-tiny"


@dataclass(frozen=True)
class Args:
    """Knobs of the release; defaults are the released checkpoint's."""

    run_dir: Path = ROOT / "runs/gui-agent"
    """Where the stages' run directories go (``sft/``, ``rl-s0/``, ``sft-continue-s0/``) and their records."""
    checkpoint: Path = CHECKPOINT
    """Where ``finalize`` writes the released checkpoint."""
    card: Path = CARD
    """Where ``finalize`` writes the model card."""
    eval_n: int = 100
    """Held-out episodes per curve point."""
    final_eval_n: int = 600
    """Held-out episodes for the before/after numbers."""
    sft_curve_points: int = 5
    """SFT checkpoints evaluated (``sft_eval_n`` episodes each) to show where its curve flattens."""
    sft_eval_n: int = 300
    """Held-out episodes per SFT curve point: enough to tell a plateau from a step of 0.03."""
    confirm_n: int = 3000
    """Episodes of the second held-out set ``confirm`` scores every arm on."""
    confirm_seed: int = 7777
    """Its episode seed: neither the main held-out set's nor any training run's."""
    sft_overrides: tuple[str, ...] = ()
    """Extra overrides for the SFT recipe (``training.steps=4`` for a smoke run)."""
    overrides: tuple[str, ...] = ()
    """Extra overrides for the RL recipe (``training.steps=2`` for a smoke run)."""
    control_overrides: tuple[str, ...] = ()
    """Extra overrides for the control recipe (e.g. ``training.freeze_vision=false`` to match the other arms)."""


# --- evaluation --------------------------------------------------------------------------------

_EPISODES: dict[tuple[int, int], list[list[Any]]] = {}


def evaluate(model_dir: Path, n: int, seed: int = SYNTHETIC_EPISODES_SEED) -> dict[str, Any]:
    """Step and episode success of the model in ``model_dir`` on ``n`` held-out episodes of ``seed`` (greedy)."""
    from transformers import AutoProcessor

    from domains.gui.agent_eval import evaluate_agent
    from domains.gui.data import load_synthetic_episodes
    from zoo.engines.vlm.semi_online_rollout import group_episodes
    from zoo.load import load_vlm_weights

    if (n, seed) not in _EPISODES:  # raw goals: evaluate_agent without a spec asks the goal in every turn
        _EPISODES[n, seed] = group_episodes(load_synthetic_episodes(n=n, seed=seed))
    model = load_vlm_weights(model_dir).eval()
    rows, summary = evaluate_agent(model, AutoProcessor.from_pretrained(model_dir), _EPISODES[n, seed], max_new_tokens=48)
    steps, episodes = summary["steps"], summary["episodes"]
    hits: dict[Any, list[int]] = {}  # per episode, in order: the arms' differences are paired on them
    for row in rows:
        hits.setdefault(row["episode_id"], []).append(int(row["exact_match"]))
    return {"step_success": steps["exact_match"], "type_match": steps["type_match"], "n_steps": steps["n"],
            "step_success_se": binomial_se(steps["exact_match"], steps["n"]),
            "episode_success": episodes["episode_success"], "n_episodes": episodes["n"],
            "episode_success_se": binomial_se(episodes["episode_success"], episodes["n"]),
            "by_action_type": {k: v["exact_match"] for k, v in summary["by_action_type"].items()},
            "click_localisation": summary.get("click_localisation"), "step_hits": list(hits.values())}  # fmt: skip


def first_episodes(scores: dict[str, Any], n: int) -> dict[str, Any]:
    """Step success of :func:`evaluate`'s ``scores`` on their first ``n`` episodes, which are the ``n``
    held-out episodes themselves (episode ``i`` depends only on the seed and ``i``): no second evaluation."""
    hits = scores["step_hits"][:n]
    steps = [hit for episode in hits for hit in episode]
    return {"step_success": sum(steps) / len(steps), "n_steps": len(steps), "n_episodes": len(hits), "step_hits": hits}


def paired_difference(arm: dict[str, Any], base: dict[str, Any]) -> dict[str, float]:
    """Step success of ``arm`` minus ``base`` (both :func:`evaluate` results on the same episodes), with its
    episode-clustered standard error."""
    return {"diff": arm["step_success"] - base["step_success"],
            "se": paired_cluster_se(arm["step_hits"], base["step_hits"])}  # fmt: skip


def binomial_se(p: float, n: int) -> float:
    """One binomial standard error of a success rate ``p`` over ``n`` trials (steps of one episode are
    not independent, so for step success this is a lower bound)."""
    return (p * (1.0 - p) / max(1, n)) ** 0.5


def checkpoints(run: Path) -> list[Path]:
    """The complete ``checkpoint-N`` folders of ``run``, oldest first."""
    from zoo.runs import checkpoint_step, is_complete

    return sorted((p for p in run.glob("checkpoint-*") if is_complete(p)), key=checkpoint_step)


def curve(run: Path, n: int, until: Path | None = None, points: int = 4) -> list[dict[str, Any]]:
    """Held-out success at up to ``points`` evenly spaced checkpoints of ``run`` (the last one, or
    ``until``, always among them), with each step's CPU minutes."""
    from zoo.runs import checkpoint_step

    logged = {int(r["step"]): r for r in csv.DictReader((run / "metrics.csv").open())}
    folders = checkpoints(run)
    if until is not None and until in folders:
        folders = folders[: folders.index(until) + 1]
    stride = max(1, -(-len(folders) // points))
    chosen = folders[::-1][::stride][::-1]  # counted back from the last, so the last is always in
    points_out = []
    for folder in chosen:
        step = checkpoint_step(folder)
        scores = evaluate(folder, n)
        points_out.append({"step": step, "minutes": float(logged.get(step, {}).get("cpu_minutes") or "nan"),
                           "step_success": scores["step_success"], "episode_success": scores["episode_success"],
                           "by_action_type": scores["by_action_type"]})  # fmt: skip
        logger.info("%s step %d: step success %.3f", run.name, step, scores["step_success"])
    return points_out


def matched_checkpoint(run: Path, budget: float) -> Path:
    """The first complete checkpoint of ``run`` whose logged CPU minutes reach ``budget`` (else ``final/``).

    Only checkpoints at logged steps have minutes; the control recipe logs at every checkpoint.
    """
    from zoo.runs import checkpoint_step

    logged = {int(r["step"]): float(r["cpu_minutes"]) for r in csv.DictReader((run / "metrics.csv").open())}
    for folder in checkpoints(run):
        if logged.get(checkpoint_step(folder), 0.0) >= budget:
            return folder
    return run / "final"


# --- stages ------------------------------------------------------------------------------------


def record_sft(args: Args) -> dict[str, Any]:
    """The SFT start's held-out numbers, and its curve (per action type too): is it still improving?"""
    out = args.run_dir / "sft"
    final = evaluate(out / "final", args.final_eval_n)
    # where the RL and control curves (args.eval_n episodes) start from, on their own episodes
    if args.eval_n <= args.final_eval_n:
        on_curve = first_episodes(final, args.eval_n)
    else:
        on_curve = evaluate(out / "final", args.eval_n)
    data = {"steps": int(list(csv.DictReader((out / "metrics.csv").open()))[-1]["step"]),
            "train_minutes": minutes(out), "curve": curve(out, args.sft_eval_n, points=args.sft_curve_points),
            "final": final, "on_curve_episodes": on_curve}  # fmt: skip
    write_json(args.run_dir / "sft.json", data)
    return data


def record_rl(args: Args, seed: int) -> dict[str, Any]:
    out = args.run_dir / f"rl-s{seed}"
    history = [{k: float(v) for k, v in row.items() if v} for row in csv.DictReader((out / "metrics.csv").open())]
    data = {"seed": seed, "train_minutes": minutes(out), "steps": len(history), "curve": curve(out, args.eval_n),
            "final": evaluate(out / "final", args.final_eval_n), "log_history": history}  # fmt: skip
    write_json(args.run_dir / f"rl-s{seed}.json", data)
    return data


def record_control(args: Args, seed: int) -> dict[str, Any]:
    out = args.run_dir / f"sft-continue-s{seed}"
    budget = json.loads((args.run_dir / f"rl-s{seed}.json").read_text())["train_minutes"]
    matched = matched_checkpoint(out, budget)
    logged = {r["step"]: float(r["cpu_minutes"]) for r in csv.DictReader((out / "metrics.csv").open())}
    step = matched.name.removeprefix("checkpoint-") if matched.name != "final" else list(logged)[-1]
    data = {"seed": seed, "rl_minutes": budget, "matched_step": int(step), "matched_minutes": logged[step],
            "curve": curve(out, args.eval_n, until=matched), "final": evaluate(matched, args.final_eval_n)}  # fmt: skip
    write_json(args.run_dir / f"sft-continue-s{seed}.json", data)
    return data


def record_confirmation(args: Args, seeds: list[int]) -> dict[str, Any]:
    """The start, each RL run and each control (at its matched checkpoint) on a second, larger held-out set.

    The main set's start can leave only a handful of steps wrong; ``confirm_n`` episodes of another seed
    (one no training run draws either) count the arms' remaining errors again, paired as in :func:`summarise`.
    """
    start = evaluate(args.run_dir / "sft" / "final", args.confirm_n, args.confirm_seed)
    arms: dict[str, dict[int, dict[str, Any]]] = {"rl": {}, "control": {}}
    for seed in seeds:
        arms["rl"][seed] = evaluate(args.run_dir / f"rl-s{seed}" / "final", args.confirm_n, args.confirm_seed)
        budget = json.loads((args.run_dir / f"rl-s{seed}.json").read_text())["train_minutes"]
        control = matched_checkpoint(args.run_dir / f"sft-continue-s{seed}", budget)
        arms["control"][seed] = evaluate(control, args.confirm_n, args.confirm_seed)

    def scores(result: dict[str, Any]) -> dict[str, Any]:
        wrong = sum(len(e) - sum(e) for e in result["step_hits"])
        return {"step_success": result["step_success"], "wrong_steps": wrong, "by_action_type": result["by_action_type"]}

    data = {"episodes": args.confirm_n, "episode_seed": args.confirm_seed, "n_steps": start["n_steps"],
            "sft_start": scores(start), "rl": {f"seed{k}": scores(v) for k, v in arms["rl"].items()},
            "control": {f"seed{k}": scores(v) for k, v in arms["control"].items()},
            "step_success_paired": paired_comparisons(start, arms["rl"], arms["control"], paired_difference, arm="rl")}  # fmt: skip
    write_json(args.run_dir / "confirm.json", data)
    return data


def stage_sft(args: Args) -> None:
    """The supervised warm start (the RL arm's and the control's starting point)."""
    train(SFT_RECIPE, list(args.sft_overrides), args.run_dir / "sft")
    record_sft(args)


def stage_rl(args: Args, seed: int) -> None:
    """UI-S1 semi-online RL from the SFT start, seed ``seed`` (its training episodes: seed ``100 + seed``)."""
    start = sft_start(args.run_dir, args.checkpoint)
    overrides = [f"model.name={start}", f"training.seed={seed}", f"data.kwargs.seed={100 + seed}", *args.overrides]
    train(RL_RECIPE, overrides, args.run_dir / f"rl-s{seed}")
    record_rl(args, seed)


def stage_control(args: Args, seed: int) -> None:
    """Control arm: the same SFT continued from the same start for the CPU minutes RL seed ``seed`` used."""
    budget = json.loads((args.run_dir / f"rl-s{seed}.json").read_text())["train_minutes"]
    start = sft_start(args.run_dir, args.checkpoint)
    overrides = [f"model.name={start}", f"training.seed={1000 + seed}", f"training.max_minutes={budget}",
                 *args.control_overrides]  # fmt: skip
    train(CONTROL_RECIPE, overrides, args.run_dir / f"sft-continue-s{seed}")
    record_control(args, seed)


def summarise(sft: dict[str, Any], rl: list[dict[str, Any]], control: list[dict[str, Any]]) -> dict[str, Any]:
    """Before/after step and episode success per seed, each arm's gain over the SFT start, the paired
    differences (RL - SFT start, control - SFT start, RL - control) with their episode-clustered standard
    errors, the same differences with the training run as the unit (mean over seeds ± its standard error
    over seeds, from two seeds on), and RL's training reward over its first and last logged steps."""
    out: dict[str, Any] = {"sft_start": {k: sft["final"][k] for k in ("step_success", "episode_success")}}
    for name, runs in (("ui_s1_rl", rl), ("sft_continue_equal_time", control)):
        out[name] = {f"seed{r['seed']}": {k: r["final"][k] for k in ("step_success", "episode_success")} for r in runs}
        gains = [r["final"]["step_success"] - sft["final"]["step_success"] for r in runs]
        if gains:
            out[f"{name}_step_success_gain_mean"] = sum(gains) / len(gains)
    rl_final, control_final = {r["seed"]: r["final"] for r in rl}, {c["seed"]: c["final"] for c in control}
    out["step_success_paired"] = paired_comparisons(sft["final"], rl_final, control_final, paired_difference, arm="rl")
    out["step_success_across_seeds"] = seed_level(out["step_success_paired"])
    out["rl_training_reward"] = {f"seed{r['seed']}": train_reward_trend(r["log_history"]) for r in rl}
    return out


def report(args: Args, seeds: list[int]) -> tuple[str, dict[str, Any]]:
    """The before/after table from the stage records, and the summary."""
    sft = json.loads((args.run_dir / "sft.json").read_text())
    rl = [json.loads((args.run_dir / f"rl-s{s}.json").read_text()) for s in seeds]
    paths = [args.run_dir / f"sft-continue-s{s}.json" for s in seeds]
    control = [json.loads(p.read_text()) for p in paths if p.is_file()]
    lines = [f"held-out synthetic episodes (seed {SYNTHETIC_EPISODES_SEED}, n={args.final_eval_n}), greedy",
             f"{'model':<34}{'CPU-min':>8}{'step success':>14}{'episode success':>17}",
             (f"{'SFT start':<34}{sft['train_minutes']:>8.2f}{sft['final']['step_success']:>14.3f}"
              f"{sft['final']['episode_success']:>17.3f}")]  # fmt: skip
    for r in rl:
        lines.append(f"{'+ UI-S1 RL, seed ' + str(r['seed']):<34}{r['train_minutes']:>8.2f}"
                     f"{r['final']['step_success']:>14.3f}{r['final']['episode_success']:>17.3f}")  # fmt: skip
    for c in control:
        lines.append(f"{'+ SFT continued (equal), seed ' + str(c['seed']):<34}{c['matched_minutes']:>8.2f}"
                     f"{c['final']['step_success']:>14.3f}{c['final']['episode_success']:>17.3f}")  # fmt: skip
    return "\n".join(lines), summarise(sft, rl, control)


def stage_finalize(args: Args, seeds: list[int]) -> None:
    """Copy the seed-``seeds[0]`` RL model (and its SFT start, in ``sft/``) to checkpoints/, score it
    as ``zoo eval gui-agent-tiny --data synthetic-episodes`` does into ``eval/`` (metrics.json,
    predictions.jsonl, predictions.png), write training.json and the model card."""
    import zoo
    from domains.gui import agent_eval
    from lab.gui.agent_card import write_card
    from lab.records import publish
    from zoo.engines.reading import load_recipe

    table, summary = report(args, seeds)
    logger.info("\n%s", table)
    start = json.loads((args.run_dir / "sft.json").read_text())["final"]
    ship_weights(args.run_dir / f"rl-s{seeds[0]}" / "final", args.run_dir / "sft" / "final", args.checkpoint, {
        "entry": ENTRY, "stage": "SFT start (the UI-S1 RL run's and the control's starting point)",
        "held_out": {k: v for k, v in start.items() if k != "step_hits"}})  # per-episode hits: ../training.json

    pipe = zoo.load(str(args.checkpoint), entry=ENTRY)
    released = agent_eval.run(pipe, "synthetic-episodes", None, args.checkpoint / "eval", limit=args.final_eval_n)

    def read(name: str) -> Any:
        return json.loads((args.run_dir / name).read_text())

    paths = [f"sft-continue-s{s}.json" for s in seeds]
    training = {
        "entry": ENTRY,
        "release": "python -m lab.gui.agent_release all",
        "args": knobs_record(args),
        "recipe_sft": load_recipe(SFT_RECIPE, list(args.sft_overrides)).to_dict(),
        "recipe_rl": load_recipe(RL_RECIPE, list(args.overrides)).to_dict(),
        "recipe_control": load_recipe(CONTROL_RECIPE, list(args.control_overrides)).to_dict(),
        "seeds": {"rl": seeds, "rl_data": [100 + s for s in seeds], "control": [1000 + s for s in seeds],
                  "held_out_eval": SYNTHETIC_EPISODES_SEED, "released_rl_seed": seeds[0]},
        "held_out": {"task": "synthetic 2-4 step phone episodes, 112x112 screens, UI-S1 answer format",
                     "protocol": "AndroidControl step-wise: greedy, expert history, UI-S1 matcher",
                     "n_final": args.final_eval_n, "n_curve": args.eval_n, "n_curve_sft": args.sft_eval_n},
        "sft": read("sft.json"),
        "rl": [read(f"rl-s{s}.json") for s in seeds],
        "sft_continue_equal_time": [read(p) for p in paths if (args.run_dir / p).is_file()],
        "summary": summary,
        "confirmation": read("confirm.json") if (args.run_dir / "confirm.json").is_file() else None,
        "released_eval": {"benchmark": "synthetic-episodes", "files": "eval/", "episodes": args.final_eval_n,
                          "step_success": released["steps"]["exact_match"],
                          "episode_success": released["episodes"]["episode_success"]},
    }  # fmt: skip
    write_card(args.card, training, args.checkpoint)
    publish(training, args.card, args.checkpoint)
    logger.info("summary: %s", json.dumps(summary, indent=2))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.gui.agent_release", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    stages = ["sft", "rl", "sft-continue", "record", "confirm", "report", "finalize", "all"]
    parser.add_argument("stage", choices=stages, help="what to run (record: evaluate existing runs only; confirm: "
                        "score every arm again on a second, larger held-out set)")  # fmt: skip
    parser.add_argument("--seed", type=int, action="append", help="RL / control seed(s) (default 0 1)")
    parser.add_argument("--run-dir", type=Path, default=Args.run_dir)
    parser.add_argument("--checkpoint", type=Path, default=Args.checkpoint)
    parser.add_argument("--card", type=Path, default=Args.card)
    parser.add_argument("--sft-set", dest="sft_overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="SFT recipe override (training.steps=4 for a smoke run)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="RL recipe override (training.steps=2 for a smoke run)")
    parser.add_argument("--control-set", dest="control_overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="control recipe override (training.freeze_vision=false to match the other arms)")  # fmt: skip
    parser.add_argument("--eval-n", type=int, default=Args.eval_n, help="held-out episodes per curve point")
    parser.add_argument("--final-eval-n", type=int, default=Args.final_eval_n, help="held-out episodes, final numbers")
    parser.add_argument("--sft-eval-n", type=int, default=Args.sft_eval_n, help="held-out episodes per SFT curve point")
    parser.add_argument("--confirm-n", type=int, default=Args.confirm_n, help="episodes of the confirm stage's set")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 when running stages side by side)")
    ns = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import torch

    torch.set_num_threads(ns.threads)
    args = replace(Args(), run_dir=ns.run_dir, checkpoint=ns.checkpoint, card=ns.card, eval_n=ns.eval_n,
                   final_eval_n=ns.final_eval_n, sft_eval_n=ns.sft_eval_n, confirm_n=ns.confirm_n, overrides=tuple(ns.overrides),
                   sft_overrides=tuple(ns.sft_overrides), control_overrides=tuple(ns.control_overrides))  # fmt: skip
    seeds = ns.seed or [0, 1]
    if ns.stage in ("sft", "all"):
        stage_sft(args)
    for seed in seeds if ns.stage in ("rl", "all") else []:
        stage_rl(args, seed)
    for seed in seeds if ns.stage in ("sft-continue", "all") else []:
        stage_control(args, seed)
    if ns.stage == "record":
        record_sft(args)
        for seed in seeds:
            record_rl(args, seed)
            if (args.run_dir / f"sft-continue-s{seed}").is_dir():
                record_control(args, seed)
    if ns.stage in ("confirm", "all"):
        record_confirmation(args, seeds)
    if ns.stage == "report":
        print(report(args, seeds)[0])  # the command's output
    if ns.stage in ("finalize", "all"):
        stage_finalize(args, seeds)


if __name__ == "__main__":
    main()
