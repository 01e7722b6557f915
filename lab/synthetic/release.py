"""Build ``checkpoints/synthetic-colour-sft-tiny``: the warm start of the README's first GRPO run.

A first run convinces when its reward moves from the first steps. A random tiny model never names a
colour (reward 0 in every sample: no group has a spread, so GRPO has no gradient); a fully trained one
leaves nothing to learn. This release stops the supervised warm start in between: greedy it names the
right colour, but sampled at temperature 1 (as GRPO samples) it often runs on past the word, so its 8
answers to one question disagree and GRPO has a signal at every step. Two recipes, run by ``zoo train``::

    python -m lab.synthetic.release            # SFT, then GRPO seeds 0 1 2 from it, evaluation, checkpoint + card
    python -m lab.synthetic.release --seed 0   # one GRPO seed

Held-out metric: the ``synthetic-colour`` reward of 8 temperature-1 samples per image (what GRPO's own
reward measures, on images whose seed training never draws), and greedy accuracy beside it. The GRPO
runs are the README's command (``synthetic-colour-grpo.yaml``) from this release's SFT weights.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from lab.ladder import drop_loading_context, mean_difference, metric_rows, minutes, train, train_reward_trend
from lab.synthetic.card import write_card

logger = logging.getLogger("lab.synthetic.release")
ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "domains" / "synthetic" / "recipes"
SFT_RECIPE = RECIPES / "synthetic-colour-sft.yaml"
GRPO_RECIPE = RECIPES / "synthetic-colour-grpo.yaml"
ENTRY = "synthetic-colour-sft-tiny"
CHECKPOINT = ROOT / "checkpoints" / ENTRY
CARD = ROOT / "model_cards" / ENTRY / "README.md"
EVAL_SEED = 12345  # held-out images (bench/learning.py's too); the recipes train on data seed 0
SAMPLES_PER_IMAGE = 8  # as many as GRPO's group


def held_out(n: int) -> list[Any]:
    """``n`` held-out task samples (data seed :data:`EVAL_SEED`)."""
    from zoo.data import load_dataset

    return list(load_dataset("synthetic-colour", n=n, seed=EVAL_SEED))


def evaluate(model_dir: Path, samples: list[Any], seed: int = 0, batch: int = 50) -> dict[str, Any]:
    """Per image, the mean ``synthetic-colour`` reward of :data:`SAMPLES_PER_IMAGE` temperature-1 samples
    (``per_image``, for paired differences), their mean (``sampled``) and greedy accuracy (``greedy``)."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from domains.synthetic.rewards import ColourReward
    from zoo.registry import info

    model = AutoModelForImageTextToText.from_pretrained(model_dir).eval()
    processor = AutoProcessor.from_pretrained(model_dir)
    spec, reward = info(ENTRY).spec, ColourReward()
    torch.manual_seed(seed)
    per_image, greedy = [], []
    for start in range(0, len(samples), batch):
        chunk = samples[start : start + batch]
        messages = [{"role": "user", "content": spec.user_content(chunk[0].prompt, {"type": "image"})}]
        prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        inputs = processor(text=[prompt] * len(chunk), images=[s.images[0] for s in chunk], return_tensors="pt")
        width = inputs["input_ids"].shape[1]
        with torch.no_grad():
            best = model.generate(**inputs, max_new_tokens=spec.max_new_tokens, do_sample=False)
            drawn = model.generate(**inputs, max_new_tokens=spec.max_new_tokens, do_sample=True, temperature=1.0,
                                   top_k=0, num_return_sequences=SAMPLES_PER_IMAGE)  # fmt: skip
        greedy += [r.score for r in reward(processor.batch_decode(best[:, width:], skip_special_tokens=True), chunk)]
        texts = processor.batch_decode(drawn[:, width:], skip_special_tokens=True)
        scores = [r.score for r in reward(texts, [s for s in chunk for _ in range(SAMPLES_PER_IMAGE)])]
        per_image += [sum(scores[i : i + SAMPLES_PER_IMAGE]) / SAMPLES_PER_IMAGE
                      for i in range(0, len(scores), SAMPLES_PER_IMAGE)]  # fmt: skip
    return {"sampled": sum(per_image) / len(per_image), "greedy": sum(greedy) / len(greedy), "per_image": per_image}


def stage_sft(run_dir: Path, samples: list[Any]) -> dict[str, Any]:
    """Run the SFT recipe and score every checkpoint: the curve shows where the warm start was stopped."""
    from zoo.engines.reading import load_recipe
    from zoo.runs import checkpoint_step

    out = train(SFT_RECIPE, [], run_dir / "sft")
    curve = []
    for folder in sorted(out.glob("checkpoint-*"), key=checkpoint_step):
        scores = evaluate(folder, samples)
        curve.append({"step": checkpoint_step(folder), "sampled_reward": scores["sampled"], "greedy": scores["greedy"]})
        logger.info("SFT step %d: sampled %.3f, greedy %.3f", curve[-1]["step"], scores["sampled"], scores["greedy"])
    final, settings = evaluate(out / "final", samples), load_recipe(SFT_RECIPE).training
    return {"seed": settings.seed, "steps": settings.steps, "cpu_minutes": minutes(out), "curve": curve,
            "sampled_reward": final["sampled"], "greedy": final["greedy"], "per_image": final["per_image"]}  # fmt: skip


def stage_grpo(run_dir: Path, seed: int, samples: list[Any]) -> dict[str, Any]:
    """The README's GRPO command from this release's SFT weights, with ``seed``."""
    out = train(GRPO_RECIPE, [f"model.name={run_dir / 'sft' / 'final'}", f"training.seed={seed}"],
                run_dir / f"grpo-s{seed}")  # fmt: skip
    rows = [row for row in metric_rows(out) if row.get("reward")]
    scores = evaluate(out / "final", samples)
    return {"seed": seed, "steps": len(rows), "cpu_minutes": minutes(out),
            "train_reward": [round(float(row["reward"]), 4) for row in rows],
            "train_reward_trend": train_reward_trend(rows), "sampled_reward": scores["sampled"],
            "greedy": scores["greedy"], "per_image": scores["per_image"]}  # fmt: skip


def ship(sft_final: Path, checkpoint: Path) -> None:
    """The SFT run's ``final/`` becomes ``checkpoint``: safetensors and JSON only, no loading context."""
    import shutil

    if checkpoint.exists():
        shutil.rmtree(checkpoint)
    shutil.copytree(sft_final, checkpoint, ignore=shutil.ignore_patterns("*.bin", "*.pt", "*.pth", "README.md"))
    drop_loading_context(checkpoint)


def release(run_dir: Path, seeds: list[int], eval_n: int, checkpoint: Path, card: Path) -> dict[str, Any]:
    """Every stage, then the checkpoint, its ``training.json`` and card; returns the numbers recorded."""
    from zoo.engines.reading import load_recipe

    samples = held_out(eval_n)
    sft = stage_sft(run_dir, samples)
    grpo = [stage_grpo(run_dir, seed, samples) for seed in seeds]
    training = {
        "entry": ENTRY,
        "release": "python -m lab.synthetic.release",
        "recipe_sft": load_recipe(SFT_RECIPE).to_dict(),
        "recipe_grpo": load_recipe(GRPO_RECIPE).to_dict(),
        "held_out": {"data_seed": EVAL_SEED, "images": eval_n, "samples_per_image": SAMPLES_PER_IMAGE,
                     "metric": "synthetic-colour reward of temperature-1 samples; greedy accuracy beside it"},
        "sft": {k: v for k, v in sft.items() if k != "per_image"},
        "grpo": [{k: v for k, v in g.items() if k != "per_image"} for g in grpo],
        "paired": {"grpo_minus_sft": {f"seed{g['seed']}": mean_difference(g["per_image"], sft["per_image"])
                                       for g in grpo}},
    }  # fmt: skip
    ship(run_dir / "sft" / "final", checkpoint)
    write_card(training, card, checkpoint)
    return training


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.synthetic.release", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--seed", type=int, action="append", help="GRPO seed(s) (default 0 1 2)")
    parser.add_argument("--run-dir", type=Path, default=ROOT / "runs" / "synthetic-release")
    parser.add_argument("--checkpoint", type=Path, default=CHECKPOINT)
    parser.add_argument("--card", type=Path, default=CARD)
    parser.add_argument("--eval-n", type=int, default=400, help="held-out images (x8 samples each)")
    ns = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import torch

    torch.set_num_threads(1)
    release(ns.run_dir, ns.seed or [0, 1, 2], ns.eval_n, ns.checkpoint, ns.card)


if __name__ == "__main__":
    main()
