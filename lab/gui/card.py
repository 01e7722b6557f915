"""The Hugging Face model card of ``gui-grounding-tiny``, rendered from its ``training.json``.

Every number in the card is read from the training record written by ``python -m lab.gui.release``;
nothing is typed in by hand, so re-running the release re-writes a card that matches its checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.ladder import ladder_minutes, plot_curves, write_model_card

TEMPLATE = """
# gui-grounding-tiny

A **~1M-parameter Qwen2.5-VL-architecture model trained from scratch on two CPU cores** to put a
box on a button: supervised warm start, then GRPO with the GUI-G1 reward (hit + 0.25·IoU +
0.125·box). It is the runnable, offline example of the GUI domain of the RL model zoo — small
enough to ship in the repository ({size_mb:.1f} MB of safetensors), trained by three recipes you can re-run.

**It is not a GUI agent.** It only knows one synthetic task: 112×112-pixel screens with one
coloured button, and an instruction like "click the Save button". For real screenshots use
`gui-g1-3b` (Yuqi-Zhou/GUI-G1-3B-v1) or `ui-s1-7b` (mPLUG/UI-S1-7B) from the same zoo.

## Use

```python
import zoo

pipe = zoo.load("gui-grounding-tiny")          # checkpoints/gui-grounding-tiny, no network
pred = pipe("examples/screen.png", "click the Save button")
print(pred.bbox)                                # [x1, y1, x2, y2] in the image's own pixels
```

`make demo` runs it on `examples/screen.png` and draws the box. That example is a 448-px screen chosen
openly: the first of the screens tried from seed 5000 on that the model both hits and covers with
IoU ≥ 0.5 ({demo_tried} tried); on 200 other screens drawn at 448 px it hits {demo_rate:.3f}. Larger images are smart-resized to
at most 112×112 (qwen-vl-utils, factor 28) and the box is mapped back to the original pixels.
Prompt (GUI-G1's): `Grounding instruction is: {{instruction}}. Report the bbox coordinates in JSON format.`
Output: `[{{"bbox_2d": [x1, y1, x2, y2]}}]`.

## Results

Held-out metric: **hit** — the centre of the predicted box lies inside the button (ScreenSpot's
point-in-box criterion), greedy decoding, {n_final} held-out screens (seed {eval_seed}, never used in training).

| stage | held-out hit |
|---|---|
| after SFT warm start ({sft_steps} steps, {sft_minutes:.1f} CPU-min) | {sft_hit:.3f} |
{grpo_rows}
{control_rows}
GRPO over its SFT start: mean gain **{gain_mean:+.3f}**, smallest gain over the {n_seeds} seeds {gain_min:+.3f}.
{control_note}

Curves (held-out hit during training, on {n_curve_sft} screens for SFT and {n_curve} for GRPO and the control)
are in `training.json` (`sft.curve`, `grpo[*].curve`, `sft_continue_equal_time[*].curve`) and plotted in
`curves.png` next to this card.

## Training

* **Architecture**: Qwen2.5-VL (`Qwen2_5_VLForConditionalGeneration`), text 128 hidden × 4 layers,
  vision 64 hidden × 2 layers, patch 14, merge 2 (16 image tokens per 112-px screen); byte-level BPE
  tokenizer with one token per digit, trained on the task's text. Built offline with `zoo.tiny`.
* **Vision tower**: frozen at its random initialisation (a trainable one collapsed in our scouting runs).
* **SFT** (`domains/gui/recipes/gui-g1-tiny-sft.yaml`, the `vlm-sft` engine): AdamW lr {sft_lr}, batch 32,
  30 warm-up steps, loss on the answer tokens only, fresh synthetic screens every step.
* **GRPO** (`domains/gui/recipes/gui-g1-tiny-cpu.yaml`, run through `zoo.engines.vlm.trainer.ZooGRPOTrainer`):
  GUI-G1's algorithm — advantage = reward − group mean (no std), loss = token-sum × rate / 64
  averaged over sequences, β = 0 (no reference model), G = 8 — at CPU scale: lr {grpo_lr}, temperature
  {temperature}, {grpo_steps} steps of 4 prompts × 8 completions. Reward: `gui-g1` (the authors' formula,
  parse failure = 0).
* **Data**: `domains/gui/synthetic.py` one-button screens (5 themes, 8 colours, random size and place).
* **Reproduce**: `python -m lab.gui.release all` (about {total_minutes:.0f} CPU-minutes) runs the three
  recipes (SFT, GRPO, equal-time SFT control) and evaluates their checkpoints; seeds are in `training.json`.
  The GRPO stage alone starts from the shipped SFT weights in `sft/`:
  `python -m lab.gui.release grpo --seed 3 --run-dir runs/repro` (reports held-out hit per checkpoint),
  or `zoo train domains/gui/recipes/gui-g1-tiny-cpu.yaml`.

## Files

`model.safetensors` (the GRPO model, float32), `config.json`, tokenizer and processor files,
`training.json` (recipe, seeds, curves, every number above), `sft/` (the SFT warm start GRPO began from).

## Limitations and out-of-scope use

* Trained only on synthetic single-button screens: every screen has exactly one target, so the model
  never had to read the instruction to succeed. Do not expect it to pick the named element among several.
* Accuracy numbers are on the synthetic held-out set only; no ScreenSpot number is claimed.
* Not for controlling real devices or user interfaces.

## Citation

The reward and GRPO variant are GUI-G1's: Zhou et al., *GUI-G1: Understanding R1-Zero-Like Training
for Visual Grounding in GUI Agents*, arXiv:2505.15810 (code: github.com/Yuqi-Zhou/GUI-G1).
"""


def _rows(training: dict[str, Any]) -> tuple[str, str, str]:
    grpo = "\n".join(
        f"| after GRPO, seed {g['seed']} (+{g['train_minutes']:.1f} CPU-min){' — released' if i == 0 else ''} "
        f"| **{g['final_hit']:.3f}** |"
        for i, g in enumerate(training["grpo"])
    )
    control = training.get("sft_continue_equal_time") or []
    control_rows = "\n".join(
        f"| control: SFT continued for GRPO's time, seed {c['seed']} ({c['steps']} more steps) | {c['final_hit']:.3f} |"
        for c in control
    )
    if control:
        ctl = sum(c["final_hit"] for c in control) / len(control)
        grpo_mean = sum(g["final_hit"] for g in training["grpo"]) / len(training["grpo"])
        lo_c, hi_c = min(c["final_hit"] for c in control), max(c["final_hit"] for c in control)
        lo_g, hi_g = min(g["final_hit"] for g in training["grpo"]), max(g["final_hit"] for g in training["grpo"])
        note = (
            f"Against the honest baseline — spending GRPO's CPU time on more SFT instead, from the same start — "
            f"GRPO averages {grpo_mean:.3f} and continued SFT {ctl:.3f} ({grpo_mean - ctl:+.3f}). Continued SFT "
            f"lands anywhere between {lo_c:.3f} and {hi_c:.3f} depending on the seed (its held-out hit keeps "
            f"oscillating on this plateau); GRPO lands between {lo_g:.3f} and {hi_g:.3f}. Read the gain as "
            '"GRPO reliably moves the policy to the top of the SFT plateau", not as a jump SFT could never make.'
        )
    else:
        note = "The continued-SFT control was not run."
    return grpo, control_rows + ("\n" if control_rows else ""), note


def render(training: dict[str, Any], size_mb: float) -> str:
    """The card's markdown body for a training record."""
    summary, recipe = training["summary"], training["recipe_grpo"]
    grpo_rows, control_rows, control_note = _rows(training)
    minutes = ladder_minutes(training)
    return TEMPLATE.format(
        size_mb=size_mb,
        demo_tried=training["demo_example"]["screens_tried"],
        demo_rate=training["demo_example"]["hit_on_200_upscaled_448px_screens"],
        n_final=training["held_out"]["n_final"],
        n_curve=training["held_out"]["n_curve"],
        n_curve_sft=training["held_out"]["n_curve"] // 2,
        eval_seed=training["seeds"]["held_out_eval"],
        sft_steps=training["sft"]["steps"],
        sft_minutes=training["sft"]["train_minutes"],
        sft_hit=summary["hit_after_sft"],
        sft_lr=training["sft"]["lr"],
        grpo_rows=grpo_rows,
        control_rows=control_rows,
        control_note=control_note,
        gain_mean=summary["grpo_gain_mean"],
        gain_min=summary["grpo_gain_min"],
        n_seeds=len(training["grpo"]),
        grpo_lr=recipe["training"]["lr"],
        temperature=recipe["algorithm"]["temperature"],
        grpo_steps=recipe["training"]["steps"],
        total_minutes=minutes,
    )


def write_card(path: Path, training: dict[str, Any], checkpoint: Path | None = None) -> Path:
    """Write ``README.md`` (validated ``huggingface_hub.ModelCard``) and ``curves.png`` into ``path``'s folder."""
    checkpoint = checkpoint or Path(__file__).resolve().parents[2] / "checkpoints" / training["entry"]
    write_model_card(
        path, checkpoint, training["entry"], lambda size_mb: render(training, size_mb),
        task="GUI grounding (point in box)", dataset="synthetic one-button screens (held-out)", metric_type="accuracy",
        results=[("hit after SFT", training["summary"]["hit_after_sft"]),
                 ("hit after GRPO", training["grpo"][0]["final_hit"])],
        tags=["gui-grounding", "grpo", "gui-g1", "qwen2_5_vl", "synthetic-data", "cpu-trained", "rl-model-zoo"],
    )  # fmt: skip
    plot_curves(training, path.parent / "curves.png", metric="hit")
    return path
