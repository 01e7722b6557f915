"""Build ``checkpoints/gui-grounding-tiny``: SFT warm start, then GRPO with the GUI-G1 reward.

A randomly initialised Qwen2.5-VL of ~1M parameters (frozen random vision tower, digit-split
tokenizer) learns to put a box on the one button of a
112-px synthetic screen. Stages, in training order (each caches its result under ``--run-dir``):

    python scripts/train_gui_tiny.py sft                    # supervised warm start
    python scripts/train_gui_tiny.py grpo --seed 0          # GRPO (domains/gui/recipes/gui-g1-tiny-cpu.yaml)
    python scripts/train_gui_tiny.py sft-continue --seed 0  # control: more SFT for GRPO's wall time
    python scripts/train_gui_tiny.py finalize               # checkpoint + training.json + model card
    python scripts/train_gui_tiny.py all                    # everything above, seeds 0 1 2

Accuracy is "hit": the centre of the predicted box inside the target box (ScreenSpot's criterion),
greedy decoding through the same :class:`~zoo.pipelines.vlm.VLMPipeline` that ``zoo.load`` returns,
on held-out screens whose seed the training data never uses.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from domains.gui.data import load_synthetic
from domains.gui.evaluate import hit_rate
from domains.gui.prompts import GUI_G1_USER
from zoo.data import Sample
from zoo.hub import ResolvedModel
from zoo.pipelines.vlm import VLMPipeline
from zoo.registry import info
from zoo.engines.vlm.recipe import VLMRecipe as Recipe
from zoo.sft import SFTExample, train_sft

logger = logging.getLogger("train_gui_tiny")
ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "domains/gui/recipes/gui-g1-tiny-cpu.yaml"
CHECKPOINT = ROOT / "checkpoints/gui-grounding-tiny"
CARD = ROOT / "model_cards/gui-grounding-tiny/README.md"
EVAL_SEED = 12345  # held-out screens; training draws seeds >= 10**6 (SFT batches) and 100+ (GRPO)


@dataclass(frozen=True)
class Args:
    """Knobs of the run; defaults are the released checkpoint's."""

    run_dir: Path = ROOT / "runs/gui-tiny"
    """Where stage outputs are cached."""
    checkpoint: Path = CHECKPOINT
    """Where ``finalize`` writes the released checkpoint."""
    card: Path = CARD
    """Where ``finalize`` writes the model card."""
    model_seed: int = 0
    """Seed of the random initialisation and of the tokenizer corpus order."""
    sft_steps: int = 2400
    """Supervised steps (batch 32) before GRPO; the feasibility scout saw hit leave chance near 900."""
    sft_lr: float = 2e-3
    """SFT learning rate (AdamW, 30 warm-up steps, then constant)."""
    eval_n: int = 400
    """Held-out screens per evaluation during training."""
    final_eval_n: int = 1000
    """Held-out screens for the before/after numbers in training.json and the card."""
    curve_every: int = 20
    """Evaluate every N GRPO steps."""
    sft_curve_every: int = 300
    """Evaluate every N SFT steps (on half of ``eval_n`` screens: SFT curves only locate the plateau)."""
    grpo_overrides: tuple[str, ...] = ()
    """Extra recipe overrides for the GRPO stage (``training.steps=10`` for a smoke run)."""


# --- model, data, evaluation ------------------------------------------------------------------


def build_model(args: Args) -> tuple[Any, Any]:
    """The tiny Qwen2.5-VL (text 128x4, vision 64x2) with a tokenizer trained on the task's text."""
    from zoo.tiny import DEFAULT_CORPUS, build_tiny_vlm

    corpus = [DEFAULT_CORPUS] + [
        GUI_G1_USER.replace("{question}", s.question) + " " + answer(s.target["bbox"])
        for s in load_synthetic(n=512, seed=999, task="single")
    ]
    return build_tiny_vlm(
        "qwen2_5_vl", corpus, seed=args.model_seed, hidden=128, layers=4, vision_hidden=64,
        min_pixels=56 * 56, max_pixels=112 * 112, vocab_size=400,
    )  # fmt: skip


def answer(bbox: list[float]) -> str:
    """The SFT target: Qwen2.5-VL's native grounding JSON, integer pixels."""
    return json.dumps([{"bbox_2d": [int(round(v)) for v in bbox]}])


def sft_examples(rng: random.Random, batch_size: int) -> list[SFTExample]:
    """A fresh batch of one-button screens, seeded from ``rng`` (``train_sft``'s ``Random(seed)``).

    Batch seeds are >= 10**6, so they never collide with the held-out seed.
    """
    samples = load_synthetic(n=batch_size, seed=10**6 + rng.randrange(10**9), task="single")
    return [
        SFTExample(
            messages=[{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": GUI_G1_USER.replace(
                "{question}", s.question)}]}],
            images=s.images,
            target=answer(s.target["bbox"]),
        )
        for s in samples
    ]  # fmt: skip


def pipeline(model: Any, processor: Any) -> VLMPipeline:
    """The inference pipeline ``zoo.load("gui-grounding-tiny")`` builds, around an in-memory model."""
    return VLMPipeline(model, processor, info("gui-grounding-tiny"), ResolvedModel(Path("."), "in-memory", "local"))


_EVAL_CACHE: dict[int, list] = {}


def evaluate(model: Any, processor: Any, n: int) -> float:
    """Held-out hit rate on ``n`` screens (greedy)."""
    if n not in _EVAL_CACHE:
        _EVAL_CACHE[n] = load_synthetic(n=n, seed=EVAL_SEED, task="single")
    was_training = model.training
    model.eval()
    rate = hit_rate(pipeline(model, processor), _EVAL_CACHE[n])
    model.train(was_training)
    return rate


def save(model: Any, processor: Any, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    processor.save_pretrained(folder)


def load(folder: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForImageTextToText, AutoProcessor

    return AutoModelForImageTextToText.from_pretrained(folder).eval(), AutoProcessor.from_pretrained(folder)


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


# --- stages -----------------------------------------------------------------------------------


def stage_sft(args: Args) -> None:
    """Supervised warm start; records the loss and held-out hit curve."""
    model, processor = build_model(args)
    curve: list[dict[str, float]] = []
    start = time.process_time()
    eval_time = 0.0

    def on_step(step: int, loss: float) -> None:
        nonlocal eval_time
        if step % args.sft_curve_every == 0 or step == args.sft_steps:
            t = time.process_time()
            minutes = (t - start - eval_time) / 60
            hit = evaluate(model, processor, args.eval_n // 2)
            eval_time += time.process_time() - t
            curve.append({"step": step, "loss": loss, "hit": hit, "minutes": minutes})
            logger.info("sft step %d loss %.3f held-out hit %.3f", step, loss, hit)

    losses = train_sft(model, processor, sft_examples, steps=args.sft_steps, batch_size=32, lr=args.sft_lr,
                       warmup=30, seed=args.model_seed, callback=on_step)  # fmt: skip
    minutes = (time.process_time() - start - eval_time) / 60
    save(model, processor, args.run_dir / "sft")
    final = evaluate(model, processor, args.final_eval_n)
    write_json(args.run_dir / "sft.json", {"curve": curve, "loss_every_50": losses[::50], "train_minutes": minutes,
                                           "final_hit": final, "steps": args.sft_steps, "lr": args.sft_lr})  # fmt: skip


def stage_grpo(args: Args, seed: int) -> None:
    """GRPO from the SFT checkpoint through the shared backbone (ZooGRPOTrainer, GUI-G1 loss)."""
    from transformers import TrainerCallback

    from zoo.engines.vlm.trl_engine import build_trainer

    start = args.run_dir / "sft"
    if not start.is_dir():  # reproduce GRPO alone from the SFT start shipped with the checkpoint
        start = args.checkpoint / "sft"
        logger.info("no SFT stage in %s; starting GRPO from the shipped %s", args.run_dir, start)
    recipe = Recipe.from_yaml(RECIPE, [f"training.seed={seed}", f"model.name={start}",
                                       f"data.kwargs.seed={100 + seed}", *args.grpo_overrides])  # fmt: skip
    out = args.run_dir / f"grpo-s{seed}"
    curve: list[dict[str, float]] = []
    clock = {"start": time.process_time(), "eval": 0.0}

    class Curve(TrainerCallback):
        def on_step_end(self, targs, state, control, model=None, processing_class=None, **kwargs):
            if state.global_step % args.curve_every and state.global_step != recipe.training.steps:
                return
            t = time.process_time()
            minutes = (t - clock["start"] - clock["eval"]) / 60
            hit = evaluate(model, trainer.processing_class, args.eval_n)
            clock["eval"] += time.process_time() - t
            curve.append({"step": state.global_step, "hit": hit, "minutes": minutes})
            logger.info("grpo seed %d step %d held-out hit %.3f", seed, state.global_step, hit)

    trainer = build_trainer(recipe, out, callbacks=[Curve()])
    clock["start"] = time.process_time()
    trainer.train()
    minutes = (time.process_time() - clock["start"] - clock["eval"]) / 60
    save(trainer.model, trainer.processing_class, out / "final")
    final = evaluate(trainer.model, trainer.processing_class, args.final_eval_n)
    history = [{k: v for k, v in row.items() if isinstance(v, (int, float))} for row in trainer.state.log_history]
    write_json(args.run_dir / f"grpo-s{seed}.json", {"seed": seed, "curve": curve, "train_minutes": minutes,
                                                      "final_hit": final, "log_history": history})  # fmt: skip


def stage_sft_continue(args: Args, seed: int) -> None:
    """Control arm: continue SFT from the same checkpoint for the wall time GRPO used (same seed)."""
    grpo = json.loads((args.run_dir / f"grpo-s{seed}.json").read_text())
    model, processor = load(args.run_dir / "sft")
    budget, start, curve = grpo["train_minutes"] * 60, time.process_time(), []
    clock = {"eval": 0.0, "steps": 0}

    class Budget(Exception):
        pass

    def on_step(step: int, loss: float) -> None:
        used = time.process_time() - start - clock["eval"]
        clock["steps"] = step
        if step % 50 == 0 or used >= budget:
            t = time.process_time()
            hit = evaluate(model, processor, args.eval_n)
            curve.append({"step": step, "loss": loss, "hit": hit, "minutes": used / 60})
            clock["eval"] += time.process_time() - t
        if used >= budget:
            raise Budget

    try:
        train_sft(model, processor, sft_examples, steps=10**6, batch_size=32, lr=args.sft_lr, warmup=30,
                  seed=1000 + seed, callback=on_step)  # fmt: skip
    except Budget:
        model.eval()
    write_json(args.run_dir / f"sft-continue-s{seed}.json", {
        "seed": seed, "curve": curve, "steps": clock["steps"], "train_minutes": budget / 60,
        "final_hit": evaluate(model, processor, args.final_eval_n)})  # fmt: skip


def stage_finalize(args: Args, seeds: list[int]) -> None:
    """Copy the seed-0 GRPO model (and its SFT start, in ``sft/``) to checkpoints/, write training.json,
    the demo example and the model card."""
    from domains.gui.card import write_card

    sft = json.loads((args.run_dir / "sft.json").read_text())
    grpo = [json.loads((args.run_dir / f"grpo-s{s}.json").read_text()) for s in seeds]
    control_files = [args.run_dir / f"sft-continue-s{s}.json" for s in seeds]
    control = [json.loads(p.read_text()) for p in control_files if p.is_file()]
    if args.checkpoint.exists():
        shutil.rmtree(args.checkpoint)
    shutil.copytree(args.run_dir / f"grpo-s{seeds[0]}" / "final", args.checkpoint)
    # The SFT start ships too, so `zoo train` on the CPU recipe reproduces the GRPO stage alone.
    shutil.copytree(args.run_dir / "sft", args.checkpoint / "sft")
    write_json(args.checkpoint / "sft" / "training.json", {
        "entry": "gui-grounding-tiny", "stage": "SFT warm start (GRPO's starting point)",
        "held_out_hit": sft["final_hit"], "record": "../training.json"})  # fmt: skip
    recipe = Recipe.from_yaml(RECIPE)
    training = {
        "entry": "gui-grounding-tiny",
        "card": "domains.gui.card:write_card",  # `zoo card gui-grounding-tiny` renders with it
        "script": "scripts/train_gui_tiny.py all",
        "args": {k: v for k, v in vars(args).items() if not isinstance(v, Path)},
        "recipe_grpo": recipe.to_dict(),
        "seeds": {"model_init": args.model_seed,
                  "sft_data": f"10**6 + random.Random({args.model_seed}).randrange(10**9) per batch",
                  "grpo_data": [100 + s for s in seeds], "grpo": seeds, "held_out_eval": EVAL_SEED,
                  "released_grpo_seed": seeds[0]},
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

    pipe = pipeline(*load(model_dir))
    hits = []
    for seed in range(first_seed, first_seed + tries):
        screen = single_button_screen(seed, size=448)
        [button] = screen.elements
        pred = pipe(screen.image, button.instruction)
        hit = point_in_box(click_point(pred), button.bbox)
        hits.append(hit and gui_g1_iou(pred.bbox, button.bbox) >= 0.5)
        if hits[-1]:
            screen.image.save(out)
            meta = {"instruction": button.instruction, "bbox": list(button.bbox), "image_size": [448, 448],
                    "seed": seed}  # fmt: skip
            write_json(out.with_suffix(".json"), meta)
            upscaled = [_upscaled_sample(s) for s in range(6000, 6200)]
            return {**meta, "screens_tried": len(hits), "hit_on_200_upscaled_448px_screens": hit_rate(pipe, upscaled)}
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", choices=["sft", "grpo", "sft-continue", "finalize", "all"])
    parser.add_argument("--seed", type=int, action="append", help="GRPO / control seed(s) (default 0 1 2)")
    parser.add_argument("--run-dir", type=Path, default=Args.run_dir)
    parser.add_argument("--checkpoint", type=Path, default=Args.checkpoint)
    parser.add_argument("--card", type=Path, default=Args.card)
    parser.add_argument("--sft-steps", type=int, default=Args.sft_steps)
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="GRPO recipe override")
    parser.add_argument("--eval-n", type=int, default=Args.eval_n)
    parser.add_argument("--final-eval-n", type=int, default=Args.final_eval_n)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 when running stages side by side)")
    ns = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    torch.set_num_threads(ns.threads)
    args = replace(
        Args(), run_dir=ns.run_dir, checkpoint=ns.checkpoint, card=ns.card, sft_steps=ns.sft_steps,
        grpo_overrides=tuple(ns.overrides), eval_n=ns.eval_n, final_eval_n=ns.final_eval_n,
    )  # fmt: skip
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
