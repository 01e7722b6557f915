"""Build ``checkpoints/gui-grounding-tiny`` from its three recipes, with the numbers its card quotes.

A randomly initialised Qwen2.5-VL of ~1M parameters learns to put a box on the one button of a
112-px synthetic screen. Every stage is a recipe ``zoo train`` runs; this driver only runs them in
order, evaluates their checkpoints on held-out screens and writes the record::

    python -m domains.gui.release sft                    # zoo train domains/gui/recipes/gui-g1-tiny-sft.yaml
    python -m domains.gui.release grpo --seed 0          # zoo train domains/gui/recipes/gui-g1-tiny-cpu.yaml
    python -m domains.gui.release sft-continue --seed 0  # control: gui-g1-tiny-sft-control.yaml, GRPO's CPU time
    python -m domains.gui.release finalize               # checkpoint + training.json + model card
    python -m domains.gui.release all                    # everything above, seeds 0 1 2

Accuracy is "hit": the centre of the predicted box inside the target box (ScreenSpot's criterion),
greedy decoding through the same :class:`~zoo.pipelines.vlm.VLMPipeline` that ``zoo.load`` returns,
on held-out screens whose seed the training data never uses. Curves are read back from each run's
``checkpoint-N`` folders, so evaluation never runs inside (or slows) a training run; CPU minutes are
the runs' own ``metrics.csv`` column.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from domains.gui.evaluate import SYNTHETIC_TINY_SEED, hit_rate
from zoo.data import Sample

logger = logging.getLogger("domains.gui.release")
ROOT = Path(__file__).resolve().parents[2]
RECIPES = Path(__file__).resolve().parent / "recipes"
SFT_RECIPE = RECIPES / "gui-g1-tiny-sft.yaml"
GRPO_RECIPE = RECIPES / "gui-g1-tiny-cpu.yaml"
CONTROL_RECIPE = RECIPES / "gui-g1-tiny-sft-control.yaml"
CHECKPOINT = ROOT / "checkpoints/gui-grounding-tiny"
CARD = ROOT / "model_cards/gui-grounding-tiny/README.md"
EVAL_SEED = SYNTHETIC_TINY_SEED  # held-out screens (`zoo eval ... --data synthetic-tiny`); training never draws it


@dataclass(frozen=True)
class Args:
    """Knobs of the release; defaults are the released checkpoint's."""

    run_dir: Path = ROOT / "runs/gui-tiny"
    """Where the stages' run directories go (``sft/``, ``grpo-s0/``, ``sft-continue-s0/``)."""
    checkpoint: Path = CHECKPOINT
    """Where ``finalize`` writes the released checkpoint."""
    card: Path = CARD
    """Where ``finalize`` writes the model card."""
    eval_n: int = 400
    """Held-out screens per curve point (half of it for the SFT curve, which only locates the plateau)."""
    final_eval_n: int = 1000
    """Held-out screens for the before/after numbers in training.json and the card."""
    sft_overrides: tuple[str, ...] = ()
    """Extra overrides for the SFT recipe (``training.steps=4`` for a smoke run)."""
    grpo_overrides: tuple[str, ...] = ()
    """Extra overrides for the GRPO recipe."""


# --- evaluation --------------------------------------------------------------------------------


_EVAL_CACHE: dict[int, list[Sample]] = {}


def evaluate(model_dir: Path, n: int) -> float:
    """Held-out hit rate of the model in ``model_dir`` on ``n`` screens (greedy)."""
    from domains.gui.data import load_synthetic

    if n not in _EVAL_CACHE:
        _EVAL_CACHE[n] = load_synthetic(n=n, seed=EVAL_SEED, task="single")
    return hit_rate(pipeline(model_dir), _EVAL_CACHE[n])


def pipeline(model_dir: Path) -> Any:
    """The pipeline ``zoo.load("gui-grounding-tiny")`` builds, around the weights in ``model_dir``."""
    import zoo

    return zoo.load(str(model_dir), entry="gui-grounding-tiny")


def curve(run: Path, n: int) -> list[dict[str, float]]:
    """Held-out hit of every ``checkpoint-N`` of ``run``, with the step's loss and CPU minutes."""
    from zoo.runs import checkpoint_step, is_complete

    logged = {int(r["step"]): r for r in csv.DictReader((run / "metrics.csv").open())}
    points = []
    for folder in sorted((p for p in run.glob("checkpoint-*") if is_complete(p)), key=checkpoint_step):
        step = checkpoint_step(folder)
        row = logged.get(step, {})
        point = {"step": step, "hit": evaluate(folder, n), "minutes": float(row.get("cpu_minutes") or "nan")}
        if row.get("loss"):
            point["loss"] = float(row["loss"])
        points.append(point)
        logger.info("%s step %d held-out hit %.3f", run.name, step, point["hit"])
    return points


def minutes(run: Path) -> float:
    """CPU minutes of a finished run (the last ``metrics.csv`` row)."""
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    return float(rows[-1]["cpu_minutes"])


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


# --- stages ------------------------------------------------------------------------------------


def train(recipe: Path, overrides: list[str], out: Path) -> Path:
    """``zoo train RECIPE --set ... --output-dir OUT`` (a fresh run: a stale one is removed)."""
    from zoo.train import run

    if out.exists():
        shutil.rmtree(out)
    return run(str(recipe), overrides, output_dir=str(out))


def stage_sft(args: Args) -> None:
    """The supervised warm start; its curve and final held-out hit go to ``sft.json``."""
    from zoo.recipe import load_recipe

    out = train(SFT_RECIPE, list(args.sft_overrides), args.run_dir / "sft")
    recipe = load_recipe(SFT_RECIPE, list(args.sft_overrides))
    write_json(args.run_dir / "sft.json", {
        "curve": curve(out, args.eval_n // 2), "train_minutes": minutes(out), "steps": recipe.training.steps,
        "lr": recipe.training.lr, "final_hit": evaluate(out / "final", args.final_eval_n)})  # fmt: skip


def sft_start(args: Args) -> Path:
    """GRPO's starting point: this release's SFT run, else the SFT start shipped with the checkpoint."""
    start = args.run_dir / "sft" / "final"
    if start.is_dir():
        return start
    logger.info("no SFT stage in %s; starting from the shipped %s", args.run_dir, args.checkpoint / "sft")
    return args.checkpoint / "sft"


def stage_grpo(args: Args, seed: int) -> None:
    """GRPO from the SFT start, seed ``seed`` (its data seed is ``100 + seed``)."""
    overrides = [f"training.seed={seed}", f"model.name={sft_start(args)}", f"data.kwargs.seed={100 + seed}",
                 *args.grpo_overrides]  # fmt: skip
    out = train(GRPO_RECIPE, overrides, args.run_dir / f"grpo-s{seed}")
    history = [{k: v for k, v in row.items() if k != "step"} | {"step": int(row["step"])}
               for row in csv.DictReader((out / "metrics.csv").open())]  # fmt: skip
    write_json(args.run_dir / f"grpo-s{seed}.json", {
        "seed": seed, "curve": curve(out, args.eval_n), "train_minutes": minutes(out),
        "final_hit": evaluate(out / "final", args.final_eval_n), "log_history": history})  # fmt: skip


def stage_sft_continue(args: Args, seed: int) -> None:
    """Control arm: SFT continued from the same start for the CPU minutes GRPO seed ``seed`` used."""
    budget = json.loads((args.run_dir / f"grpo-s{seed}.json").read_text())["train_minutes"]
    overrides = [f"model.name={sft_start(args)}", f"training.seed={1000 + seed}", f"training.max_minutes={budget}"]
    out = train(CONTROL_RECIPE, overrides, args.run_dir / f"sft-continue-s{seed}")
    write_json(args.run_dir / f"sft-continue-s{seed}.json", {
        "seed": seed, "curve": curve(out, args.eval_n), "train_minutes": minutes(out),
        "steps": int(list(csv.DictReader((out / "metrics.csv").open()))[-1]["step"]),
        "final_hit": evaluate(out / "final", args.final_eval_n)})  # fmt: skip


def stage_finalize(args: Args, seeds: list[int]) -> None:
    """Copy the seed-0 GRPO model (and its SFT start, in ``sft/``) to checkpoints/, write training.json,
    the demo example and the model card."""
    from domains.gui.card import write_card
    from zoo.recipe import load_recipe

    sft = json.loads((args.run_dir / "sft.json").read_text())
    grpo = [json.loads((args.run_dir / f"grpo-s{s}.json").read_text()) for s in seeds]
    control_files = [args.run_dir / f"sft-continue-s{s}.json" for s in seeds]
    control = [json.loads(p.read_text()) for p in control_files if p.is_file()]
    if args.checkpoint.exists():
        shutil.rmtree(args.checkpoint)
    shutil.copytree(args.run_dir / f"grpo-s{seeds[0]}" / "final", args.checkpoint)
    # The SFT start ships too, so `zoo train` on the GRPO recipe reproduces that stage alone.
    shutil.copytree(args.run_dir / "sft" / "final", args.checkpoint / "sft")
    write_json(args.checkpoint / "sft" / "training.json", {
        "entry": "gui-grounding-tiny", "stage": "SFT warm start (GRPO's starting point)",
        "held_out_hit": sft["final_hit"], "record": "../training.json"})  # fmt: skip
    training = {
        "entry": "gui-grounding-tiny",
        "card": "domains.gui.card:write_card",  # `zoo card gui-grounding-tiny` renders with it
        "release": "python -m domains.gui.release all",
        "args": {k: list(v) if isinstance(v, tuple) else v for k, v in vars(args).items() if not isinstance(v, Path)},
        "recipe_sft": load_recipe(SFT_RECIPE, list(args.sft_overrides)).to_dict(),
        "recipe_grpo": load_recipe(GRPO_RECIPE, list(args.grpo_overrides)).to_dict(),
        "recipe_control": load_recipe(CONTROL_RECIPE).to_dict(),
        "seeds": {"grpo": seeds, "grpo_data": [100 + s for s in seeds], "control": [1000 + s for s in seeds],
                  "held_out_eval": EVAL_SEED, "released_grpo_seed": seeds[0]},
        "held_out": {"task": "synthetic single-button 112x112 screens", "metric": "hit (box centre in target box)",
                     "n_final": args.final_eval_n, "n_curve": args.eval_n},
        "sft": sft,
        "grpo": grpo,
        "sft_continue_equal_time": control,
        "summary": summarise(sft, grpo, control),
    }  # fmt: skip
    training["demo_example"] = write_example(args.checkpoint, ROOT / "examples/screen.png")
    write_json(args.checkpoint / "training.json", training)  # before the card, which reads the checkpoint
    write_card(args.card, training, args.checkpoint)
    logger.info("summary: %s", json.dumps(training["summary"], indent=2))


def write_example(model_dir: Path, out: Path, first_seed: int = 5000, tries: int = 50) -> dict[str, Any]:
    """``examples/screen.png`` (+ ``.json``): the first 448-px one-button screen from ``first_seed`` on
    on which the released model hits *and* overlaps the button with IoU >= 0.5; ``screens_tried`` says
    how many it took, so the demo's success is chosen openly. The model sees the screen smart-resized
    to 112 px; its box is mapped back to 448-px pixels."""
    from domains.gui.evaluate import click_point, point_in_box
    from domains.gui.rewards import gui_g1_iou
    from domains.gui.synthetic import single_button_screen

    pipe = pipeline(model_dir)
    for tried, seed in enumerate(range(first_seed, first_seed + tries), start=1):
        screen = single_button_screen(seed, size=448)
        [button] = screen.elements
        pred = pipe(screen.image, button.instruction)
        if point_in_box(click_point(pred), button.bbox) and gui_g1_iou(pred.bbox, button.bbox) >= 0.5:
            screen.image.save(out)
            meta = {"instruction": button.instruction, "bbox": list(button.bbox), "image_size": [448, 448],
                    "seed": seed}  # fmt: skip
            write_json(out.with_suffix(".json"), meta)
            upscaled = [_upscaled_sample(s) for s in range(6000, 6200)]
            return {**meta, "screens_tried": tried, "hit_on_200_upscaled_448px_screens": hit_rate(pipe, upscaled)}
    raise RuntimeError(f"no good hit on {tries} example screens; not writing a failing demo")


def _upscaled_sample(seed: int) -> Sample:
    """A one-button screen drawn at 448 px (the model sees it resized to 112 px)."""
    from domains.gui.synthetic import single_button_screen

    screen = single_button_screen(seed, size=448)
    [button] = screen.elements
    return Sample(f"upscaled-{seed}", (screen.image,), button.instruction,
                  {"bbox": [float(v) for v in button.bbox], "image_size": [448, 448]})  # fmt: skip


def summarise(sft: dict, grpo: list[dict], control: list[dict]) -> dict[str, Any]:
    """Before/after numbers and the gain per seed (the card quotes these)."""
    gains = [g["final_hit"] - sft["final_hit"] for g in grpo]
    out = {
        "hit_after_sft": sft["final_hit"],
        "hit_after_grpo": {f"seed{g['seed']}": g["final_hit"] for g in grpo},
        "grpo_gain_over_sft": {f"seed{g['seed']}": gain for g, gain in zip(grpo, gains)},
        "grpo_gain_min": min(gains),
        "grpo_gain_mean": sum(gains) / len(gains),
    }
    if control:
        out["hit_after_sft_continue_equal_time"] = {f"seed{c['seed']}": c["final_hit"] for c in control}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m domains.gui.release", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("stage", choices=["sft", "grpo", "sft-continue", "finalize", "all"])
    parser.add_argument("--seed", type=int, action="append", help="GRPO / control seed(s) (default 0 1 2)")
    parser.add_argument("--run-dir", type=Path, default=Args.run_dir)
    parser.add_argument("--checkpoint", type=Path, default=Args.checkpoint)
    parser.add_argument("--card", type=Path, default=Args.card)
    parser.add_argument("--sft-set", dest="sft_overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="SFT recipe override (training.steps=4 for a smoke run)")
    parser.add_argument("--set", dest="grpo_overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="GRPO recipe override")
    parser.add_argument("--eval-n", type=int, default=Args.eval_n)
    parser.add_argument("--final-eval-n", type=int, default=Args.final_eval_n)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 when running stages side by side)")
    ns = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import torch

    torch.set_num_threads(ns.threads)
    args = replace(Args(), run_dir=ns.run_dir, checkpoint=ns.checkpoint, card=ns.card, eval_n=ns.eval_n,
                   final_eval_n=ns.final_eval_n, sft_overrides=tuple(ns.sft_overrides),
                   grpo_overrides=tuple(ns.grpo_overrides))  # fmt: skip
    seeds = ns.seed or [0, 1, 2]
    if ns.stage in ("sft", "all"):
        stage_sft(args)
    for seed in seeds if ns.stage in ("grpo", "all") else []:
        stage_grpo(args, seed)
    for seed in seeds if ns.stage in ("sft-continue", "all") else []:
        stage_sft_continue(args, seed)
    if ns.stage in ("finalize", "all"):
        stage_finalize(args, seeds)


if __name__ == "__main__":
    main()
