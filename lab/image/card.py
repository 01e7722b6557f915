"""The card of ``flow-grpo-tiny-colour``, written from the record ``python -m lab.image.release`` measures.

Every number comes from ``training.json``; nothing is typed in by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _row(label: str, scores: dict[str, Any]) -> str:
    seeds = sorted(scores, key=int)

    def mean(key: str) -> float:
        return sum(scores[s][key] for s in seeds) / len(seeds)

    per_seed = ", ".join(f"{scores[s]['reward']:.3f}" for s in seeds)
    return (f"| {label} | {mean('reward'):.3f} ({per_seed}) | {mean('colour_match'):.3f} | "
            f"{mean('foreground_fraction'):.3f} |")  # fmt: skip


def _mean(scores: dict[str, Any], key: str) -> float:
    return sum(v[key] for v in scores.values()) / len(scores)


def _outcome(held: dict[str, Any]) -> str:
    """One measured sentence: which way the held-out reward and the object size moved."""
    reward = _mean(held["after"], "reward") - _mean(held["before"], "reward")
    size = _mean(held["after"], "foreground_fraction") - _mean(held["before"], "foreground_fraction")
    verb = "rose" if reward > 0 else "fell"
    return (f"**Outcome: on the held-out prompts the reward {verb} by {abs(reward):.3f}** (mean over seeds), while the "
            f"objects' share of the image changed by {size:+.3f}.")  # fmt: skip


def write_card(record: dict[str, Any], path: Path) -> Path:
    """Render the model card (Hugging Face front matter + measured tables) to ``path``."""
    held, pre, recipe = record["held_out"], record["pretrain"], record["recipe"]
    alg, tr = recipe["algorithm"], recipe["training"]
    curve = " → ".join(f"{r['eval/reward']:.3f}" for r in record["engine_eval_curve"])
    text = f"""---
license: apache-2.0
library_name: diffusers
pipeline_tag: text-to-image
tags: [flow-grpo, reinforcement-learning, tiny, synthetic]
---

# flow-grpo-tiny-colour

A ~0.4M-parameter `StableDiffusion3Pipeline` (SD3 transformer, VAE, two tiny CLIP text encoders, no T5)
pre-trained on synthetic 32x32 images of one coloured square or circle, then trained with **Flow-GRPO**
(guidance {held['guidance_scale']}, {alg['num_steps']} steps, groups of {alg['group_size']}, KL beta {alg['beta']})
on the `prompt-colour` reward: the share of the object's pixels in the colour the prompt names.
A CPU demonstration of the zoo's diffusion engine, not an image model for any real use.

```bash
zoo run flow-grpo-tiny-colour --prompt "a green circle" --out green-circle.png
```

## Held-out results (measured by `python -m lab.image.release package`)

Prompts never seen in pre-training or RL (compositions of seen words): {", ".join(held['prompts'])};
{held['per_prompt']} images each, seeds {held['seeds']}, sampled by this diffusers pipeline
({held['num_inference_steps']} steps, guidance {held['guidance_scale']}).

| weights | prompt-colour reward (per seed) | colour match | foreground fraction |
|---|---|---|---|
{_row("pre-trained (before RL)", held["before"])}
{_row("after Flow-GRPO (released)", held["after"])}

Engine evaluation during RL (4 held-out prompts x 4 images, fixed noise, every {tr['eval_every']} rounds): {curve}.

{_outcome(held)} The reward checks colour only, not shape or size; the foreground fraction column
shows whether the objects grew (a way to change a colour share without drawing the shape better).

## Training

* Pre-training: {pre['vae_steps']} VAE steps, {pre['denoiser_steps']} denoiser steps (rectified flow, prompt
  dropout {pre['uncond_prob']}), seed {pre['seed']}, {pre['cpu_minutes']:.1f} CPU-minutes.
* RL: recipe `domains/image/recipes/flow-grpo-tiny-colour.yaml`, {tr['steps']} rounds x {tr['prompts_per_step']}
  prompts x {alg['group_size']} images, full weights, lr {tr['lr']}, clip {alg['clip_range']}, {record['rl_cpu_minutes']:.1f} CPU-minutes.
* Reproduce: `python -m lab.image.release all` (records in `training.json`, curve in `metrics.csv`).
"""
    path.write_text(text)
    return path
