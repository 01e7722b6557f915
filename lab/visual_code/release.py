"""Build ``checkpoints/svg-scenes-tiny`` from its three recipes, with the numbers its card quotes.

A randomly initialised Qwen2.5-VL of ~1M parameters learns to write the SVG of a 112-px picture of
one circle or rectangle. Every stage is a recipe ``zoo train`` runs; this driver runs them in order,
evaluates their checkpoints on held-out scenes and writes the record::

    python -m lab.visual_code.release sft                    # svg-tiny-sft.yaml
    python -m lab.visual_code.release grpo --seed 0          # svg-tiny-grpo.yaml from the SFT model
    python -m lab.visual_code.release sft-continue --seed 0  # control: SFT for GRPO's CPU time
    python -m lab.visual_code.release finalize --seed 0 --seed 1
    python -m lab.visual_code.release all                    # everything above, seeds 0 1

Without an ``sft`` stage in the run directory, the stages start from the SFT model shipped in
``checkpoints/svg-scenes-tiny/sft`` (re-evaluated), so GRPO and its control re-run in minutes.

The held-out metric is the GRPO stage's own render reward (``svg-shape-iou``: IoU of the drawn
pixels whose colours agree, 0 when nothing renders), with the RLRF-style score beside it, greedy
decoding through the pipeline ``zoo.load`` returns, on scenes whose seed no training stage draws. CPU minutes of a stage
are its training process's (``metrics.csv``) plus its render workers' (the children's rusage after
the pools are closed), so the GRPO arm pays for its renders and the control gets the same total.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import resource
import shutil
from pathlib import Path
from typing import Any

from lab.ladder import (
    clears,
    format_difference,
    mean_difference,
    paired_comparisons,
    ship_weights,
    standard_error,
    train_reward_trend,
)  # fmt: skip
from zoo.records import read_record

logger = logging.getLogger("lab.visual_code.release")
ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "domains" / "visual_code" / "recipes"
SFT_RECIPE, GRPO_RECIPE, CONTROL_RECIPE = (RECIPES / f"svg-tiny-{s}.yaml" for s in ("sft", "grpo", "sft-control"))
ENTRY = "svg-scenes-tiny"
CHECKPOINT = ROOT / "checkpoints" / ENTRY
CARD_DIR = ROOT / "model_cards" / ENTRY
EVAL_SEED = 7_777  # held-out scenes: SFT streams seeds >= 10**6, GRPO draws 100 + seed, the tokenizer 999


# --- evaluation --------------------------------------------------------------------------------


def scene_scores(model_dir: Path, n: int) -> dict[str, list[float]]:
    """Per held-out scene, greedy: the GRPO reward (``svg-shape-iou``), the RLRF-style score without
    its perceptual term and its image term, and whether the answer renders (1/0)."""
    import zoo
    from domains.visual_code.data import synthetic_svgs
    from rewards import get
    from rewards.rlrf import RlrfSvgReward
    from zoo.engines.reading import load_recipe

    kwargs = {k: v for k, v in load_recipe(GRPO_RECIPE).data.kwargs.items() if k not in ("n", "seed")}
    samples = synthetic_svgs(n=n, seed=EVAL_SEED, **kwargs)
    pipe = zoo.load(str(model_dir), entry=ENTRY)
    predictions = pipe([s.images[0] for s in samples], "")
    size = (kwargs["pixels"],) * 2
    shape = get("svg-shape-iou").with_options(size=size)(predictions, samples)
    rlrf = RlrfSvgReward("svg-skia", encoder=None, size=size)(predictions, samples)
    return {"reward": [r.score for r in shape], "rlrf": [r.score for r in rlrf],
            "rlrf_image": [r.components["image"] for r in rlrf], "renders": [r.components["rendered"] for r in rlrf]}


def summarise(scores: dict[str, list[float]]) -> dict[str, float]:
    """Means of :func:`scene_scores`, with the standard error of the mean reward (``reward_se``)."""
    out = {k: _mean(v) for k, v in scores.items()}
    out["reward_se"] = standard_error(scores["reward"])
    return out


def evaluate(model_dir: Path, n: int) -> dict[str, float]:
    """Held-out means over ``n`` scenes (:func:`summarise` of :func:`scene_scores`)."""
    return summarise(scene_scores(model_dir, n))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def curve(run: Path, n: int) -> list[dict[str, float]]:
    """Held-out reward of every ``checkpoint-N`` of ``run``, with the step's process CPU minutes."""
    from zoo.runs import checkpoint_step, is_complete

    logged = {int(r["step"]): r for r in csv.DictReader((run / "metrics.csv").open())}
    points = []
    for folder in sorted((p for p in run.glob("checkpoint-*") if is_complete(p)), key=checkpoint_step):
        step = checkpoint_step(folder)
        point = {"step": step, **evaluate(folder, n), "minutes": float(logged.get(step, {}).get("cpu_minutes", "nan"))}
        logger.info("%s step %d held-out reward %.3f", run.name, step, point["reward"])
        points.append(point)
    return points


# --- stages ------------------------------------------------------------------------------------


def train(recipe: Path, overrides: list[str], out: Path) -> dict[str, float]:
    """``zoo train`` into a fresh ``out``; returns the CPU minutes of the process and of its render workers."""
    from rewards.rendering import shutdown_default_pool
    from zoo.train import run

    if out.exists():
        shutil.rmtree(out)
    shutdown_default_pool()  # an evaluation's workers are not this run's
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run(str(recipe), overrides, output_dir=str(out))
    shutdown_default_pool()  # the workers exit and are reaped: their CPU time lands in RUSAGE_CHILDREN
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    render = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / 60
    process = float(list(csv.DictReader((out / "metrics.csv").open()))[-1]["cpu_minutes"])
    return {"process_minutes": process, "render_minutes": render, "total_minutes": process + render}


def stage(name: str, recipe: Path, overrides: list[str], args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    out = args.run_dir / name
    record = {**extra, "overrides": overrides, **train(recipe, overrides, out)}
    record["steps"] = int(list(csv.DictReader((out / "metrics.csv").open()))[-1]["step"])
    record["curve"] = curve(out, args.eval_n)
    scores = scene_scores(out / "final", args.final_eval_n)
    record["final"], record["final_scores"] = summarise(scores), scores["reward"]
    (args.run_dir / f"{name}.json").write_text(json.dumps(record, indent=2))
    return record


def adopt_shipped_sft(args: argparse.Namespace) -> None:
    """Without an SFT stage in ``run_dir``, take the SFT start shipped in ``checkpoints/<entry>/sft``
    (what ``svg-tiny-sft.yaml`` trained) and its record, re-evaluated on ``final_eval_n`` scenes, so
    the RL stages and the control can be re-run without paying for SFT again."""
    if (args.run_dir / "sft.json").is_file():
        return
    shipped = read_record(CHECKPOINT / "training.json").to_dict()["measurements"]["sft"]
    shutil.copytree(CHECKPOINT / "sft", args.run_dir / "sft" / "final", dirs_exist_ok=True)
    scores = scene_scores(args.run_dir / "sft" / "final", args.final_eval_n)
    record = {**shipped, "final": summarise(scores), "final_scores": scores["reward"],
              "reused": f"the SFT start shipped in checkpoints/{ENTRY}/sft (svg-tiny-sft.yaml), not retrained"}
    (args.run_dir / "sft.json").write_text(json.dumps(record, indent=2))


def finalize(args: argparse.Namespace, seeds: list[int]) -> None:
    """Copy the first seed's GRPO model (and its SFT start, in ``sft/``) to checkpoints/ with ``training.json``."""
    from lab.records import publish
    from zoo.engines.reading import load_recipe
    from zoo.eval_results import write_results

    def read(name: str) -> dict[str, Any]:
        return json.loads((args.run_dir / f"{name}.json").read_text())

    sft, grpo = read("sft"), [read(f"grpo-s{s}") for s in seeds]
    control = [read(f"sft-continue-s{s}") for s in seeds if (args.run_dir / f"sft-continue-s{s}.json").is_file()]
    for g in grpo:
        g["diagnostics"] = grpo_diagnostics(args.run_dir / f"grpo-s{g['seed']}")
    per_scene = {"sft": sft.pop("final_scores"), **{f"grpo-s{g['seed']}": g.pop("final_scores") for g in grpo},
                 **{f"control-s{c['seed']}": c.pop("final_scores") for c in control}}
    ship_weights(args.run_dir / f"grpo-s{seeds[0]}" / "final", args.run_dir / "sft" / "final", CHECKPOINT,
                 {"entry": ENTRY, "stage": "SFT start (GRPO's starting point)", "held_out": sft["final"]})  # fmt: skip
    record = {
        "entry": ENTRY, "release": "python -m lab.visual_code.release all",
        "recipe_sft": load_recipe(SFT_RECIPE).to_dict(), "recipe_grpo": load_recipe(GRPO_RECIPE).to_dict(),
        "recipe_control": load_recipe(CONTROL_RECIPE).to_dict(),
        "seeds": {"grpo": seeds, "grpo_data": [100 + s for s in seeds], "control": [1000 + s for s in seeds],
                  "held_out_eval": EVAL_SEED, "released_grpo_seed": seeds[0]},
        "held_out": {"scenes": args.final_eval_n, "curve_scenes": args.eval_n, "metric": "svg-shape-iou (IoU of "
                     "the drawn pixels whose colours agree; 0 when nothing renders), greedy; 'rlrf': rlrf-svg "
                     "without its perceptual term, reported beside it"},
        "sft": sft, "grpo": grpo, "sft_continue_equal_time": control,
        "paired": paired_comparisons(per_scene["sft"], {s: per_scene[f"grpo-s{s}"] for s in seeds},
                                     {c["seed"]: per_scene[f"control-s{c['seed']}"] for c in control}, mean_difference),
    }
    plot(record, CARD_DIR / "curves.png")
    (CARD_DIR / "README.md").write_text(card_text(record))
    publish(record, CARD_DIR / "README.md", CHECKPOINT)
    write_results(CHECKPOINT / "eval", {"held_out_eval_seed": EVAL_SEED, "scenes": args.final_eval_n,
                                        "metric": "svg-shape-iou", "paired": record["paired"]},
                  ({"scene": i, **{arm: round(v[i], 6) for arm, v in per_scene.items()}}
                   for i in range(args.final_eval_n)))


def grpo_diagnostics(run: Path) -> dict[str, Any]:
    """What says whether GRPO could learn, from its ``metrics.csv``: the sampled training reward over
    the first and last quarter of the logged steps (:func:`lab.ladder.train_reward_trend`), the share
    of groups whose rewards were all equal (no advantage), of answers that failed to render, and of
    completions cut at the length cap."""
    rows = [r for r in csv.DictReader((run / "metrics.csv").open()) if r.get("reward")]

    def mean(key: str) -> float:
        return _mean([float(r[key]) for r in rows])

    return {"train_reward": train_reward_trend(rows, k=max(1, len(rows) // 4)),
            "frac_groups_all_equal": mean("frac_reward_zero_std"),
            "render_failed": mean("svg-shape-iou/render_failed"),
            "completion_mean_length": mean("completions/mean_length"),
            "completion_clipped": mean("completions/clipped_ratio")}


def plot(record: dict[str, Any], path: Path) -> None:
    """Held-out reward against training CPU-minutes (:func:`lab.ladder.plot_curves`): the SFT start's
    curve, then each GRPO seed against its equal-time control from the SFT checkpoint."""
    from lab.ladder import plot_curves

    def arm(r: dict[str, Any]) -> dict[str, Any]:
        return {"seed": r.get("seed"), "curve": r["curve"], "final_reward": r["final"]["reward"]}

    path.parent.mkdir(parents=True, exist_ok=True)
    plot_curves({"sft": arm(record["sft"]), "grpo": [arm(g) for g in record["grpo"]],
                 "sft_continue_equal_time": [arm(c) for c in record["sft_continue_equal_time"]]}, path, "reward")


def card_text(record: dict[str, Any]) -> str:
    """The release's card: Hub metadata with the released model's held-out score, then its sections."""
    from huggingface_hub import EvalResult, ModelCardData

    from zoo.card_kinds import CHECKOUT, card_kind
    from zoo.registry import info

    fields, entry = card_fields(record), info(ENTRY)
    final = next(r for r in fields["metrics"] if r["stage"] == "final")
    data = ModelCardData(license=entry.license, model_name=ENTRY, tags=["rl-model-zoo", "visual_code", "svg", "grpo", "cpu-trained"],
                         eval_results=[EvalResult(task_type="image-text-to-text", dataset_type=final["dataset"],
                                                  dataset_name=final["dataset"], dataset_split=final["split"],
                                                  metric_type=final["metric"], metric_value=final["value"])])  # fmt: skip
    table = "\n".join(["| dataset | split | stage | metric | value |", "|---|---|---|---|---|"] + [
        f"| {r['dataset']} | {r['split']} | {r['stage']} | {r['metric']} | {r['value']} |" for r in fields["metrics"]])
    sections = {"How to use": f"```python\n{card_kind(entry).usage(entry, CHECKOUT)}\n```", "Intended use": fields["intended_use"],
                "Training": fields["training_text"], "Evaluation": f"{table}\n\n{fields['evaluation_note']}",
                "Limitations": fields["limitations"]}  # fmt: skip
    body = "\n\n".join([f"# {ENTRY}", fields["summary"], *(f"## {t}\n\n{text}" for t, text in sections.items())])
    return f"---\n{data.to_yaml()}\n---\n\n{body}\n"


def card_fields(record: dict[str, Any]) -> dict[str, Any]:
    """What the card says, from the release's numbers: measured rows, summary, training text."""
    sft, grpo, control = record["sft"], record["grpo"], record["sft_continue_equal_time"]
    split = f"held-out seed {record['seeds']['held_out_eval']}, {record['held_out']['scenes']} scenes"
    rows = [{"dataset": "svg-synthetic one-shape scenes", "split": split, "stage": "SFT start",
             "metric": "drawn-pixel IoU", "value": round(sft["final"]["reward"], 4)}]
    for i, g in enumerate(grpo):
        rows.append({"dataset": "svg-synthetic one-shape scenes", "split": split,
                     "stage": "final" if i == 0 else f"GRPO seed {g['seed']}", "metric": "drawn-pixel IoU",
                     "value": round(g["final"]["reward"], 4)})
    rows += [{"dataset": "svg-synthetic one-shape scenes", "split": split, "stage": f"control seed {c['seed']}",
              "metric": "drawn-pixel IoU", "value": round(c["final"]["reward"], 4)} for c in control]
    paired = record["paired"]
    algo, tr = record["recipe_grpo"]["algorithm"], record["recipe_grpo"]["training"]
    prompts = tr["batch_size"] // algo["num_generations"]
    reused = "; the SFT start shipped with the previous release, not retrained" if sft.get("reused") else ""

    def diff(seed: int, base: str) -> str:
        return format_difference(paired[f"grpo_minus_{base}"][f"seed{seed}"])

    gains = ", ".join(f"seed {g['seed']}: {diff(g['seed'], 'sft')} in {g['total_minutes']:.2f} CPU-min" for g in grpo)
    controls = ", ".join(f"seed {c['seed']}: {c['final']['reward'] - sft['final']['reward']:+.3f} in "
                         f"{c['total_minutes']:.2f} CPU-min" for c in control) or "not run"
    versus = ", ".join(f"seed {c['seed']}: {diff(c['seed'], 'control')}" for c in control)
    beats = control and all(clears(paired["grpo_minus_control"][f"seed{c['seed']}"]) for c in control)
    verdict = ("GRPO beats the control on every seed by more than two standard errors." if beats else
               "GRPO does not beat the control by more than two standard errors on every seed.")
    return {
        "metrics": rows,
        "summary": ("A ~1M-parameter Qwen2.5-VL trained from scratch on CPU to write the SVG of a 112-px picture of "
                    "one circle or rectangle: SFT, then GRPO with a render reward computed in the sandbox. A teaching "
                    "checkpoint for the visual-code domain, not an image vectoriser."),
        "evaluation_note": (f"Drawn-pixel IoU (svg-shape-iou, the GRPO reward), greedy, over the SFT start (the first "
                            f"row), as the mean per-scene difference ± its standard error on the same scenes: GRPO "
                            f"{gains}; equal-time continued SFT from the same start {controls} (CPU minutes include "
                            f"the render workers). GRPO minus the control of its seed: {versus or 'not run'}. "
                            f"{verdict} Held-out curves: curves.png next to this card. Per-scene scores of every stage "
                            "are in the checkpoint's eval/predictions.jsonl; the "
                            "RLRF-style score and the share of answers that render per stage in training.json. A "
                            "first GRPO run with the RLRF-style reward raised that reward by drawing nothing (a blank "
                            "canvas scores 0.4 there); it was not released."),
        "training_text": (f"SFT: domains/visual_code/recipes/svg-tiny-sft.yaml (vlm-sft, fresh scenes every batch, "
                          f"{sft['steps']} steps{reused}). GRPO: svg-tiny-grpo.yaml (vlm-trl, {prompts} prompts x "
                          f"G={algo['num_generations']} a step, lr {tr['lr']:g}, {tr['steps']} steps, beta "
                          f"{algo['beta']:g}, reward svg-shape-iou rendered in the sandbox). Control: "
                          "svg-tiny-sft-control.yaml for GRPO's CPU time. Rebuild: python -m "
                          "lab.visual_code.release all."),
        "intended_use": "Running and reading the visual-code RL loop end to end on a laptop; tests and demos.",
        "limitations": ("Knows only synthetic one-shape scenes in four colours on a 56-unit canvas; numbers are on "
                        "that held-out set only. Compare GRPO with the control rows: when continued SFT gains more "
                        "in the same CPU time, the SFT start was not converged and RL is not yet the better use "
                        "of that time."),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.visual_code.release", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", choices=["sft", "grpo", "sft-continue", "finalize", "all"])
    parser.add_argument("--seed", type=int, action="append", help="GRPO / control seed(s) (default 0 1)")
    parser.add_argument("--run-dir", type=Path, default=ROOT / "runs/svg-tiny", help="where the stages' runs go")
    parser.add_argument("--eval-n", type=int, default=200, help="held-out scenes per curve point")
    parser.add_argument("--final-eval-n", type=int, default=1000, help="held-out scenes for the final numbers")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import torch

    torch.set_num_threads(args.threads)
    seeds = args.seed or [0, 1]
    if args.stage in ("sft", "all"):
        stage("sft", SFT_RECIPE, [], args)
    else:
        adopt_shipped_sft(args)
    start = args.run_dir / "sft" / "final"
    for seed in seeds if args.stage in ("grpo", "all") else []:
        stage(f"grpo-s{seed}", GRPO_RECIPE, [f"training.seed={seed}", f"model.name={start}",
                                             f"data.kwargs.seed={100 + seed}"], args, seed=seed)
    for seed in seeds if args.stage in ("sft-continue", "all") else []:
        budget = json.loads((args.run_dir / f"grpo-s{seed}.json").read_text())["total_minutes"]
        stage(f"sft-continue-s{seed}", CONTROL_RECIPE, [f"model.name={start}", f"training.seed={1000 + seed}",
                                                        f"training.max_minutes={budget}"], args, seed=seed)
    if args.stage in ("finalize", "all"):
        finalize(args, seeds)


if __name__ == "__main__":
    main()
