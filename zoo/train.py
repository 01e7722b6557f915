"""``zoo train RECIPE.yaml [--set key=value ...] [--resume] [--engine NAME] [--dry-run | --plan [--json]]``: dispatch
only.

Reads the recipe (:func:`zoo.engines.reading.load_checked`: its ``engine`` picks the recipe class), lets the engine
resolve every name it gives once (:meth:`zoo.engines.Engine.check_recipe`: data, entry, loss, rewards, environment,
provenance), writes the resolved recipe into the run directory (:mod:`zoo.runs`) and hands recipe and resolved names
to the engine (:data:`zoo.engines.ENGINES`). Everything engine-specific lives with the engine.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from zoo.engines import ENGINES
from zoo.engines.reading import load_checked
from zoo.job import LOCK_FILE, hold_run_dir
from zoo.recipe import Recipe
from zoo.runs import RESOLVED_RECIPE, disk_full, is_main_process, prepare_run_dir, refuse_links

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``zoo train``'s arguments; their destinations match :func:`run`'s parameters."""
    parser.add_argument("recipe_path", metavar="RECIPE", help="path to a recipe YAML (e.g. domains/gui/recipes/*.yaml)")
    parser.add_argument(
        "--set",
        dest="overrides",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="override a recipe field, dotted path, repeatable: --set training.lr=1e-5 --set algorithm.loss_type=dapo",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue from the newest complete checkpoint in the output directory (optimiser, scheduler, "
        "data position and RNG restored)",
    )
    parser.add_argument(
        "--resume-changes",
        action="store_true",
        help="with --resume: continue with settings that differ from the run's recipe.yaml (refused otherwise), "
        "recorded there as a change at the step the run resumes from",
    )
    parser.add_argument(
        "--engine",
        default=None,
        metavar="NAME",
        help=f"run the recipe on another engine of the same recipe class ({', '.join(ENGINES.list())}; "
        "e.g. vlm-verl writes verl's parquet/reward/config and launches verl). Default: the recipe's engine",
    )
    parser.add_argument(
        "--dry-run", action="store_true",
        help="check every name the recipe gives and write the resolved recipe (and an export engine's files) without "
        "training"
    )
    parser.add_argument("--output-dir", default=None, help="run directory (default: the recipe's training.output_dir)")
    parser.add_argument(
        "--plan",
        action="store_true",
        help="print the memory each GPU needs under each launch config in zoo/launch/ (parameters, gradients, "
        "optimiser, reference, activations) and exit; loads no weights and needs no network",
    )
    parser.add_argument("--json", dest="as_json", action="store_true", help="with --plan: print the plan as JSON")
    parser.add_argument("--nproc", type=int, default=None, metavar="N",
                        help="with --plan: size every config for N processes (GPUs) over all machines, and print the "
                        "launch line for N (default: the recipe's `processes`, else each config's own, 8)")  # fmt: skip


def run(
    recipe_path: str,
    overrides: list[str] | tuple[str, ...] = (),
    resume: bool = False,
    resume_changes: bool = False,
    engine: str | None = None,
    dry_run: bool = False,
    output_dir: str | None = None,
    plan: bool = False,
    as_json: bool = False,
    nproc: int | None = None,
) -> Path | None:
    """Run a recipe on its engine; returns the run directory (``None`` for ``plan``, which writes nothing).

    Args:
        recipe_path: recipe YAML.
        overrides: ``dotted.key=value`` strings applied on top of the file.
        resume: continue from the newest complete checkpoint.
        resume_changes: with ``resume``, accept settings that differ from the run's (recorded as a change).
        engine: an engine name (``zoo engines``); ``None`` uses the recipe's ``engine``.
        dry_run: write files only (the resolved recipe; an export engine also writes its files).
        output_dir: overrides ``training.output_dir``.
        plan: print the per-GPU memory plan (:mod:`zoo.memory_plan`) to stdout instead of training.
        as_json: with ``plan``, as JSON.
        nproc: with ``plan``, the process count to size every config for (default: each config's).
    """
    extra = [f"training.output_dir={output_dir}"] if output_dir else []
    # every name resolved once, right after reading: before anything is written or any weight loads
    recipe, checked = load_checked(recipe_path, [*overrides, *extra], engine=engine)
    if plan:
        from zoo import memory_plan

        if nproc is not None and nproc < 1:
            raise ValueError(f"--nproc {nproc}: a run has at least one process")
        found = memory_plan.plan(recipe, processes=nproc)
        again = [recipe_path, *(arg for o in overrides for arg in ("--set", o)), *(["--engine", engine] if engine else [])]
        text = memory_plan.to_json(*found) if as_json else memory_plan.render(*found, train_args=again) + _batch_note(recipe, nproc)
        sys.stdout.write(text + "\n")
        return None
    out = Path(recipe.output_dir)
    existed = out.exists()
    if resume:  # before the lock is taken or anything read: a handed run directory's links are never followed
        refuse_links(out)
    with hold_run_dir(out, main=is_main_process()):  # one job per run directory, before anything is written
        out = prepare_run_dir(recipe, resume=resume, resume_changes=resume_changes)
        try:
            done = ENGINES.get(recipe.engine).run(recipe, out, resume=resume, dry_run=dry_run, checked=checked)
            if not dry_run and is_main_process():
                write_run_readme(recipe, done)
            return done
        except Exception as err:
            _drop_stub(out, existed)
            full = disk_full(err, out)
            if full is not None:
                raise full from err
            raise


def _batch_note(recipe: Recipe, nproc: int | None) -> str:
    """The plan's last line: the batch of one round on the launch line's processes, against the authors' where the
    recipe records it (:mod:`zoo.authors_run`); nothing for an engine without rounds."""
    from zoo.engines.batches import compare

    batch = compare(recipe, nproc)
    if batch.ours is None:
        return f"\nbatch: {batch.refusal}"
    versus = ("" if batch.theirs is None else " (the authors': the same)" if batch.same else
              f" (the authors': {batch.theirs.per_step()})")  # fmt: skip
    return f"\nbatch on {batch.processes} process{'es' * (batch.processes != 1)}: {batch.ours.per_step()}{versus}"


def write_run_readme(recipe: Recipe, out: Path) -> Path:
    """The run directory's ``README.md``: what the run is and where its files are, so that a folder someone finds (or
    is handed) explains itself, and never a trainer's auto-generated card."""
    curves = sorted(p.name for p in out.glob("*_curve.png"))
    lines = [f"# {recipe.name}", "", recipe.description or "", "",
             f"A run of the zoo's `{recipe.engine}` engine, written by `zoo train`; `recipe.yaml` holds its resolved "
             "settings (and, under `changes`, any a resume changed).", "",
             "- `metrics.csv`: the logged metrics, one row per logged step"
             + (f"; {', '.join(f'`{c}`' for c in curves)} the curve" if curves else ""),
             f"- `checkpoint-N/`: complete checkpoints; continue with `zoo train {out / RESOLVED_RECIPE} --resume`",
             "- `final/`: the trained weights, written when the run ended", ""]  # fmt: skip
    path = out / "README.md"
    path.write_text("\n".join(lines))
    return path


def _drop_stub(out: Path, existed: bool) -> None:
    """Remove what :func:`prepare_run_dir` wrote when the engine failed before writing anything
    itself (a recipe refused by the engine leaves no run directory behind that looks like a run)."""
    if not is_main_process():
        return
    written = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if set(written) <= {RESOLVED_RECIPE, LOCK_FILE} and RESOLVED_RECIPE in written:
        for name in written:
            (out / name).unlink()
        if not existed:
            out.rmdir()
