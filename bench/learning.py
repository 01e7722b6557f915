"""Proof that the GRPO engine learns: held-out reward before and after GRPO, on CPU, in minutes.

Task: ``domains/synthetic`` ("what colour is the square?", four colours, exact answers).
Policy: a tiny random Qwen2.5-VL (``zoo.tiny``) with its vision tower frozen, as the papers do.

Per seed:

1. **SFT warm start** (``zoo.engines.vlm.sft.train_sft``, plain torch loop) until the mean SFT loss of the last
   three steps drops to ``--warm-loss`` (answer tokens), so GRPO starts from a policy that samples
   colour words but is often wrong. (A greedy-accuracy criterion is fooled early on: argmax can
   already name a colour while sampling at temperature 1 is still near uniform, and GRPO sees
   only samples.)
2. **GRPO** with the zoo engine, run exactly as ``zoo train zoo/rl/recipes/synthetic-colour.yaml
   --set model.name=<sft dir>`` runs it (``zoo.train.run``), ``--grpo-steps`` optimiser steps.
3. **Evaluation**: greedy decoding on ``--heldout`` test images (data seed 12345, never trained
   or validated on) before and after GRPO; the score is the recipe's ``synthetic-colour`` reward.
4. With ``--compare-sft``: continued SFT from the same warm start for the same wall time as
   GRPO (fresh AdamW state), evaluated the same way — the honest baseline for the GRPO gain.

Prints one JSON line per seed and a summary; saves ``reward_curve.png`` per run.

    OMP_NUM_THREADS=1 python bench/learning.py --seeds 0 1 2 --compare-sft
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]

from domains.synthetic import data as synthetic_task
from domains.synthetic.rewards import ColourReward
from zoo.data import load_dataset
from zoo.engines.vlm.policy_model import load_policy
from zoo.engines.vlm.recipe import VLMRecipe
from zoo.engines.vlm.sft import SFTExample, train_sft
from zoo.train import run as zoo_train

RECIPE = ROOT / "domains" / "synthetic" / "recipes" / "synthetic-colour.yaml"


class _WarmEnough(Exception):
    """Raised from the SFT callback to stop the warm start once the warm-up loss target is met."""


def messages() -> list[dict]:
    return [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": synthetic_task.QUESTION}]}]


@torch.no_grad()
def evaluate(model, processor, samples, batch_size: int = 100) -> float:
    """Mean ``synthetic-colour`` reward of greedy answers on ``samples``."""
    was_training = model.training
    model.eval()
    reward = ColourReward()
    prompt = processor.apply_chat_template(messages(), add_generation_prompt=True, tokenize=False)
    scores = []
    for start in range(0, len(samples), batch_size):
        chunk = samples[start : start + batch_size]
        inputs = processor(text=[prompt] * len(chunk), images=[s.images[0] for s in chunk], return_tensors="pt",
                           padding=True)
        out = model.generate(**inputs, max_new_tokens=4, do_sample=False)
        texts = processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        scores.extend(r.score for r in reward(texts, chunk))
    model.train(was_training)
    return sum(scores) / len(scores)


def sft(model, processor, train, *, seed: int, max_steps: int, stop=None) -> int:
    """Run SFT steps (bs 32, lr 2e-3) until ``stop(step, losses)`` is true or ``max_steps``; returns steps run."""
    done, losses = 0, []

    def draw(rng: random.Random, n: int):
        picks = [train[rng.randrange(len(train))] for _ in range(n)]
        return [SFTExample(messages(), list(s.images), s.target["answer"]) for s in picks]

    def callback(step: int, loss: float) -> None:
        nonlocal done
        done = step
        losses.append(loss)
        if stop is not None and stop(step, losses):
            raise _WarmEnough

    try:
        train_sft(model, processor, draw, steps=max_steps, batch_size=32, lr=2e-3, warmup=10, seed=seed,
                  callback=callback)
    except _WarmEnough:
        pass
    model.eval()
    return done


def run_seed(seed: int, args, heldout) -> dict:
    out = Path(args.out).resolve() / f"seed{seed}"
    recipe = VLMRecipe.from_yaml(RECIPE, [f"training.seed={seed}", *args.overrides])
    train = recipe.data.load()
    model, processor = load_policy(recipe, train)

    t0 = time.perf_counter()
    warm = sft(model, processor, train, seed=seed, max_steps=args.max_sft_steps,
               stop=lambda step, losses: len(losses) >= 3 and sum(losses[-3:]) / 3 <= args.warm_loss)
    t_sft = time.perf_counter() - t0
    model.save_pretrained(out / "sft")
    processor.save_pretrained(out / "sft")
    before = evaluate(model, processor, heldout)

    t0 = time.perf_counter()
    run_dir = zoo_train(str(RECIPE), [f"training.seed={seed}", f"training.steps={args.grpo_steps}",
                                      f"model.name={out / 'sft'}", f"training.save_steps={args.grpo_steps}",
                                      *args.overrides], resume=False, output_dir=str(out / "grpo"))
    t_grpo = time.perf_counter() - t0
    from transformers import AutoModelForImageTextToText

    after = evaluate(AutoModelForImageTextToText.from_pretrained(run_dir / "final"), processor, heldout)
    result = {"seed": seed, "sft_warm_steps": warm, "heldout_before": before, "heldout_after_grpo": after,
              "gain": round(after - before, 4), "sft_min": round(t_sft / 60, 2), "grpo_min": round(t_grpo / 60, 2),
              "reward_curve": str(run_dir / "reward_curve.png")}
    if args.compare_sft:
        deadline = time.perf_counter() + t_grpo
        steps = sft(model, processor, train, seed=seed + 1000, max_steps=10_000,
                    stop=lambda step, losses: time.perf_counter() >= deadline)
        result.update(sft_same_time_steps=steps, heldout_after_sft_same_time=evaluate(model, processor, heldout))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--grpo-steps", type=int, default=120)
    parser.add_argument("--warm-loss", type=float, default=1.0, help="stop SFT once its loss (mean of 3) is this low")
    parser.add_argument("--max-sft-steps", type=int, default=80)
    parser.add_argument("--heldout", type=int, default=400, help="held-out test images (data seed 12345)")
    parser.add_argument("--compare-sft", action="store_true", help="also continue SFT for GRPO's wall time")
    parser.add_argument("--out", default="runs/bench-learning")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="extra recipe overrides")
    args = parser.parse_args()
    torch.set_num_threads(1)
    heldout = list(load_dataset("synthetic-colour", n=args.heldout, seed=12345))
    t0 = time.perf_counter()
    results = []
    for seed in args.seeds:
        results.append(run_seed(seed, args, heldout))
        print(json.dumps(results[-1]), flush=True)
    summary = {
        "seeds": args.seeds,
        "heldout_n": len(heldout),
        "mean_before": round(statistics.mean(r["heldout_before"] for r in results), 4),
        "mean_after_grpo": round(statistics.mean(r["heldout_after_grpo"] for r in results), 4),
        "total_minutes": round((time.perf_counter() - t0) / 60, 2),
    }
    if args.compare_sft:
        summary["mean_after_sft_same_time"] = round(statistics.mean(r["heldout_after_sft_same_time"] for r in results), 4)
    print(json.dumps(summary))
    (Path(args.out) / "result.json").write_text(json.dumps({"runs": results, "summary": summary}, indent=2))


if __name__ == "__main__":
    main()
