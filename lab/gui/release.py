"""Build ``checkpoints/gui-grounding-tiny`` from its three recipes, with the numbers its card quotes.

A randomly initialised Qwen2.5-VL of ~1M parameters learns to put a box on the one button of a
112-px synthetic screen. Every stage is a recipe ``zoo train`` runs; this driver only runs them in
order, evaluates their checkpoints on held-out screens and writes the record::

    python -m lab.gui.release sft                    # zoo train domains/gui/recipes/gui-g1-tiny-sft.yaml
    python -m lab.gui.release grpo --seed 0          # zoo train domains/gui/recipes/gui-g1-tiny-cpu.yaml
    python -m lab.gui.release sft-continue --seed 0  # control: gui-g1-tiny-sft-control.yaml, GRPO's CPU time
    python -m lab.gui.release finalize               # checkpoint + training.json + model card
    python -m lab.gui.release all                    # everything above, seeds 0 1 2

Accuracy is "hit": the centre of the predicted box inside the target box (ScreenSpot's criterion),
greedy decoding through the same :class:`~zoo.pipelines.vlm.VLMPipeline` that ``zoo.load`` returns,
on held-out screens whose seed the training data never uses. Curves are read back from each run's
``checkpoint-N`` folders, so evaluation never runs inside (or slows) a training run; CPU minutes are
the runs' own ``metrics.csv`` column.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from domains.gui.evaluate import SYNTHETIC_TINY_SEED, hit_rate
from lab.ladder import Ladder, ReleaseArgs, copy_weights, ladder_record, load_stages, summarise, write_json
from lab.ladder import main as release_main
from zoo.data import Sample

logger = logging.getLogger("lab.gui.release")
ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "domains" / "gui" / "recipes"
SFT_RECIPE = RECIPES / "gui-g1-tiny-sft.yaml"
GRPO_RECIPE = RECIPES / "gui-g1-tiny-cpu.yaml"
CONTROL_RECIPE = RECIPES / "gui-g1-tiny-sft-control.yaml"
CHECKPOINT = ROOT / "checkpoints/gui-grounding-tiny"
CARD = ROOT / "model_cards/gui-grounding-tiny/README.md"
EVAL_SEED = SYNTHETIC_TINY_SEED  # held-out screens (`zoo eval ... --data synthetic-tiny`); training never draws it
#: The released checkpoint's knobs: 400 held-out screens per curve point, 1000 for the final numbers.
DEFAULTS = ReleaseArgs(run_dir=ROOT / "runs/gui-tiny", checkpoint=CHECKPOINT, card=CARD, eval_n=400, final_eval_n=1000)


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


LADDER = Ladder(SFT_RECIPE, GRPO_RECIPE, CONTROL_RECIPE, metric="hit", evaluate=evaluate)


def stage_finalize(args: ReleaseArgs, seeds: list[int]) -> None:
    """Copy the seed-0 GRPO model (and its SFT start, in ``sft/``) to checkpoints/, write training.json,
    the demo example and the model card."""
    from lab.gui.card import write_card
    from lab.records import publish

    sft, grpo, control = load_stages(args, seeds)
    copy_weights(args, seeds[0], "gui-grounding-tiny", {"held_out_hit": sft["final_hit"]})
    training = {
        "entry": "gui-grounding-tiny",
        "release": "python -m lab.gui.release all",
        **ladder_record(LADDER, args, seeds, EVAL_SEED),
        "held_out": {"task": "synthetic single-button 112x112 screens", "metric": "hit (box centre in target box)",
                     "n_final": args.final_eval_n, "n_curve": args.eval_n},
        "sft": sft,
        "grpo": grpo,
        "sft_continue_equal_time": control,
        "summary": summarise(LADDER, sft, grpo, control),
    }  # fmt: skip
    training["demo_example"] = write_example(args.checkpoint, ROOT / "examples/screen.png")
    write_card(args.card, training, args.checkpoint)
    publish(training, args.card, args.checkpoint)
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


def main(argv: list[str] | None = None) -> None:
    release_main(LADDER, DEFAULTS, stage_finalize, "python -m lab.gui.release", __doc__, argv)


if __name__ == "__main__":
    main()
