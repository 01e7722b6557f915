"""The Hugging Face model card of ``gui-agent-tiny``, rendered from its ``training.json``.

Every number is read from the record ``python -m lab.gui.agent_release finalize`` writes, so a
re-run release re-writes a card that matches its checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.ladder import clears, format_difference, train_reward_trend, write_model_card

PAIRS = (("rl_minus_sft", "RL − SFT start"), ("control_minus_sft", "control − SFT start"),
         ("rl_minus_control", "RL − control"))  # fmt: skip
ENDS = 10  # logged RL steps averaged at each end of the run to say whether its training reward moved

TEMPLATE = """
# gui-agent-tiny

A **~1M-parameter Qwen2.5-VL-architecture phone agent trained from scratch on CPU**: a multi-turn
supervised warm start, then UI-S1's semi-online RL (Lu et al., arXiv:2509.11543), next to an
equal-CPU-time control that spends RL's time on more SFT instead. It is the runnable, offline
example of the GUI-agent path of the RL model zoo ({size_mb:.1f} MB of safetensors).

**It is not a usable phone agent.** It only knows synthetic 2-4 step episodes on 112×112 screens:
tap a labelled button, type the word the goal names, press Back, finish. For real devices see
`ui-s1-7b` (mPLUG/UI-S1-7B).

## Use

```python
import zoo

pipe = zoo.load("gui-agent-tiny")                  # checkpoints/gui-agent-tiny, no network
# examples/phone-step.png: the first screen of held-out episode 0 (seed 4242); the goal is the turn's text
pred = pipe("examples/phone-step.png", "type taxi, then type blue, then go back, then finish")
print(pred.text, pred.action)                      # one turn, no history; the expert types "taxi"
```

`zoo eval gui-agent-tiny --data synthetic-episodes --limit {n_final}` walks whole episodes (the
numbers below). Each turn's user text is the goal (e.g. `tap OK, then type milk, then finish`) followed by the
screenshot; the last two screenshots and the agent's earlier answers stay in the dialogue. {answer}

## Results

AndroidControl's step-wise protocol on {n_final} held-out episodes (seed {eval_seed}, never used in
training): greedy; every step is asked on its recorded screen after the expert's history; UI-S1's
matcher decides. **Step success** = action type and arguments right (click inside the element box
enlarged 1.2×); **episode success** = every step of the episode right.

| model | CPU-min | step success | episode success |
|---|---|---|---|
| SFT start ({sft_steps} steps) | {sft_minutes:.1f} | {sft_step:.3f} | {sft_episode:.3f} |
{rows}

{verdict}

Per action type, step success (SFT start → released RL model): {by_type}.{localisation}
{sft_curve}
{diagnostics}
Curves (held-out step success per checkpoint on the first {n_curve} of those episodes: a smaller, noisier set
than the table's, where the arms' end points differ more than on all {n_final}) are in `training.json` and `curves.png`;
the released model's own evaluation (the same {n_final} episodes, via `zoo eval`) is in `eval/`: `metrics.json`,
`predictions.jsonl` and `predictions.png`, a strip of held-out screens with each step's verdict, the predicted
click (magenta) and the target box (green).

## Training

* **Architecture**: Qwen2.5-VL, text 128 hidden × 4 layers, vision 64 × 2 {vision}, {vocab}-token
  byte-level BPE trained on the task's text (`zoo.tiny`){added_tokens}; {rope}.
* **SFT** (`domains/gui/recipes/ui-s1-tiny-sft.yaml`): every step taught in its expert-history
  dialogue, fresh synthetic episodes each batch, lr {sft_lr}, batch 16{sft_schedule}.
* **UI-S1 RL** (`domains/gui/recipes/ui-s1-tiny-cpu.yaml`, the `vlm-semi-online` engine):
  the authors' patch module (threshold 2), step reward, episode + step advantages (γ 0.5,
  mean-std), token-mean clipped loss (ε 0.2, dual clip 3). CPU-scale changes: {rl_episodes} episodes ×
  {rl_n} copies per step, lr {rl_lr}, β 0, {rl_steps} steps, {rl_filter}.
* **Control** (`ui-s1-tiny-sft-control.yaml`): the same SFT from the same start at lr {control_lr}, stopped at
  RL's CPU time.
* **Reproduce**: `python -m lab.gui.agent_release all` (seeds in `training.json`).

## Limitations and out-of-scope use

* Synthetic screens only; no AndroidControl or AndroidWorld number is claimed.
* Not for controlling real devices or user interfaces.

## Citation

Lu et al., *UI-S1: Advancing GUI Automation via Semi-online Reinforcement Learning*, arXiv:2509.11543
(code: github.com/X-PLUG/MobileAgent, folder `UI-S1/`).
"""


def _rows(training: dict[str, Any]) -> str:
    rows = [f"| + UI-S1 RL, seed {r['seed']}{' (released)' if i == 0 else ''} | +{r['train_minutes']:.1f} "
            f"| **{r['final']['step_success']:.3f}** | {r['final']['episode_success']:.3f} |"
            for i, r in enumerate(training["rl"])]  # fmt: skip
    rows += [f"| + SFT continued for RL's time, seed {c['seed']} | +{c['matched_minutes']:.1f} "
             f"| {c['final']['step_success']:.3f} | {c['final']['episode_success']:.3f} |"
             for c in training["sft_continue_equal_time"]]  # fmt: skip
    return "\n".join(rows)


def _mean(runs: list[dict[str, Any]], key: str) -> float:
    return sum(r["final"][key] for r in runs) / len(runs)


def _verdict(training: dict[str, Any]) -> str:
    start, rl, control = training["sft"]["final"], training["rl"], training["sft_continue_equal_time"]
    text = (f"UI-S1 RL moves mean step success from {start['step_success']:.3f} to {_mean(rl, 'step_success'):.3f} "
            f"({_mean(rl, 'step_success') - start['step_success']:+.3f}) and episode success from "
            f"{start['episode_success']:.3f} to {_mean(rl, 'episode_success'):.3f}.")  # fmt: skip
    paired = training.get("summary", {}).get("step_success_paired")
    if paired:
        text += (" Paired differences in step success (same episodes; ± one standard error clustered by episode): "
                 + "; ".join(f"{label} {_paired(paired[key])}" for key, label in PAIRS if key in paired) + ".")  # fmt: skip
        text += _over_seeds(paired, training["summary"].get("step_success_across_seeds") or {})
        text += _confirmation(training)
    if not control:
        return text + " The continued-SFT control was not run."
    gap = _mean(rl, "step_success") - _mean(control, "step_success")
    seeds = (f"over {len(rl)} seeds" if len(rl) == len(control)
             else f"(RL: mean of {len(rl)} seeds; control: {len(control)} seed{'s' if len(control) > 1 else ''})")
    text += (f" Continued SFT for the same CPU time reaches {_mean(control, 'step_success'):.3f} step success "
             f"and {_mean(control, 'episode_success'):.3f} episode success: RL {'leads' if gap > 0 else 'trails'} "
             f"it by {abs(gap):.3f} step success {seeds}.")  # fmt: skip
    if "step_success_se" in start:
        text += (f" One binomial standard error is ±{start['step_success_se']:.3f} on {start['n_steps']} steps "
                 f"(a lower bound: steps of one episode are not independent) and ±{start['episode_success_se']:.3f} "
                 f"on {start['n_episodes']} episodes.")  # fmt: skip
        if abs(gap) < start["step_success_se"] and not paired:
            text += (" **The gap is inside one standard error: at this budget UI-S1 RL does not beat more SFT**, "
                     "and this checkpoint ships as that measured result.")  # fmt: skip
    return text


def _confirmation(training: dict[str, Any]) -> str:
    """The arms on the second, larger held-out set (``agent_release confirm``), where recorded."""
    c = training.get("confirmation")
    if not c:
        return ""

    def arm(runs: dict[str, dict[str, Any]]) -> str:
        return ", ".join(f"{r['step_success']:.4f} ({r['wrong_steps']} wrong, {seed})" for seed, r in runs.items())

    versus = c["step_success_paired"].get("rl_minus_control", {})
    return (f" On a second held-out set ({c['episodes']} episodes of seed {c['episode_seed']}, {c['n_steps']} steps; "
            f"`python -m lab.gui.agent_release confirm`): SFT start {c['sft_start']['step_success']:.4f} "
            f"({c['sft_start']['wrong_steps']} steps wrong), UI-S1 RL {arm(c['rl'])}, continued SFT {arm(c['control'])}; "
            "RL − control " + ", ".join(f"{v['diff']:+.4f} ± {v['se']:.4f} ({seed})" for seed, v in versus.items()) + ".")  # fmt: skip


def _over_seeds(paired: dict[str, Any], pooled: dict[str, dict[str, float]]) -> str:
    """RL against its control seed by seed and with the training run as the unit, and whether the edge is shown:
    more than two standard errors on every seed and over seeds (:func:`lab.ladder.clears`)."""
    versus = list(paired.get("rl_minus_control", {}).values())
    if not versus:
        return ""
    clear = sum(clears(pair) for pair in versus)
    text = f" RL beats its control by more than two standard errors on {clear} of {len(versus)} seeds."
    if pooled:
        text += (" With the training run as the unit (the mean of the seeds' differences ± its standard error over "
                 "seeds, which also holds training's run-to-run spread): "
                 + "; ".join(f"{label} {format_difference(pooled[key])}" for key, label in PAIRS if key in pooled) + ".")  # fmt: skip
    over_seeds = pooled.get("rl_minus_control")
    shown = clear == len(versus) and (over_seeds is None or clears(over_seeds))
    return text + (" **UI-S1 RL's edge over more SFT is shown.**" if shown else " On this budget RL's edge over more SFT is not shown.")


def _paired(per_seed: dict[str, dict[str, float]]) -> str:
    return ", ".join(f"{format_difference(v)} ({seed})" for seed, v in per_seed.items())


def _filter(recipe: dict[str, Any]) -> str:
    threshold = recipe["multi_turn"].get("filter_std_threshold")
    if threshold is None:
        return "the authors' future-reward filter off (see the recipe for why)"
    return f"the authors' future-reward filter (std > {threshold}) with the batch topped up by further rollouts"


def _schedule(training: dict[str, Any]) -> str:
    """The SFT learning-rate schedule in words (older records have no ``decay_steps``: constant)."""
    decay = training.get("decay_steps") or 0
    if not decay:
        return f", {training['warmup_steps']}-step warm-up then constant"
    return (f", {training['warmup_steps']}-step warm-up, constant, then linear decay to 0 over the last {decay} of "
            f"{training['steps']} steps (warm-up-stable-decay)")  # fmt: skip


def _sft_curve(sft: dict[str, Any], n: int) -> str:
    """Where the SFT start stands on its own curve: the control is only fair if SFT has flattened."""
    points = sft.get("curve") or []
    if not points:
        return ""
    steps = "; ".join(f"step {p['step']}: {p['step_success']:.3f} (" + ", ".join(
        f"{k} {v:.2f}" for k, v in sorted(p["by_action_type"].items())) + ")" for p in points)  # fmt: skip
    return f"The SFT start's own held-out curve (step success, by action type; {n} episodes): {steps}."


def _diagnostics(rl: list[dict[str, Any]]) -> str:
    """What the RL runs' own logs say: did the training reward move, and how many groups carried no signal."""
    parts = []
    for run in rl:
        rows = run.get("log_history") or []
        trend = train_reward_trend(rows, ENDS)
        if trend is None or "frac_equal_groups" not in rows[0]:
            continue
        k = trend["k"]

        def mean(key: str, part: list[dict[str, float]]) -> float:
            values = [r[key] for r in part if key in r and r[key] == r[key]]
            return sum(values) / max(1, len(values))

        parts.append(f"seed {run['seed']}: training reward {trend['first']:.3f} over the first {k} steps, "
                     f"{trend['last']:.3f} over the last {k} (step success on its type steps "
                     f"{mean('step_success_type', rows[:k]):.2f} → {mean('step_success_type', rows[-k:]):.2f}, on its "
                     f"clicks {mean('step_success_click', rows[:k]):.2f} → {mean('step_success_click', rows[-k:]):.2f}); "
                     f"{mean('frac_equal_groups', rows):.0%} of (episode, step) groups scored all copies alike")  # fmt: skip
    if not parts:
        return ""
    return ("RL's own logs (`metrics.csv`, sampled at temperature 1): " + "; ".join(parts) + ". A group scored "
            "alike has zero step advantage; Back and finish steps, always right, are such groups.")  # fmt: skip


def _answer(recipe_sft: dict[str, Any]) -> str:
    """The answer format in words, from the SFT recipe that taught it."""
    if recipe_sft["data"]["answer_format"] != "ui-s1-location-tokens":
        return ("The answer is UI-S1's: `<think>...</think>` then `<action>{\"action\": \"click\", \"coordinate\": "
                "[x, y]}</action>`, coordinates in the 112-px frame the model sees.")  # fmt: skip
    from domains.gui.location_tokens import NUM_BINS, PIXEL_BIN

    return ("The answer is UI-S1's, `<think>...</think>` then `<action>{\"action\": \"click\", \"coordinate\": "
            "[<p14>, <p7>]}</action>`, with each click coordinate written as one location token of the model's "
            f"vocabulary: `<pK>` is the {PIXEL_BIN}-pixel bin K of the 112-px frame the model sees, "
            f"`<p0>`..`<p{NUM_BINS - 1}>` (the zoo's own codebook, `domains/gui/location_tokens.py`). The entry's parser "
            f"and UI-S1's matcher read it back as UI-S1's JSON, each token as its bin's centre (`[58, 30]`).")  # fmt: skip


def _added_tokens(recipe_sft: dict[str, Any]) -> str:
    target = recipe_sft["model"].get("added_tokens")
    if not target:
        return ""
    from zoo.recipe import import_named

    return f", plus the {len(import_named('model.added_tokens', target))} location tokens as whole tokens"


def _localisation(training: dict[str, Any]) -> str:
    """Whether the clicks find their button or guess (``domains.gui.agent_eval.click_localisation``), where recorded."""
    def words(located: dict[str, Any]) -> str:
        corr = ", ".join(f"{axis} {v:.2f}" if v is not None else f"{axis} undefined" for axis, v in located["correlation"].items())
        return (f"median {located['median_distance']:.0f} px from the target ({located['median_distance_to_next_target']:.0f} px "
                f"from the next click step's target), correlation with the target {corr}")  # fmt: skip

    start, released = training["sft"]["final"].get("click_localisation"), training["rl"][0]["final"].get("click_localisation")
    if not (start and released):
        return ""
    return (f" Where the clicks land (original pixels; a click that ignores its screen is as far from its own target as "
            f"from another's, at correlation 0): SFT start {words(start)}; released RL model {words(released)}.")  # fmt: skip


def _rope(recipe_sft: dict[str, Any]) -> str:
    """How the multimodal RoPE places image rows and columns (``zoo.tiny.build_config``'s ``mrope_section``)."""
    contiguous = ("Qwen2.5-VL's three contiguous chunks, which at this head size leave image columns under 2e-4 rad "
                  "of rotation per token (`zoo.tiny.build_config`)")  # fmt: skip
    section = recipe_sft["model"]["tiny"].get("mrope_section")
    if section is None:
        return f"multimodal-RoPE sections: {contiguous}"
    chunks = f"[{section[0]}] × {len(section)}" if len(set(section)) == 1 else str(list(section))
    return f"multimodal-RoPE sections {chunks} (time, row and column in turn, as Qwen3-VL interleaves them) instead of {contiguous}"


def _vision(recipe_sft: dict[str, Any]) -> str:
    if recipe_sft["training"].get("freeze_vision"):
        return "frozen at random initialisation"
    return "trained with the rest (SFT, RL and control alike)"


def render(training: dict[str, Any], size_mb: float) -> str:
    """The card's markdown body for a training record."""
    sft, rl_recipe = training["sft"], training["recipe_rl"]
    released = training["rl"][0]["final"]["by_action_type"]
    by_type = ", ".join(f"{k} {sft['final']['by_action_type'][k]:.2f} → {v:.2f}" for k, v in sorted(released.items()))
    n_curve_sft = training["held_out"].get("n_curve_sft", training["held_out"]["n_curve"])
    return TEMPLATE.format(
        size_mb=size_mb, n_final=training["held_out"]["n_final"], n_curve=training["held_out"]["n_curve"],
        eval_seed=training["seeds"]["held_out_eval"], sft_steps=sft["steps"], sft_minutes=sft["train_minutes"],
        sft_step=sft["final"]["step_success"], sft_episode=sft["final"]["episode_success"], rows=_rows(training),
        verdict=_verdict(training), by_type=by_type, localisation=_localisation(training), vision=_vision(training["recipe_sft"]), sft_curve=_sft_curve(sft, n_curve_sft),
        answer=_answer(training["recipe_sft"]), vocab=training["recipe_sft"]["model"]["tiny"]["vocab_size"],
        added_tokens=_added_tokens(training["recipe_sft"]), rope=_rope(training["recipe_sft"]),
        diagnostics=_diagnostics(training["rl"]), sft_lr=training["recipe_sft"]["training"]["lr"],
        sft_schedule=_schedule(training["recipe_sft"]["training"]), control_lr=training["recipe_control"]["training"]["lr"],
        rl_episodes=rl_recipe["multi_turn"]["episodes_per_step"], rl_n=rl_recipe["algorithm"]["num_generations"],
        rl_lr=rl_recipe["training"]["lr"], rl_steps=rl_recipe["training"]["steps"], rl_filter=_filter(rl_recipe),
    )  # fmt: skip


def plot_curves(training: dict[str, Any], path: Path) -> None:
    """Held-out step success against CPU-minutes since the SFT start: RL (solid) vs more SFT (dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # the curves' own episodes: the SFT start scored on them (older records: the SFT curve's last point, on as many)
    sft, sft_curve = training["sft"], training["sft"].get("curve") or []
    start = (sft["on_curve_episodes"] if "on_curve_episodes" in sft else sft_curve[-1] if sft_curve
             else sft["final"])["step_success"]  # fmt: skip
    fig, ax = plt.subplots(figsize=(6, 4))
    for style, name, label in (("-o", "rl", "UI-S1 RL"), ("--s", "sft_continue_equal_time", "more SFT")):
        for i, run in enumerate(training[name]):
            xs = [0.0, *(p["minutes"] for p in run["curve"])]
            ys = [start, *(p["step_success"] for p in run["curve"])]
            ax.plot(xs, ys, style, color=f"C{i}", ms=3, label=f"{label}, seed {run['seed']}")
    ax.set_xlabel("training CPU-minutes after the SFT start")
    ax.set_ylabel(f"held-out step success ({training['held_out']['n_curve']} episodes)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_card(path: Path, training: dict[str, Any], checkpoint: Path | None = None) -> Path:
    """Write ``README.md`` (validated ``huggingface_hub.ModelCard``) and ``curves.png`` into ``path``'s folder."""
    checkpoint = checkpoint or Path(__file__).resolve().parents[2] / "checkpoints" / training["entry"]
    write_model_card(
        path, checkpoint, training["entry"], lambda size_mb: render(training, size_mb),
        task="GUI agent (step-wise)", dataset="synthetic phone episodes (held-out)", metric_type="accuracy",
        results=[("step success after SFT", training["sft"]["final"]["step_success"]),
                 ("step success after UI-S1 RL", training["rl"][0]["final"]["step_success"])],
        tags=["gui-agent", "ui-s1", "semi-online-rl", "qwen2_5_vl", "synthetic-data", "cpu-trained", "rl-model-zoo"],
    )  # fmt: skip
    plot_curves(training, path.parent / "curves.png")
    return path
