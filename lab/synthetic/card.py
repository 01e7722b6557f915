"""The model card of ``synthetic-colour-sft-tiny``, written from the numbers its release measured.

Every number comes from the ``training`` dict of :mod:`lab.synthetic.release`; :func:`lab.records.publish`
then turns card + numbers into ``training.json`` and re-renders the card as ``zoo card`` renders it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TEMPLATE = """---
license: apache-2.0
tags:
- synthetic
- warm-start
- cpu-trained
- rl-model-zoo
---

# synthetic-colour-sft-tiny

A **deliberately half-trained warm start** ({size_mb:.1f} MB) for the README's first GRPO run: a random tiny
Qwen2.5-VL taught "what colour is the square?" for {sft_steps} SFT steps ({sft_minutes:.2f} CPU-min) and
stopped there. Greedy, it names the right colour ({sft_greedy:.2f} held-out); sampled at temperature 1, as
GRPO samples, it often runs on past the word and scores **{sft_sampled:.2f}**, and the 8 answers to one
question disagree, so GRPO has a gradient from its first step.

## Use

```python
import numpy as np
import zoo
from domains.synthetic.data import QUESTION, make_image

pipe = zoo.load("synthetic-colour-sft-tiny")   # checkpoints/synthetic-colour-sft-tiny, no network
pred = pipe(make_image("red", np.random.default_rng(0)), QUESTION)
print(pred.answer)                             # the colour word (greedy)
```

Train from it: `zoo train domains/synthetic/recipes/synthetic-colour-grpo.yaml`.

## Results

Held-out: {images} images of data seed {data_seed} (training draws seed 0), {per_image} temperature-1
samples each, scored by the `synthetic-colour` reward (1 when the first word is the colour).

| model | sampled reward | greedy accuracy |
|---|---|---|
| this warm start | {sft_sampled:.3f} | {sft_greedy:.3f} |
{grpo_rows}

GRPO over the warm start, paired over the held-out images: {gains}. Its own training reward (mean of the
first and last {k} steps): {trends}. Greedy accuracy, high from the start, is not what GRPO raises here:
it makes the sampled answers as right as the greedy one.

## Training

* **Model**: `tiny:qwen2_5_vl` with the zoo's defaults (text 64 hidden x 2 layers, vision 32 x 2, frozen at
  its random initialisation), a tokenizer trained on the task's prompts and colour words.
* **SFT** (`domains/synthetic/recipes/synthetic-colour-sft.yaml`): AdamW lr {sft_lr}, batch 32,
  {sft_steps} steps, loss on the colour word only. The curve of every 10 steps is in `training.json`
  (`measurements.sft.curve`): sampled reward {sft_curve}.
* **GRPO** (`domains/synthetic/recipes/synthetic-colour-grpo.yaml`): G = 8, {images_per_step} images per step,
  temperature 1, lr {grpo_lr}, beta 0, {grpo_steps} steps; reward `synthetic-colour` + 0.1 x `synthetic-format`.
* **Reproduce**: `python -m lab.synthetic.release` (SFT, GRPO seeds {seeds}, evaluation, this folder).

## Limits

It knows one synthetic task (four colours, 56-px images) and nothing else; it exists to be trained.
"""


def _rows(training: dict[str, Any]) -> str:
    return "\n".join(f"| after GRPO, seed {g['seed']} ({g['steps']} steps, {g['cpu_minutes']:.2f} CPU-min) | "
                     f"{g['sampled_reward']:.3f} | {g['greedy']:.3f} |" for g in training["grpo"])  # fmt: skip


def write_card(training: dict[str, Any], card: Path, checkpoint: Path) -> None:
    """Write the narrative card to ``card``, then publish the record into ``checkpoint`` (card re-rendered)."""
    from lab.records import publish

    sft, grpo, held = training["sft"], training["grpo"], training["held_out"]
    grpo_recipe = training["recipe_grpo"]
    trends = [g["train_reward_trend"] for g in grpo]
    text = TEMPLATE.format(
        size_mb=(checkpoint / "model.safetensors").stat().st_size / 1e6, sft_steps=sft["steps"],
        sft_minutes=sft["cpu_minutes"], sft_greedy=sft["greedy"], sft_sampled=sft["sampled_reward"],
        images=held["images"], data_seed=held["data_seed"], per_image=held["samples_per_image"],
        grpo_rows=_rows(training), k=trends[0]["k"],
        gains=", ".join(f"{p['diff']:+.3f} ± {p['se']:.3f} ({seed.replace('seed', 'seed ')})"
                        for seed, p in training["paired"]["grpo_minus_sft"].items()),
        trends=", ".join(f"{t['first']:.2f} -> {t['last']:.2f}" for t in trends),
        sft_lr=training["recipe_sft"]["training"]["lr"], grpo_lr=grpo_recipe["training"]["lr"],
        grpo_steps=grpo_recipe["training"]["steps"],
        images_per_step=grpo_recipe["training"]["batch_size"] // grpo_recipe["algorithm"]["num_generations"],
        sft_curve=", ".join(f"{p['sampled_reward']:.2f}" for p in sft["curve"]),
        seeds=" ".join(str(g["seed"]) for g in grpo),
    )  # fmt: skip
    card.parent.mkdir(parents=True, exist_ok=True)
    card.write_text(text)
    publish(training, card, checkpoint)
