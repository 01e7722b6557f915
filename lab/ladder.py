"""The release ladder of a tiny in-repo checkpoint: SFT start -> GRPO -> equal-CPU-time SFT control.

A domain's ladder module ``lab/<d>/release.py`` (``python -m lab.<d>.release``) describes its ladder
with a :class:`Ladder` — three recipes of ``domains/<d>/recipes/`` and a held-out metric — and keeps
only what is its own (the checkpoint record, the card, a demo). The stages here run each recipe
through ``zoo train`` into ``<run_dir>/<stage>/`` and write ``<run_dir>/<stage>.json``; curves are read
back from the run's ``checkpoint-N`` folders after training, so evaluation never runs inside (or slows)
a training run, and CPU minutes are the runs' own ``metrics.csv`` column (:class:`zoo.run_logging.MetricsLog`).

The control arm is the honest baseline of an RL stage: the same SFT continued from the same start
for the CPU minutes the GRPO seed used (``training.max_minutes``). If it matches GRPO, RL bought nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

logger = logging.getLogger(__name__)
Scores = TypeVar("Scores")
STAGES = ("sft", "grpo", "sft-continue", "rescore", "finalize", "all")


@dataclass(frozen=True)
class ReleaseArgs:
    """Knobs of one release run (a domain fills the defaults of its checkpoint)."""

    run_dir: Path
    """Where the stages' run directories go (``sft/``, ``grpo-s0/``, ``sft-continue-s0/``)."""
    checkpoint: Path
    """Where ``finalize`` writes the released checkpoint."""
    card: Path
    """Where ``finalize`` writes the model card."""
    eval_n: int
    """Held-out samples per curve point of the GRPO and control runs."""
    final_eval_n: int
    """Held-out samples for the before/after numbers in training.json and the card."""
    sft_eval_n: int | None = None
    """Held-out samples per SFT curve point (default half of ``eval_n``): as many as ``final_eval_n`` when the
    curve must show that the SFT start has reached its plateau, the point of starting GRPO there."""
    sft_overrides: tuple[str, ...] = ()
    """Extra overrides for the SFT recipe (``training.steps=4`` for a smoke run)."""
    grpo_overrides: tuple[str, ...] = ()
    """Extra overrides for the GRPO recipe."""
    control_overrides: tuple[str, ...] = ()
    """Extra overrides for the control recipe (its lr, to compare at GRPO's rate)."""
    control_steps_per_minute: float | None = None
    """When set, the control runs ``round(this x GRPO's CPU minutes)`` steps with its learning rate decaying
    linearly to zero over all of them, for a GRPO recipe whose own rate decays linearly (``lr_scheduler:
    linear``): both arms then end settled. ``None``: the control stops at GRPO's CPU minutes
    (``training.max_minutes``) at a constant rate. A step count, not a time budget, because a decay must know
    where it ends; the rate is calibrated on the machine of the release, and the record keeps both arms'
    CPU minutes, so how equal they came out is on file."""

    def to_record(self) -> dict[str, Any]:
        """The non-path knobs, as ``training.json`` stores them."""
        return knobs_record(self)

    @property
    def sft_curve_n(self) -> int:
        """Held-out samples per SFT curve point: ``sft_eval_n``, else half of ``eval_n``."""
        return self.sft_eval_n or self.eval_n // 2


@dataclass(frozen=True)
class Ladder:
    """One domain's ladder: its three recipes and the held-out metric the stages report."""

    sft_recipe: Path
    grpo_recipe: Path
    control_recipe: Path
    metric: str
    """Key of the metric in curve points (``hit``) and results (``final_hit``)."""
    evaluate: Callable[[Path, int], float]
    """``evaluate(model_dir, n)``: the held-out metric of the weights in ``model_dir`` on ``n`` samples."""

    @property
    def final(self) -> str:
        return f"final_{self.metric}"


def knobs_record(args: Any) -> dict[str, Any]:
    """A release driver's knobs (a dataclass) as ``training.json`` stores them: paths dropped, tuples as lists."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in vars(args).items() if not isinstance(v, Path)}


def standard_error(values: Sequence[float]) -> float:
    """Standard error of the mean over held-out samples: sample standard deviation / sqrt(n)."""
    n = len(values)
    mean = sum(values) / max(1, n)
    return float((sum((v - mean) ** 2 for v in values) / max(1, n - 1) / max(1, n)) ** 0.5)


def paired_cluster_se(arm: Sequence[Sequence[float]], base: Sequence[Sequence[float]]) -> float:
    """Standard error of ``mean(arm) - mean(base)`` over steps, both arms scored on the same episodes.

    ``arm[e]`` and ``base[e]`` are the per-step scores (e.g. 0/1 step success) of episode ``e``. The
    difference is a ratio of sums, ``sum_e d_e / sum_e n_e`` (``d_e`` the episode's summed step
    differences, ``n_e`` its steps); its standard error is the usual cluster (linearised ratio)
    estimate ``sqrt(E / (E - 1) * sum_e (d_e - delta * n_e)^2) / sum_e n_e`` over ``E`` episodes.
    Pairing removes the between-episode spread the arms share, and clustering by episode keeps the
    correlation between steps of one episode that a per-step binomial error ignores.
    """
    if len(arm) != len(base) or any(len(a) != len(b) for a, b in zip(arm, base)):
        raise ValueError("paired_cluster_se needs both arms scored on the same episodes and steps")
    episodes = len(arm)
    diffs = [sum(a) - sum(b) for a, b in zip(arm, base)]
    sizes = [len(a) for a in arm]
    total = sum(sizes)
    if episodes < 2 or total == 0:
        return float("nan")
    delta = sum(diffs) / total
    spread = sum((d - delta * n) ** 2 for d, n in zip(diffs, sizes))
    return float((episodes / (episodes - 1) * spread) ** 0.5 / total)


def mean_difference(arm: Sequence[float], base: Sequence[float]) -> dict[str, float]:
    """``arm - base`` over held-out samples both were scored on: the mean per-sample difference and its
    standard error (pairing removes the between-sample spread the two share)."""
    if len(arm) != len(base):
        raise ValueError(f"mean_difference needs both arms scored on the same samples ({len(arm)} != {len(base)})")
    diff = [a - b for a, b in zip(arm, base)]
    return {"diff": sum(diff) / max(1, len(diff)), "se": standard_error(diff)}


def format_difference(pair: dict[str, float]) -> str:
    """``+0.012 ± 0.008``: a paired difference as cards quote it (one standard error)."""
    return f"{pair['diff']:+.3f} ± {pair['se']:.3f}"


def clears(pair: dict[str, float], standard_errors: float = 2.0) -> bool:
    """Whether a paired difference is positive by more than ``standard_errors`` of its standard errors:
    the bar a card applies before it says RL beat its control."""
    return pair["diff"] > standard_errors * pair["se"]


def across_seeds(per_seed: dict[str, dict[str, float]]) -> dict[str, float] | None:
    """A recipe's effect with the training run as the unit: the mean of the seeds' paired differences
    (``{"seed0": {"diff", "se"}, ...}``, one :func:`paired_comparisons` entry) and its standard error over
    seeds. One seed's ``se`` covers only which held-out samples were drawn; the spread between seeds
    also holds what training itself varies (data order, sampling, where the last checkpoint lands),
    which is what "RL beats continued SFT" is a claim about. ``None`` under two seeds."""
    diffs = [pair["diff"] for pair in per_seed.values()]
    if len(diffs) < 2:
        return None
    return {"diff": sum(diffs) / len(diffs), "se": standard_error(diffs), "seeds": len(diffs)}


def seed_level(paired: dict[str, dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Every comparison of :func:`paired_comparisons`' ``paired`` with the training run as the unit
    (:func:`across_seeds`), for those with two seeds or more."""
    return {key: pair for key, per_seed in paired.items() if (pair := across_seeds(per_seed))}


def paired_comparisons(
    start: Scores, arms: dict[int, Scores], controls: dict[int, Scores],
    difference: Callable[[Scores, Scores], dict[str, float]], *, arm: str = "grpo",
) -> dict[str, dict[str, dict[str, float]]]:
    """The three comparisons a release ladder reports, per seed, on the same held-out samples.

    ``{"<arm>_minus_sft": {"seed0": difference(arm, start)}, "control_minus_sft": ..., "<arm>_minus_control": ...}``:
    each RL seed against the SFT start and, where that seed's control ran, the control against the start
    and RL against the control (the one that says whether RL bought anything). ``difference`` scores a
    pair (``{"diff": ..., "se": ...}``): :func:`mean_difference` for per-sample scores, an
    episode-clustered error (:func:`paired_cluster_se`) for multi-step episodes.
    """
    out: dict[str, dict[str, dict[str, float]]] = {}
    for seed, scores in arms.items():
        pairs = {f"{arm}_minus_sft": (scores, start)}
        if seed in controls:
            pairs |= {"control_minus_sft": (controls[seed], start), f"{arm}_minus_control": (scores, controls[seed])}
        for key, (a, b) in pairs.items():
            out.setdefault(key, {})[f"seed{seed}"] = difference(a, b)
    return out


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def metric_rows(run: Path) -> list[dict[str, str]]:
    """The run's ``metrics.csv`` rows."""
    with (run / "metrics.csv").open() as handle:
        return list(csv.DictReader(handle))


def minutes(run: Path) -> float:
    """CPU minutes of a finished run (the last ``metrics.csv`` row)."""
    return float(metric_rows(run)[-1]["cpu_minutes"])


def curve(ladder: Ladder, run: Path, n: int) -> list[dict[str, float]]:
    """The held-out metric of every ``checkpoint-N`` of ``run``, with the step's loss and CPU minutes."""
    from zoo.runs import checkpoint_step, is_complete

    logged = {int(r["step"]): r for r in metric_rows(run)}
    points = []
    for folder in sorted((p for p in run.glob("checkpoint-*") if is_complete(p)), key=checkpoint_step):
        step = checkpoint_step(folder)
        row = logged.get(step, {})
        point = {
            "step": step,
            ladder.metric: ladder.evaluate(folder, n),
            "minutes": float(row.get("cpu_minutes") or "nan"),
        }
        if row.get("loss"):
            point["loss"] = float(row["loss"])
        points.append(point)
        logger.info("%s step %d held-out %s %.3f", run.name, step, ladder.metric, point[ladder.metric])
    return points


def train(recipe: Path, overrides: list[str], out: Path, resume: bool = False) -> Path:
    """``zoo train RECIPE --set ... --output-dir OUT``: a fresh run (a stale one is removed), or with
    ``resume`` one continued from the newest complete checkpoint in ``out`` (``zoo train --resume``), e.g.
    an SFT run extended by a learning-rate decay (``training.steps`` and ``training.decay_steps`` raised)."""
    from zoo.train import run

    if out.exists() and not resume:
        shutil.rmtree(out)
    return run(str(recipe), overrides, output_dir=str(out), resume=resume)


def stage_sft(ladder: Ladder, args: ReleaseArgs, resume: bool = False) -> None:
    """The supervised warm start (continued from its newest checkpoint with ``resume``); its curve and
    final held-out metric go to ``sft.json``."""
    from zoo.engines.reading import load_recipe

    out = train(ladder.sft_recipe, list(args.sft_overrides), args.run_dir / "sft", resume)
    recipe = load_recipe(ladder.sft_recipe, list(args.sft_overrides))
    write_json(args.run_dir / "sft.json", {
        "curve": curve(ladder, out, args.sft_curve_n), "train_minutes": minutes(out),
        "steps": recipe.training.steps,
        "lr": recipe.training.lr, ladder.final: ladder.evaluate(out / "final", args.final_eval_n)})  # fmt: skip


def sft_start(run_dir: Path, checkpoint: Path) -> Path:
    """RL's and the control's starting point: the SFT stage of ``run_dir``, else the SFT start shipped
    in ``checkpoint/sft`` (so one RL seed can be re-run without training SFT again)."""
    start = run_dir / "sft" / "final"
    if start.is_dir():
        return start
    logger.info("no SFT stage in %s; starting from the shipped %s", run_dir, checkpoint / "sft")
    return checkpoint / "sft"


def stage_grpo(ladder: Ladder, args: ReleaseArgs, seed: int) -> None:
    """GRPO from the SFT start, seed ``seed`` (its data seed is ``100 + seed``)."""
    start = sft_start(args.run_dir, args.checkpoint)
    overrides = [f"training.seed={seed}", f"model.name={start}", f"data.kwargs.seed={100 + seed}", *args.grpo_overrides]
    out = train(ladder.grpo_recipe, overrides, args.run_dir / f"grpo-s{seed}")
    history = [{k: v for k, v in row.items() if k != "step"} | {"step": int(row["step"])} for row in metric_rows(out)]
    write_json(args.run_dir / f"grpo-s{seed}.json", {
        "seed": seed, "curve": curve(ladder, out, args.eval_n), "train_minutes": minutes(out),
        ladder.final: ladder.evaluate(out / "final", args.final_eval_n), "log_history": history})  # fmt: skip


def stage_sft_continue(ladder: Ladder, args: ReleaseArgs, seed: int) -> None:
    """Control arm: SFT continued from the same start for the CPU minutes GRPO seed ``seed`` used.

    The budget is read from the GRPO run's own ``metrics.csv``, so the control can start as soon as
    GRPO's training ends, while its checkpoints are still being evaluated."""
    grpo = args.run_dir / f"grpo-s{seed}"
    if not (grpo / "final").is_dir():
        raise FileNotFoundError(f"{grpo}/final does not exist: run the grpo stage for seed {seed} first")
    budget = minutes(grpo)
    start = sft_start(args.run_dir, args.checkpoint)
    overrides = [f"model.name={start}", f"training.seed={1000 + seed}", *control_budget(args, budget),
                 *args.control_overrides]  # fmt: skip
    out = train(ladder.control_recipe, overrides, args.run_dir / f"sft-continue-s{seed}")
    write_json(args.run_dir / f"sft-continue-s{seed}.json", {
        "seed": seed, "curve": curve(ladder, out, args.eval_n), "train_minutes": minutes(out),
        "steps": int(metric_rows(out)[-1]["step"]),
        ladder.final: ladder.evaluate(out / "final", args.final_eval_n)})  # fmt: skip


def control_budget(args: ReleaseArgs, grpo_minutes: float) -> list[str]:
    """The control recipe's overrides for GRPO's ``grpo_minutes``: a CPU-time limit, or with
    ``args.control_steps_per_minute`` a step count decayed linearly to zero (:class:`ReleaseArgs`)."""
    if args.control_steps_per_minute is None:
        return [f"training.max_minutes={grpo_minutes}"]
    steps = max(4, round(args.control_steps_per_minute * grpo_minutes))
    return [f"training.steps={steps}", f"training.decay_steps={steps}", "training.max_minutes=null",
            f"training.save_steps={steps // 4}"]  # fmt: skip


def stage_rescore(ladder: Ladder, args: ReleaseArgs, seeds: list[int], curves: bool = False) -> None:
    """Score the final weights of every stage that ran (SFT, and GRPO and control of ``seeds``) again on
    ``args.final_eval_n`` held-out samples and rewrite the final metric of their records: a larger
    held-out set after the fact, with every arm on the same samples, without training again. With
    ``curves`` every curve point is read again too (at ``sft_curve_n`` / ``eval_n``): after the metric
    itself changed, e.g. a new reference in the score, no number of the old one may stay in a record."""
    runs = ["sft", *(f"{arm}-s{seed}" for seed in seeds for arm in ("grpo", "sft-continue"))]
    for run in runs:
        path = args.run_dir / f"{run}.json"
        if not path.is_file():
            continue
        record = read_json(path)
        before = record.get(ladder.final)
        record[ladder.final] = ladder.evaluate(args.run_dir / run / "final", args.final_eval_n)
        if curves:
            record["curve"] = curve(ladder, args.run_dir / run, args.sft_curve_n if run == "sft" else args.eval_n)
        write_json(path, record)
        logger.info("%s final %s on %d held-out samples: %.3f (was %s)", run, ladder.metric, args.final_eval_n,
                    record[ladder.final], before)  # fmt: skip


def load_stages(
    args: ReleaseArgs, seeds: list[int]
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The SFT record, the GRPO records of ``seeds`` and the control records that exist."""
    sft = read_json(args.run_dir / "sft.json")
    grpo = [read_json(args.run_dir / f"grpo-s{s}.json") for s in seeds]
    control_files = [args.run_dir / f"sft-continue-s{s}.json" for s in seeds]
    return sft, grpo, [read_json(p) for p in control_files if p.is_file()]


#: What transformers writes into a saved ``tokenizer_config.json`` about how *this* machine read the
#: files (offline, from a folder), not about the tokenizer; a published checkpoint should not carry it.
LOADING_CONTEXT_KEYS = ("local_files_only", "is_local")


def drop_loading_context(folder: Path) -> None:
    """Remove :data:`LOADING_CONTEXT_KEYS` from every ``tokenizer_config.json`` under ``folder``."""
    for path in folder.rglob("tokenizer_config.json"):
        config = json.loads(path.read_text())
        kept = {key: value for key, value in config.items() if key not in LOADING_CONTEXT_KEYS}
        if kept != config:
            path.write_text(json.dumps(kept, indent=2) + "\n")


def ship_weights(final: Path, sft: Path, checkpoint: Path, sft_record: dict[str, Any]) -> None:
    """An RL run's ``final/`` becomes ``checkpoint`` and its SFT start ``checkpoint/sft`` (so ``zoo train``
    on the RL recipe reproduces that stage alone), with ``sft_record`` in ``sft/training.json``.

    Safetensors and JSON only (TRL's ``training_args.bin`` and other pickles stay behind) and no
    loading context in the tokenizer configs (:func:`drop_loading_context`)."""
    if checkpoint.exists():
        shutil.rmtree(checkpoint)
    pickles = shutil.ignore_patterns("*.bin", "*.pt", "*.pth")
    shutil.copytree(final, checkpoint, ignore=pickles)
    shutil.copytree(sft, checkpoint / "sft", ignore=pickles)
    drop_loading_context(checkpoint)
    write_json(checkpoint / "sft" / "training.json", {**sft_record, "record": "../training.json"})


def copy_weights(args: ReleaseArgs, seed: int, entry: str, sft_numbers: dict[str, Any]) -> None:
    """:func:`ship_weights` for a :class:`Ladder`: GRPO seed ``seed`` and the SFT start of ``args.run_dir``."""
    ship_weights(args.run_dir / f"grpo-s{seed}" / "final", args.run_dir / "sft" / "final", args.checkpoint,
                 {"entry": entry, "stage": "SFT warm start (GRPO's starting point)", **sft_numbers})  # fmt: skip


def train_reward_trend(history: list[dict[str, Any]], k: int = 10) -> dict[str, float] | None:
    """Whether the RL run itself learned: the mean sampled training reward (``metrics.csv``'s ``reward``)
    of its first and last ``k`` logged steps (fewer when the run logged under ``2 k``). ``None`` when
    the run logged no reward. Steps draw different prompts, so log every step for a trend that means
    something; the held-out metric is what decides, this only says whether GRPO moved its own objective."""
    rewards = [float(row["reward"]) for row in history if row.get("reward") not in (None, "")]
    if not rewards:
        return None
    k = max(1, min(k, len(rewards) // 2))
    return {"first": sum(rewards[:k]) / k, "last": sum(rewards[-k:]) / k, "k": k, "logged_steps": len(rewards)}


def summarise(
    ladder: Ladder, sft: dict[str, Any], grpo: list[dict[str, Any]], control: list[dict[str, Any]]
) -> dict[str, Any]:
    """Before/after numbers and the gain per seed (the cards quote these), with each GRPO seed's own
    training-reward trend when its record keeps the run's ``log_history``."""
    m, final = ladder.metric, ladder.final
    gains = [g[final] - sft[final] for g in grpo]
    out = {
        f"{m}_after_sft": sft[final],
        f"{m}_after_grpo": {f"seed{g['seed']}": g[final] for g in grpo},
        "grpo_gain_over_sft": {f"seed{g['seed']}": gain for g, gain in zip(grpo, gains)},
        "grpo_gain_min": min(gains),
        "grpo_gain_mean": sum(gains) / len(gains),
    }
    trends = {f"seed{g['seed']}": train_reward_trend(g.get("log_history") or []) for g in grpo}
    trends = {seed: trend for seed, trend in trends.items() if trend}
    if trends:
        out["grpo_train_reward"] = trends
    if control:
        out[f"{m}_after_sft_continue_equal_time"] = {f"seed{c['seed']}": c[final] for c in control}
    return out


def ladder_record(ladder: Ladder, args: ReleaseArgs, seeds: list[int], held_out_seed: int) -> dict[str, Any]:
    """How a ladder's release was made, as its ``training.json`` states it: the driver's knobs, the three
    recipes as resolved (overrides applied) and every seed (GRPO, its data, the control, held-out data)."""
    from zoo.engines.reading import load_recipe

    return {
        "args": args.to_record(),
        "recipe_sft": load_recipe(ladder.sft_recipe, list(args.sft_overrides)).to_dict(),
        "recipe_grpo": load_recipe(ladder.grpo_recipe, list(args.grpo_overrides)).to_dict(),
        "recipe_control": load_recipe(ladder.control_recipe, list(args.control_overrides)).to_dict(),
        "seeds": {"grpo": seeds, "grpo_data": [100 + s for s in seeds], "control": [1000 + s for s in seeds],
                  "held_out_eval": held_out_seed, "released_grpo_seed": seeds[0]},
    }  # fmt: skip


def ladder_minutes(training: dict[str, Any]) -> float:
    """CPU minutes of every stage a training record holds: SFT, each GRPO seed and each control."""
    stages = [training["sft"], *training["grpo"], *(training.get("sft_continue_equal_time") or [])]
    return sum(stage["train_minutes"] for stage in stages)


def write_model_card(
    path: Path, checkpoint: Path, entry: str, render: Callable[[float], str], *, task: str, dataset: str,
    metric_type: str, results: list[tuple[str, float]], tags: list[str],
) -> Path:
    """Write ``path`` as a validated ``huggingface_hub.ModelCard`` of a tiny image-text-to-text release.

    ``results``: ``(metric name, value)`` pairs (one per stage) for the Hub's ``eval_results``;
    ``render(size_mb)`` writes the card's body, given the size of the checkpoint's safetensors. The
    card is parsed back after writing, so malformed metadata fails the release, not the upload.
    """
    from huggingface_hub import ModelCard, ModelCardData
    from huggingface_hub.repocard_data import EvalResult

    size_mb = sum(p.stat().st_size for p in checkpoint.glob("*.safetensors")) / 1e6
    data = ModelCardData(
        license="apache-2.0", library_name="transformers", pipeline_tag="image-text-to-text", tags=tags,
        model_name=entry, eval_results=[
            EvalResult(task_type="image-text-to-text", task_name=task, dataset_type="synthetic", dataset_name=dataset,
                       metric_type=metric_type, metric_name=name, metric_value=round(value, 4))
            for name, value in results
        ],
    )  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(ModelCard(f"---\n{data.to_yaml()}\n---\n{render(size_mb)}")))
    ModelCard(path.read_text())
    return path


def plot_curves(training: dict[str, Any], path: Path, metric: str) -> None:
    """Held-out ``metric`` against training CPU-minutes: the SFT warm start (left), then GRPO against
    continued SFT from the same start, per seed (right, minutes since the end of SFT)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def xy(points: list[dict[str, float]]) -> tuple[list[float], list[float]]:
        return [p["minutes"] for p in points], [p[metric] for p in points]

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [3, 2]})
    left.plot(*xy(training["sft"]["curve"]), "k-o", ms=3)
    left.set_title("SFT warm start")
    start = training["sft"][f"final_{metric}"]
    for i, g in enumerate(training["grpo"]):
        xs, ys = xy(g["curve"])
        right.plot([0.0, *xs], [start, *ys], "-", color=f"C{i}", label=f"GRPO seed {g['seed']}")
    for i, c in enumerate(training.get("sft_continue_equal_time") or []):
        xs, ys = xy(c["curve"])
        right.plot([0.0, *xs], [start, *ys], "--", color=f"C{i}", label=f"more SFT seed {c['seed']}")
    right.set_title("from the SFT checkpoint: GRPO vs more SFT")
    for ax in (left, right):
        ax.set_xlabel("training CPU-minutes (evaluation excluded)")
        ax.grid(alpha=0.3)
    left.set_ylabel(f"held-out {metric}")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(ladder: Ladder, defaults: ReleaseArgs, finalize: Callable[[ReleaseArgs, list[int]], None],
         prog: str, description: str, argv: list[str] | None = None) -> None:  # fmt: skip
    """The ``python -m lab.<d>.release STAGE`` command line around ``ladder``."""
    parser = argparse.ArgumentParser(prog=prog, description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("stage", choices=STAGES)
    parser.add_argument("--seed", type=int, action="append", help="GRPO / control seed(s) (default 0 1 2)")
    parser.add_argument("--run-dir", type=Path, default=defaults.run_dir)
    parser.add_argument("--checkpoint", type=Path, default=defaults.checkpoint)
    parser.add_argument("--card", type=Path, default=defaults.card)
    parser.add_argument(
        "--sft-set",
        dest="sft_overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="SFT recipe override (training.steps=4 for a smoke run)",
    )
    parser.add_argument(
        "--set", dest="grpo_overrides", action="append", default=[], metavar="KEY=VALUE", help="GRPO recipe override"
    )
    parser.add_argument("--control-set", dest="control_overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="control recipe override (training.lr=3e-4: continue SFT at GRPO's rate)")  # fmt: skip
    parser.add_argument("--control-steps-per-minute", type=float, default=defaults.control_steps_per_minute,
                        help="control: this many steps per GRPO CPU minute, decayed linearly to 0, instead of a "
                             "constant rate stopped at GRPO's minutes")  # fmt: skip
    parser.add_argument("--resume", action="store_true",
                        help="sft: continue the run in RUN_DIR/sft from its newest complete checkpoint (e.g. with "
                             "--sft-set training.steps=4500 --sft-set training.decay_steps=500 to end it in a decay)")  # fmt: skip
    parser.add_argument("--curves", action="store_true",
                        help="rescore: read every curve point again too (after the metric itself changed)")
    parser.add_argument("--eval-n", type=int, default=defaults.eval_n)
    parser.add_argument("--final-eval-n", type=int, default=defaults.final_eval_n)
    parser.add_argument("--sft-eval-n", type=int, default=defaults.sft_eval_n,
                        help="held-out samples per SFT curve point (default half of --eval-n)")  # fmt: skip
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 when running stages side by side)")
    ns = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import torch

    torch.set_num_threads(ns.threads)
    args = ReleaseArgs(run_dir=ns.run_dir, checkpoint=ns.checkpoint, card=ns.card, eval_n=ns.eval_n,
                       final_eval_n=ns.final_eval_n, sft_eval_n=ns.sft_eval_n, sft_overrides=tuple(ns.sft_overrides),
                       grpo_overrides=tuple(ns.grpo_overrides),
                       control_overrides=tuple(ns.control_overrides),
                       control_steps_per_minute=ns.control_steps_per_minute)  # fmt: skip
    seeds = ns.seed or [0, 1, 2]
    if ns.stage in ("sft", "all"):
        stage_sft(ladder, args, resume=ns.resume)
    for seed in seeds if ns.stage in ("grpo", "all") else []:
        stage_grpo(ladder, args, seed)
    for seed in seeds if ns.stage in ("sft-continue", "all") else []:
        stage_sft_continue(ladder, args, seed)
    if ns.stage == "rescore":
        stage_rescore(ladder, args, seeds, curves=ns.curves)
    if ns.stage in ("finalize", "all"):
        finalize(args, seeds)
