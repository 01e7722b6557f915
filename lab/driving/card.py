"""The Hugging Face model card of ``driving-vla-tiny``, rendered from its ``training.json``.

Every number in the card is read from the training record written by ``python -m lab.driving.release``;
nothing is typed in by hand, so re-running the release re-writes a card that matches its checkpoint.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from lab.ladder import clears, format_difference, ladder_minutes, plot_curves, write_model_card

TEMPLATE = """
# driving-vla-tiny

A **~1M-parameter Qwen2.5-VL-architecture model trained from scratch on CPU** to write a 4-second
plan — {plan_form} — for a 112-px synthetic bird's-eye scene: supervised warm start on the scenes'
logged drives, then GRPO on the PDMS-style reward. It is the runnable, offline example of the driving domain of the RL model zoo, small enough
to ship in the repository ({size_mb:.1f} MB of safetensors), trained by three recipes you can re-run.

**It is not a driving policy.** It only knows this project's synthetic scenes (cruise, follow,
stop, curve; lanes as centrelines, constant-velocity boxes). Not for controlling a vehicle: its
outputs have not been validated for safety in closed-loop driving.

## Use

```python
import zoo

pipe = zoo.load("driving-vla-tiny")          # checkpoints/driving-vla-tiny, no network
pred = pipe("examples/driving-scene.png", "{example_question}")
print(pred.text)                             # the answer as written
print(pred.trajectory or pred.parse_error)   # [[x, y, heading] * 8], metres and radians
```

`examples/driving-scene.png` is the first held-out scene (seed {example_seed}), not a chosen success.

`zoo eval driving-vla-tiny --data synthetic` scores it on the held-out scenes below and draws
`trajectories.png` (the logged drive in light red, the planner proposal in cyan, the prediction in magenta).

## Results

Held-out metric: mean **PDMS-style score** — NAVSIM v1 aggregation `NC·DAC·(5EP+5TTC+2C)/12` on this
project's synthetic-scene geometry, parse failure = 0 — greedy decoding, {n_final} held-out scenes
(seeds from {eval_seed} on, never drawn in training). Not comparable with NAVSIM leaderboards.

| stage | held-out PDMS |
|---|---|
| after SFT warm start ({sft_steps} steps, {sft_minutes:.1f} CPU-min) | {sft_pdms:.3f}{sft_se} |
{grpo_rows}
{control_rows}
{verdict}

{kinds_line}

{plans_line}

The released model (GRPO seed {released_seed}) on `zoo eval --data {benchmark}` ({released_n} scenes): PDMS
{rel_pdms:.3f}, EPDMS {rel_epdms:.3f}, NC {rel_nc:.3f}, DAC {rel_dac:.3f}, EP {rel_ep:.3f}, TTC {rel_ttc:.3f},
comfort {rel_c:.3f}, parse failures {rel_parse:.3f}. Per-scene rows are in `eval/` in the checkpoint.

![trajectories](trajectories.png)

The SFT start's held-out curve ({n_curve_sft} scenes; {sft_schedule}; GRPO and the control start from its end):
{sft_curve}. Curves (held-out PDMS during training, on {n_curve_sft} scenes for SFT and {n_curve} for GRPO
and the control) are in `training.json` (`sft.curve`, `grpo[*].curve`, `sft_continue_equal_time[*].curve`)
and plotted in `curves.png` next to this card.

## Training

* **Architecture**: Qwen2.5-VL (`Qwen2_5_VLForConditionalGeneration`), text 128 hidden × 4 layers,
  vision 64 hidden, {vision}; byte-level BPE tokenizer trained on the task's
  text{added_tokens}. Built offline with `zoo.tiny`.
* **SFT** (`domains/driving/recipes/driving-vla-tiny-sft.yaml`, the `vlm-sft` engine): lr {sft_lr},
  batch 16, loss on the answer tokens only, fresh synthetic scenes every step.
* **GRPO** (`domains/driving/recipes/driving-vla-tiny-cpu.yaml`, the `vlm-trl` engine): {advantages}
  advantages, `{loss_type}` loss aggregation, β = {beta}, G = {generations}, lr {grpo_lr}{grpo_schedule}, temperature
  {temperature}, {grpo_steps} steps of {prompts} prompts × {generations} completions; reward `driving-pdms` (parse failure = 0).
* **Control** (`domains/driving/recipes/driving-vla-tiny-sft-control.yaml`): the SFT continued from the
  same start for each GRPO seed's CPU minutes, at lr {control_lr}{control_schedule}.
* **Reproduce**: `{release}` (about {total_minutes:.0f} CPU-minutes of training) runs the three
  recipes and evaluates their checkpoints; seeds are in `training.json`. The GRPO stage alone starts
  from the shipped SFT weights in `sft/`: `python -m lab.driving.release grpo --seed 2 --run-dir runs/repro`.

## Files

`model.safetensors` (the GRPO model, float32), `config.json`, tokenizer and processor files,
`training.json` (recipes, seeds, curves, every number above), `eval/` (metrics.json, predictions.jsonl,
trajectories.png of the released model), `sft/` (the SFT warm start GRPO began from).

## Limitations and out-of-scope use

* Sub-metrics are scored on a cubic spline through the poses against synthetic lanes and
  constant-velocity agents, not NAVSIM's LQR-tracked rollout on nuPlan maps; no NAVSIM number is claimed.
* Trained on four synthetic scene kinds at 112 px; nothing transfers to camera images.
* Not for controlling a vehicle.
"""


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _pm(se: dict[str, Any], arm: str, seed: int) -> str:
    """`` ± SE`` of one arm's held-out mean, when the record has it."""
    value = se.get(arm, {}).get(f"seed{seed}")
    return "" if value is None else f" ± {value:.3f}"


def _shown(over_seeds: dict[str, float] | None, over_scenes: dict[str, float] | None) -> bool:
    """A difference counts as shown when it clears two standard errors over seeds and, where the record has
    it, over scenes too (the seeds share their held-out scenes, so neither error holds the other's spread)."""
    return over_seeds is not None and clears(over_seeds) and (over_scenes is None or clears(over_scenes))


def _rows(training: dict[str, Any]) -> tuple[str, str, str]:
    grpo, control, start = training["grpo"], training.get("sft_continue_equal_time") or [], training["sft"]
    se = training.get("standard_error") or {}
    grpo_rows = "\n".join(
        f"| after GRPO, seed {g['seed']} (+{g['train_minutes']:.1f} CPU-min){' — released' if i == 0 else ''} "
        f"| **{g['final_pdms']:.3f}**{_pm(se, 'grpo', g['seed'])} |"
        for i, g in enumerate(grpo)
    )
    control_rows = "\n".join(
        f"| control: SFT continued for GRPO seed {c['seed']}'s CPU time ({c['steps']} more steps, "
        f"{c['train_minutes']:.1f} CPU-min) | {c['final_pdms']:.3f}{_pm(se, 'control', c['seed'])} |"
        for c in control
    )
    g_mean = _mean([g["final_pdms"] for g in grpo])
    over_start = (training.get("across_seeds") or {}).get("grpo_minus_sft")
    scenes = training.get("seed_mean_over_scenes") or {}
    spread = f" ± {over_start['se']:.3f} over seeds" if over_start else ""
    if "grpo_minus_sft" in scenes:
        spread += f" and ± {scenes['grpo_minus_sft']['se']:.3f} over the scenes (seeds averaged scene by scene)"
    verdict = (
        f"GRPO over its SFT start: mean change **{g_mean - start['final_pdms']:+.3f}**{spread}, {len(grpo)} seeds "
        f"(smallest {training['summary']['grpo_gain_min']:+.3f}); "
        + ("the gain clears two standard errors of both kinds." if _shown(over_start, scenes.get("grpo_minus_sft"))
           else "not a gain that clears two standard errors of both kinds.")
    )
    if control:
        c_mean = _mean([c["final_pdms"] for c in control])
        verdict += (
            f" Against the honest baseline — spending GRPO's CPU time on more SFT from the same start — GRPO "
            f"averages {g_mean:.3f} and continued SFT {c_mean:.3f} ({g_mean - c_mean:+.3f}); "
            + ("GRPO is ahead on average." if g_mean > c_mean else "GRPO is not ahead on average.")
        )
    else:
        verdict += " The continued-SFT control was not run."
    n = training["held_out"]["n_final"]
    paired = training.get("paired") or {}
    if paired:
        parts = []
        for g in grpo:
            key = f"seed{g['seed']}"
            part = f"seed {g['seed']}: GRPO − SFT {format_difference(paired['grpo_minus_sft'][key])}"
            if key in paired.get("grpo_minus_control", {}):
                part += f", GRPO − control {format_difference(paired['grpo_minus_control'][key])}"
            parts.append(part)
        verdict += (
            f" ± is one standard error over the {n} scenes (greedy, one pass each); differences are paired, "
            f"every arm being scored on the same scenes: {'; '.join(parts)}."
        )
        versus = list(paired.get("grpo_minus_control", {}).values())
        if versus:
            clear = sum(clears(d) for d in versus)
            verdict += f" GRPO beats its control by more than two standard errors on {clear} of {len(versus)} seeds."
        pooled = (training.get("across_seeds") or {}).get("grpo_minus_control")
        if pooled:
            verdict += (
                f" With the run as the unit (the mean of the {pooled['seeds']} seeds' differences, ± its standard "
                f"error over seeds, which also holds training's run-to-run spread): GRPO − control "
                f"{format_difference(pooled)}"
                + (f", over the scenes {format_difference(scenes['grpo_minus_control'])}"
                   if "grpo_minus_control" in scenes else "") + "; "
                + ("GRPO's edge over more SFT is beyond two standard errors." if _shown(pooled, scenes.get("grpo_minus_control"))
                   else "on this budget GRPO's edge over more SFT is not shown.")
            )
        elif versus and clear < len(versus):
            verdict += " On this budget GRPO's edge over more SFT is not shown."
    else:
        verdict += f" Each number is one greedy pass over the same {n} scenes; no standard error was recorded."
    trends = training["summary"].get("grpo_train_reward") or {}
    if trends:
        parts = [f"seed {key.removeprefix('seed')} {t['first']:.3f} → {t['last']:.3f}" for key, t in trends.items()]
        k = min(t["k"] for t in trends.values())
        verdict += (
            f" Inside the GRPO runs, the sampled training reward (temperature {training['recipe_grpo']['algorithm']['temperature']}, "
            f"fresh prompts every step), mean of the first {k} logged steps → the last {k}: " + "; ".join(parts) + "."
        )
    return grpo_rows, control_rows + ("\n" if control_rows else ""), verdict


def _sft_schedule(recipe_training: dict[str, Any]) -> str:
    """The SFT learning-rate schedule in words, from the resolved recipe."""
    decay = recipe_training.get("decay_steps") or 0
    constant = f"constant lr {recipe_training['lr']}"
    return f"{constant}, the last {decay} steps decaying linearly to 0" if decay else constant


def _control_schedule(args: dict[str, Any]) -> str:
    """How the control's budget was set (:func:`lab.ladder.control_budget`), in words."""
    rate = args.get("control_steps_per_minute")
    if rate is None:
        return ", constant, stopped at those minutes (`training.max_minutes`)"
    return (f" decaying linearly to 0 over {rate:g} steps per GRPO CPU minute (GRPO's own rate decays to 0 too; "
            "the rows above give both arms' minutes)")


def _kinds_line(training: dict[str, Any]) -> str:
    """Held-out PDMS per scene kind for each arm (GRPO and control averaged over their seeds)."""
    table = training.get("by_kind")
    if not table:
        return ""
    arms = [arm for arm in ("sft", "grpo", "control") if arm in table]
    names = {"sft": "SFT start", "grpo": "GRPO", "control": "control"}
    kinds = "; ".join(f"{kind} " + " → ".join(f"{table[arm][kind]:.3f}" for arm in arms) for kind in table["sft"])
    return (f"By scene kind ({' → '.join(names[a] for a in arms)}, each arm averaged over its seeds): {kinds}.")


def _plans_line(training: dict[str, Any], written: str) -> str:
    """The scenes' own plans scored on the held-out scenes: the ceiling imitation aims at, and the
    progress reference above it that only the reward knows about."""
    plans = training.get("plans_at_answer_precision")
    if not plans:
        return ""
    logged, planner = plans["logged"], plans["planner"]
    return (
        f"The logged drive the SFT imitates (it holds its speed, slowing for a lead), written "
        f"{written} and scored the same way, reaches PDMS {logged['pdms']:.3f} on these scenes "
        f"(EP {logged['ep']:.2f}, comfort {logged['c']:.2f}): EP is normalised against the planner proposal "
        f"(IDM towards the speed limit, standing in for PDM-Closed; PDMS {planner['pdms']:.3f}), so a perfect "
        "imitation still loses progress on a free road, as NAVSIM's human log does (PDMS 94.8). That headroom "
        "is the reward's to teach; more SFT on the log cannot. nuPlan's comfort limits (NAVSIM's, on a cubic "
        "spline through the poses) fail as soon as consecutive 0.5 s waypoints are unevenly spaced by about "
        f"half a metre; the released model keeps them on {training['released_eval']['c']:.2f} of its scenes."
    )


def _answer_words(training: dict[str, Any]) -> dict[str, str]:
    """How the model writes its plan, in words, from the SFT recipe's answer format and model settings."""
    from domains.driving.action_tokens import CURVATURE_STEP, CURVATURE_TOKENS, DISTANCE_STEP, DISTANCE_TOKENS, TOKENS

    sft = training["recipe_sft"]
    tokens = sft["data"].get("answer_format") == "driving-action-tokens"
    trained = not sft["training"].get("freeze_vision", True)
    return {
        "plan_form": ("8 steps of 0.5 s written as 16 action tokens (a distance and a curvature each) that decode "
                      "into 8 ego-frame waypoints `(x, y, heading)`" if tokens
                      else "8 waypoints `(x, y, heading)` every 0.5 s in the ego frame"),
        "written": (f"in the answer's action tokens ({DISTANCE_STEP:g} m of distance, {CURVATURE_STEP:g} 1/m of "
                    "curvature a step)" if tokens else "at the answer's precision (0.1 m, 0.01 rad)"),
        "vision": "trained from its random initialisation" if trained else "frozen at its random initialisation",
        "added_tokens": (f", plus the {len(TOKENS)} action tokens of `domains/driving/action_tokens.py` "
                         f"(`{DISTANCE_TOKENS[0]}`..`{DISTANCE_TOKENS[-1]}`: decimetres travelled in 0.5 s; "
                         f"`{CURVATURE_TOKENS[0]}`..`{CURVATURE_TOKENS[-1]}`: curvature in 1/1000 m) as whole tokens"
                         if sft["model"].get("added_tokens") else ""),
    }


def render(training: dict[str, Any], size_mb: float) -> str:
    """The card's markdown body for a training record."""
    recipe, released = training["recipe_grpo"], training["released_eval"]
    grpo_rows, control_rows, verdict = _rows(training)
    words = _answer_words(training)
    written = words.pop("written")
    minutes = ladder_minutes(training)
    generations = recipe["algorithm"]["num_generations"]
    return TEMPLATE.format(
        size_mb=size_mb,
        n_final=training["held_out"]["n_final"],
        n_curve=training["held_out"]["n_curve"],
        n_curve_sft=training["held_out"].get("n_curve_sft", training["held_out"]["n_curve"] // 2),
        sft_curve=" · ".join(f"step {p['step']} {p['pdms']:.3f}" for p in training["sft"]["curve"]),
        eval_seed=training["seeds"]["held_out_eval"],
        sft_steps=training["sft"]["steps"],
        sft_minutes=training["sft"]["train_minutes"],
        sft_pdms=training["sft"]["final_pdms"],
        sft_se=(f" ± {training['standard_error']['sft']:.3f}" if training.get("standard_error") else ""),
        sft_lr=training["sft"]["lr"],
        control_lr=training["recipe_control"]["training"]["lr"],
        control_schedule=_control_schedule(training["args"]),
        sft_schedule=_sft_schedule(training["recipe_sft"]["training"]),
        grpo_rows=grpo_rows,
        control_rows=control_rows,
        verdict=verdict,
        plans_line=_plans_line(training, written),
        kinds_line=_kinds_line(training),
        released_seed=training["seeds"]["released_grpo_seed"],
        benchmark=released["benchmark"],
        released_n=released["n"],
        rel_pdms=released["pdms"],
        rel_epdms=released["epdms"],
        rel_nc=released["nc"],
        rel_dac=released["dac"],
        rel_ep=released["ep"],
        rel_ttc=released["ttc"],
        rel_c=released["c"],
        rel_parse=released["parse_failure_rate"],
        advantages=("group-normalised" if recipe["algorithm"].get("normalize_std", True)
                    else "group-centred (Dr. GRPO: no division by the group's std)"),
        beta=recipe["algorithm"]["beta"],
        loss_type=recipe["algorithm"]["loss_type"],
        generations=generations,
        prompts=recipe["training"]["batch_size"] // generations,
        grpo_lr=recipe["training"]["lr"],
        grpo_schedule=(" decaying linearly to 0" if recipe["training"].get("lr_scheduler") == "linear" else ""),
        temperature=recipe["algorithm"]["temperature"],
        grpo_steps=recipe["training"]["steps"],
        release=training["release"],
        example_question=training["example"]["question"],
        example_seed=training["example"]["seed"],
        total_minutes=minutes,
        **words,
    )


def write_card(path: Path, training: dict[str, Any], checkpoint: Path | None = None) -> Path:
    """Write ``README.md`` (validated ``huggingface_hub.ModelCard``), ``curves.png`` and the released
    model's ``trajectories.png`` into ``path``'s folder."""
    checkpoint = checkpoint or Path(__file__).resolve().parents[2] / "checkpoints" / training["entry"]
    write_model_card(
        path, checkpoint, training["entry"], lambda size_mb: render(training, size_mb),
        task="waypoint planning (PDMS-style)", dataset="synthetic bird's-eye scenes (held-out)", metric_type="pdms",
        results=[("PDMS-style score after SFT", training["sft"]["final_pdms"]),
                 ("PDMS-style score after GRPO", training["grpo"][0]["final_pdms"])],
        tags=["driving", "trajectory-planning", "grpo", "pdms", "qwen2_5_vl", "synthetic-data", "rl-model-zoo"],
    )  # fmt: skip
    plot_curves(training, path.parent / "curves.png", metric="pdms")
    shutil.copyfile(checkpoint / "eval" / "trajectories.png", path.parent / "trajectories.png")
    return path
