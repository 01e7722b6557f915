"""The typed record of each shipped checkpoint, built from what its release measured.

A release keeps its raw numbers (per-seed curves, paired differences, per-sample scores) in the
shape its experiment needed; :func:`build_record` turns them into the library's one
:class:`~zoo.records.TrainingRecord`: the stages and comparisons by the release's own reading
(one function per release shape below, reading the release's typed row of :mod:`zoo.measurements`),
the card's summary, sections, tags and ``model-index`` from the card the release renders
(:func:`card_parts`), and the raw numbers, typed, under ``measurements``. The library renders the
card from the record; nothing here runs at ``zoo card``.

A release without a narrative card module of its own (the robot and CaRL policies) publishes with
the sections of the card it replaces (``model_cards/<name>/README.md``): edit those by hand when a
re-run changes what they say; the stages, comparisons and measurements are always the new run's.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from zoo.cards import TABLE_TITLE
from zoo.measurements import (
    CarlMeasurements,
    DrivingLadderMeasurements,
    FetchPushBCMeasurements,
    FlowGrpoMeasurements,
    GuiAgentMeasurements,
    GuiGroundingMeasurements,
    Measurements,
    ResipMeasurements,
    SvgLadderMeasurements,
    SyntheticColourMeasurements,
)
from zoo.measurements.common import PairedBySeed, SeedLevelDifference
from zoo.records import Comparison, CurvePoint, EvaluationRow, Section, Stage, TrainingRecord, typed

GUI_RECIPES = "domains/gui/recipes/"
DRIVING_RECIPES = "domains/driving/recipes/"
SVG_RECIPES = "domains/visual_code/recipes/"


def card_parts(card: str) -> dict[str, Any]:
    """A rendered card as record fields: ``summary``, ``sections``, ``tags``, ``evaluation``, ``base_model``.

    The stage table the library appends (:data:`zoo.cards.TABLE_TITLE`) is left out: it is rendered
    from the record's stages, so a card published again gives the same record."""
    from huggingface_hub import ModelCard

    parsed = ModelCard(card)
    body = parsed.text.strip()
    head, *sections = re.split(r"^## ", body, flags=re.MULTILINE)
    summary = re.sub(r"^# .*\n", "", head.strip()).strip()
    meta = parsed.data
    return {
        "summary": summary,
        "sections": tuple(Section(*_title_and_text(s)) for s in sections if not s.startswith(f"{TABLE_TITLE}\n")),
        "tags": tuple(meta.tags or ()),
        "base_model": meta.base_model if isinstance(meta.base_model, str) else None,
        "evaluation": tuple(
            EvaluationRow(task_type=r.task_type, dataset_type=r.dataset_type, dataset_name=r.dataset_name,
                          metric_type=r.metric_type, value=float(r.metric_value), metric_name=r.metric_name or "",
                          task_name=r.task_name or "", dataset_split=r.dataset_split or "")
            for r in meta.eval_results or ()
        ),
    }  # fmt: skip


def _title_and_text(section: str) -> tuple[str, str]:
    title, _, text = section.partition("\n")
    return title.strip(), text.strip()


def build_record(training: Mapping[str, Any], card: str, reproduce: str) -> TrainingRecord:
    """The record of a release: its numbers (``training``), the card it renders, the command that re-runs it.

    The numbers are read as the release's typed row first (:mod:`zoo.measurements`): a number the release wrote
    under another name or type is a :class:`~zoo.records.RecordError` here, before anything is written."""
    entry = training["entry"]
    raw = {k: v for k, v in training.items() if k not in ("entry", "card")}  # "card": a hook, code
    measurements = typed(Measurements, raw, f"{entry}: measurements")
    stages, comparisons = SHAPES[entry](measurements)
    return TrainingRecord(entry=entry, reproduce=reproduce, stages=tuple(stages), comparisons=tuple(comparisons),
                          measurements=measurements, **card_parts(card))  # fmt: skip


def _curve(points: Sequence[Any], metric: str) -> tuple[CurvePoint, ...]:
    """A curve of typed points (``metric``: the points' field) or of log rows (``metric``: a logged name)."""
    rows = [p if isinstance(p, Mapping) else dataclasses.asdict(p) for p in points]
    return tuple(CurvePoint(int(r["step"]), float(r[metric])) for r in rows if metric in r)


def _paired(paired: PairedBySeed, names: Mapping[str, str], unit: str, n: int) -> list[Comparison]:
    """The ladders' ``paired[arm_minus_base][seedK]`` differences as comparisons."""
    return [Comparison(f"{names[key]}, {seed.replace('seed', 'seed ')}", pair.diff, pair.se, unit, n)
            for key in names for seed, pair in paired[key].items()]  # fmt: skip


def _across(across: Mapping[str, SeedLevelDifference], names: Mapping[str, str], unit: str) -> list[Comparison]:
    """Seed-level differences: the standard error over seeds."""
    return [Comparison(f"{names[key]}, over {pair.seeds} seeds", pair.diff, pair.se, unit, pair.seeds)
            for key, pair in across.items() if key in names]  # fmt: skip


def _ladder(t: Any, recipes: str, names: tuple[str, str, str], metric: str, value: Callable[[Any], float], *,
            minutes: str, rl: str = "grpo", rl_steps: Callable[[Any], int] = lambda run: run.steps,
            control_keys: tuple[str, str] = ("steps", "")) -> list[Stage]:  # fmt: skip
    """The stages of an SFT -> RL -> equal-time control ladder: the start, one RL run and one control per seed.

    ``recipes`` is the prefix of the ladder's three recipe files (``...-sft.yaml``, ``names[1]``'s RL
    recipe, ``...-sft-control.yaml``); ``value`` reads a stage's final held-out metric; ``minutes`` names the
    stages' minutes field and ``control_keys`` the controls' steps and minutes fields (``""``: ``minutes``)."""
    sft, (start_name, rl_name, rl_recipe) = t.sft, names
    control_steps, control_minutes = control_keys[0], control_keys[1] or minutes
    stages = [Stage(start_name, "start", f"{recipes}-sft.yaml", None, sft.steps, getattr(sft, minutes), metric,
                    value(sft), _curve(sft.curve, metric))]  # fmt: skip
    stages += [Stage(f"{rl_name}, seed {r.seed}", "rl", rl_recipe, r.seed, rl_steps(r), getattr(r, minutes), metric,
                     value(r), _curve(r.curve, metric)) for r in getattr(t, rl)]  # fmt: skip
    stages += [Stage(f"SFT continued for {rl_name.split()[-1]}'s time, seed {c.seed}", "control",
                     f"{recipes}-sft-control.yaml", c.seed, getattr(c, control_steps), getattr(c, control_minutes),
                     metric, value(c), _curve(c.curve, metric)) for c in t.sft_continue_equal_time]  # fmt: skip
    return stages


def _gui_grounding(t: GuiGroundingMeasurements) -> tuple[list[Stage], list[Comparison]]:
    steps = t.recipe_grpo["training"]["steps"]  # the recipe as it ran: a map in its own schema
    stages = _ladder(t, GUI_RECIPES + "gui-g1-tiny", ("SFT start", "GRPO", GUI_RECIPES + "gui-g1-tiny-cpu.yaml"), "hit",
                     lambda run: run.final_hit, minutes="train_minutes", rl_steps=lambda run: steps)  # fmt: skip
    sft, n, unit = t.sft, t.held_out.n_final, "held-out hit rate"
    comparisons = [Comparison(f"GRPO - SFT start, seed {g.seed}", g.final_hit - sft.final_hit, None, unit, n)
                   for g in t.grpo]  # fmt: skip
    comparisons += [Comparison(f"GRPO - control, seed {g.seed}", g.final_hit - c.final_hit, None, unit, n)
                    for g, c in zip(t.grpo, t.sft_continue_equal_time)]  # fmt: skip
    return stages, comparisons


LADDER_NAMES = {"grpo_minus_sft": "GRPO - SFT start", "control_minus_sft": "control - SFT start",
                "grpo_minus_control": "GRPO - control"}  # fmt: skip


def _driving(t: DrivingLadderMeasurements) -> tuple[list[Stage], list[Comparison]]:
    steps = t.recipe_grpo["training"]["steps"]
    stages = _ladder(t, DRIVING_RECIPES + "driving-vla-tiny",
                     ("SFT start", "GRPO", DRIVING_RECIPES + "driving-vla-tiny-cpu.yaml"), "pdms",
                     lambda run: run.final_pdms, minutes="train_minutes", rl_steps=lambda run: steps)  # fmt: skip
    unit = "held-out PDMS-style score"
    comparisons = _paired(t.paired, LADDER_NAMES, unit, t.held_out.n_final)
    return stages, comparisons + _across(t.across_seeds, LADDER_NAMES, unit)


def _svg(t: SvgLadderMeasurements) -> tuple[list[Stage], list[Comparison]]:
    stages = _ladder(t, SVG_RECIPES + "svg-tiny", ("SFT start", "GRPO", SVG_RECIPES + "svg-tiny-grpo.yaml"), "reward",
                     lambda run: run.final.reward, minutes="total_minutes")  # fmt: skip
    return stages, _paired(t.paired, LADDER_NAMES, "held-out svg-shape-iou", t.held_out.scenes)


def _gui_agent(t: GuiAgentMeasurements) -> tuple[list[Stage], list[Comparison]]:
    metric = "step_success"
    stages = _ladder(t, GUI_RECIPES + "ui-s1-tiny", ("SFT start", "UI-S1 RL", GUI_RECIPES + "ui-s1-tiny-cpu.yaml"),
                     metric, lambda run: run.final.step_success, minutes="train_minutes", rl="rl",
                     control_keys=("matched_step", "matched_minutes"))  # fmt: skip
    names = {"rl_minus_sft": "UI-S1 RL - SFT start", "control_minus_sft": "control - SFT start",
             "rl_minus_control": "UI-S1 RL - control"}  # fmt: skip
    unit = "held-out step success"
    comparisons = _paired(t.summary.step_success_paired, names, unit, t.sft.final.n_steps)
    return stages, comparisons + _across(t.summary.step_success_across_seeds, names, unit)


def _flow_grpo(t: FlowGrpoMeasurements) -> tuple[list[Stage], list[Comparison]]:
    pre, held, run = t.pretrain, t.held_out, t.recipe["training"]
    stages = [
        Stage("pre-training (VAE and denoiser, from scratch)", "pretrain", "", pre.seed,
              pre.vae_steps + pre.denoiser_steps, pre.cpu_minutes),
        Stage("Flow-GRPO", "rl", "domains/image/recipes/flow-grpo-tiny-colour.yaml", run["seed"], run["steps"],
              t.rl_cpu_minutes, "prompt-colour", t.engine_eval_curve[-1]["eval/reward"],
              _curve(t.engine_eval_curve, "eval/reward")),
    ]  # fmt: skip
    n = len(held.prompts) * held.per_prompt
    comparisons = [Comparison(f"after - before Flow-GRPO, sampling seed {seed}", held.after[seed].reward
                              - held.before[seed].reward, None, "held-out prompt-colour reward", n)
                   for seed in held.before]  # fmt: skip
    return stages, comparisons


def _fetch_push_bc(t: FetchPushBCMeasurements) -> tuple[list[Stage], list[Comparison]]:
    return [Stage("behaviour cloning on scripted demonstrations", "base", "", t.args.demo_seed, t.args.steps, None,
                  "success_rate", t.eval.success_rate)], []  # fmt: skip


def _fetch_push_resip(t: ResipMeasurements) -> tuple[list[Stage], list[Comparison]]:
    import yaml

    ev, run = t.eval, yaml.safe_load(t.recipe)["training"]
    stages = [Stage("frozen BC base (fetch-push-bc-tiny)", "base", "", None, None, None, "success_rate",
                    ev.base.success_rate),
              Stage("ResiP residual PPO", "rl", "domains/robot/recipes/fetch-push-resip-scale0.3.yaml", run["seed"],
                    run["steps"], t.cpu_minutes_training, "success_rate", ev.trained.success_rate)]  # fmt: skip
    return stages, [Comparison("ResiP - frozen base", ev.trained.success_rate - ev.base.success_rate, None,
                               "success rate on the same seeded episodes", ev.trained.episodes)]  # fmt: skip


def _carl(t: CarlMeasurements) -> tuple[list[Stage], list[Comparison]]:
    import yaml

    ev, seed = t.evaluation, yaml.safe_load(t.recipe)["training"]["seed"]
    metric, trained, untrained = "route_completion", ev.trained.route_completion, ev.untrained.route_completion
    stages = [Stage("untrained start (same seed)", "start", "", seed, 0, 0.0, metric, untrained),
              Stage("CaRL Beta-PPO", "rl", "domains/driving/recipes/carl-highway.yaml", seed,
                    t.training.iterations, t.training.cpu_minutes, metric, trained)]  # fmt: skip
    return stages, [Comparison("trained - untrained start", trained - untrained, None,
                               "route completion % on the same seeded episodes", ev.trained.episodes)]  # fmt: skip


def _synthetic_colour(t: SyntheticColourMeasurements) -> tuple[list[Stage], list[Comparison]]:
    sft, metric, recipes = t.sft, "sampled_reward", "domains/synthetic/recipes/"
    stages = [Stage("SFT warm start (this checkpoint)", "start", recipes + "synthetic-colour-sft.yaml", sft.seed,
                    sft.steps, sft.cpu_minutes, metric, sft.sampled_reward, _curve(sft.curve, metric))]
    stages += [Stage(f"GRPO, seed {g.seed}", "rl", recipes + "synthetic-colour-grpo.yaml", g.seed, g.steps,
                     g.cpu_minutes, metric, g.sampled_reward) for g in t.grpo]  # fmt: skip
    unit = "held-out sampled synthetic-colour reward"
    return stages, _paired(t.paired, {"grpo_minus_sft": "GRPO - warm start"}, unit, t.held_out.images)


#: checkpoint -> how its release's typed numbers read as stages and comparisons.
SHAPES: dict[str, Callable[[Any], tuple[list[Stage], list[Comparison]]]] = {
    "gui-grounding-tiny": _gui_grounding,
    "driving-vla-tiny": _driving,
    "svg-scenes-tiny": _svg,
    "gui-agent-tiny": _gui_agent,
    "flow-grpo-tiny-colour": _flow_grpo,
    "fetch-push-bc-tiny": _fetch_push_bc,
    "fetch-push-resip-tiny": _fetch_push_resip,
    "carl-highway-tiny": _carl,
    "synthetic-colour-sft-tiny": _synthetic_colour,
}


def publish_with_current_card(training: Mapping[str, Any], checkpoint: Path) -> TrainingRecord:
    """:func:`publish` for a release without a card module: the narrative is the committed card's.

    The card is re-rendered in place for the shipped checkpoint (``checkpoints/<name>``), and beside
    any other target (a trial release into a scratch folder leaves ``model_cards/`` alone)."""
    from zoo.cards import CARDS_DIR
    from zoo.hub import CHECKPOINTS_DIR

    name = training["entry"]
    current = CARDS_DIR / name / "README.md"
    card_path = current if checkpoint.resolve() == (CHECKPOINTS_DIR / name).resolve() else checkpoint / "README.md"
    if card_path != current:
        card_path.write_text(current.read_text())
    return publish(training, card_path, checkpoint)


def publish(training: Mapping[str, Any], card_path: Path, checkpoint: Path) -> TrainingRecord:
    """Ship a release's record: ``checkpoint/training.json`` becomes the typed record of ``training``
    (its numbers) and of the narrative card the release wrote to ``card_path``, and ``card_path`` is
    re-rendered from entry + record by the library (:func:`zoo.cards.render_card`), as ``zoo card`` and
    ``zoo push`` will render it."""
    from zoo.cards import render_card
    from zoo.registry import info

    record = build_record(training, card_path.read_text(), training.get("release") or training["script"])
    record.write(checkpoint / "training.json")
    card_path.write_text(str(render_card(info(record.entry), record)))
    return record
