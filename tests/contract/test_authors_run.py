"""A reproducing recipe trains the authors' batch under the launch line it prints, and no provenance row about
precision or memory contradicts the launch it names.

The batch is counted by each engine's own arithmetic (:mod:`zoo.engines.batches`), which the last tests hold to the
engines themselves: TRL's ``GRPOConfig`` for ``vlm-trl`` and a real round of the diffusion loop.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zoo import provenance
from zoo.authors_run import AuthorsBatch, AuthorsRun, BatchComparison, StepBatch, describe
from zoo.engines import ENGINES
from zoo.engines.batches import authors_run_rows, compare
from zoo.engines.reading import load_recipe
from zoo.launch import read, sized_processes
from zoo.recipe import RecipeError, read_yaml

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted(ROOT.glob("domains/*/recipes/*.yaml"))
REPRODUCING = [p for p in RECIPES if read_yaml(p).get("reproduces")]
CITED = [p for p in RECIPES if read_yaml(p).get("provenance")]


def _id(path: Path) -> str:
    return path.stem


def test_the_recipes_are_found() -> None:
    assert len(REPRODUCING) >= 8 and len(CITED) >= len(REPRODUCING)


@pytest.mark.parametrize("path", REPRODUCING, ids=_id)
def test_a_reproduction_trains_the_authors_batch_under_its_launch_line(path: Path) -> None:
    recipe = load_recipe(path)
    run = recipe.authors_run
    assert run is not None and run.batch is not None, f"{path.name}: reproduces an entry without authors_run.batch"
    assert provenance.source_kind(run.batch.source) in ("code", "paper", "page"), run.batch.source
    processes = sized_processes(recipe)
    ours = ENGINES.get(recipe.engine).step_batch(recipe, processes)
    theirs = (run.batch.prompts, run.batch.completions, run.batch.optimizer_steps)
    assert (ours.prompts, ours.completions, ours.optimizer_steps) == theirs, (
        f"{path.name} on {processes} processes trains {ours.per_step()}; the authors' run: {run.batch.per_step()}")
    batch = compare(recipe)
    assert batch.same and batch.processes == processes and batch.theirs == run.batch
    assert [(row.kind, row.label) for row in authors_run_rows(recipe)][0] == ("cited", "batch")


def test_batches_compare_on_counts_not_wording() -> None:
    """Two batches with the same counts are the same whatever the authors' source says; one count apart differs."""
    theirs = AuthorsBatch(prompts=16, completions=128, optimizer_steps=2, source="x/y@abcdef0:a.py:1 16 x 8")
    assert BatchComparison(processes=8, ours=StepBatch(prompts=16, completions=128, optimizer_steps=2), theirs=theirs).same
    for ours in (StepBatch(prompts=16, completions=128), StepBatch(prompts=32, completions=128, optimizer_steps=2)):
        assert not BatchComparison(processes=8, ours=ours, theirs=theirs).same
    assert not BatchComparison(processes=8, ours=None, refusal="no rounds", theirs=theirs).same


def test_the_plan_and_info_compare_the_same_way() -> None:
    """``zoo train --plan``'s batch line and ``zoo info``'s batch row come from one :func:`compare`: on another process
    count both say the batch differs from the authors'."""
    from zoo.train import _batch_note

    recipe = load_recipe(ROOT / "domains/gui/recipes/gui-g1-3b.yaml")
    processes = 2 * sized_processes(recipe)
    batch = compare(recipe, processes)
    row = describe(recipe.authors_run, batch, [])[0]
    assert not batch.same and (row.kind, row.label) == ("differs", "batch")
    assert f"(the authors': {batch.theirs.per_step()})" in _batch_note(recipe, processes)


def test_a_batch_that_differs_is_shown_as_a_difference() -> None:
    run = AuthorsRun(batch=None, differences=("zoo: their judge is a 72B model",))
    theirs = AuthorsBatch(prompts=16, completions=128, source="x/y@abcdef0:a.py:1")
    batch = BatchComparison(processes=2, ours=StepBatch(prompts=2, completions=16), theirs=theirs)
    row = describe(AuthorsRun(batch=theirs), batch, [])[0]
    assert row.kind == "differs" and row.text.startswith("2 prompts × 8 a round") and "16 prompts × 8" in row.text
    assert row.render() == f"  differs  batch: {row.text} (x/y@abcdef0:a.py:1)"
    refused = BatchComparison(processes=2, ours=None, refusal="8 completions do not make whole groups", theirs=theirs)
    assert describe(AuthorsRun(batch=theirs), refused, [])[0].text.startswith("8 completions do not make whole groups")
    assert [row.render() for row in describe(run, None, [])] == ["  differs  (no field): their judge is a 72B model"]


def test_a_release_names_the_snapshots_that_are_not_it() -> None:
    run = AuthorsRun(code="om-ai-lab/VLM-R1@ec920b2", released="om-ai-lab/VLM-R1@ec920b2:README.md:12 2025-02-21")
    rows = describe(run, None, ["om-ai-lab/VLM-R1@90052f4:run.sh:9 x", "om-ai-lab/VLM-R1@ec920b2:grpo_rec.py:246 y",
                                "other/repo@1234567:a.py:1"])  # fmt: skip
    assert rows[0].render() == f"  release  {run.code} ({run.released})"
    snapshots = [row for row in rows if row.kind == "snapshot"]
    assert len(snapshots) == 1 and "om-ai-lab/VLM-R1@90052f4" in snapshots[0].text and snapshots[0].differs


@pytest.mark.parametrize("bad", [{"code": "ec920b2", "released": "x"}, {"code": "a/b@ec920b2"},
                                 {"differences": ["their judge differs"]}])  # fmt: skip
def test_authors_run_refuses_what_it_cannot_read(bad: dict) -> None:
    data = read_yaml(ROOT / "domains/gui/recipes/gui-g1-3b.yaml")
    data["authors_run"] = bad
    with pytest.raises(RecipeError, match="authors_run"):
        ENGINES.get("vlm-trl").recipe_class().from_dict(data)


# --- precision and memory rows read against the launch ----------------------------------------------------------

#: The strategy words a cited row uses for each kind of launch config.
_STRATEGY = {"DEEPSPEED": re.compile(r"ZeRO-3|zero3", re.I), "FSDP": re.compile(r"\bFSDP"),
             "MULTI_GPU": re.compile(r"\bDDP\b|MULTI_GPU")}  # fmt: skip
_NO_MASTER = re.compile(r"without (the|a|an) fp32 master|no fp32 master|bf16 weights stepped", re.I)


def _texts(raw: dict) -> dict[str, str]:
    return {str(field): str(source) for field, source in (raw.get("provenance") or {}).items()}


@pytest.mark.parametrize("path", CITED, ids=_id)
def test_no_precision_or_memory_row_contradicts_the_launch(path: Path) -> None:
    raw = read_yaml(path)
    rows = _texts(raw)
    masters = (raw.get("training") or {}).get("fp32_master_weights", True) is not False
    for field, text in rows.items():
        if masters:
            assert not _NO_MASTER.search(text), f"{path.name} {field}: says no fp32 master copy, the engine keeps one"
    launch_row = rows.get("launch", "")
    if not raw.get("launch") or not launch_row or provenance.source_kind(launch_row) in ("zoo", "user"):
        return
    launch = read(raw["launch"])
    assert _STRATEGY[launch.distributed_type].search(launch_row), (
        f"{path.name}: launch {raw['launch']} is {launch.distributed_type}; its cited row says {launch_row!r}")
    offloads = launch.offload_params or launch.offload_optimizer
    assert offloads == ("offload" in launch_row.lower() and "no offload" not in launch_row.lower()), (
        f"{path.name}: launch {raw['launch']} {'offloads' if offloads else 'does not offload'}; its row: {launch_row!r}")


# --- the arithmetic held to the engines ---------------------------------------------------------------------------


def test_the_trl_count_is_trls_own() -> None:
    """TRL's ``GRPOConfig`` computes the generation batch from the same settings (one process here)."""
    from trl import GRPOConfig

    recipe = load_recipe(ROOT / "domains/gui/recipes/gui-g1-tiny-cpu.yaml",
                         ["training.batch_size=4", "training.grad_accum=3", "algorithm.num_generations=2"])  # fmt: skip
    ours = ENGINES.get("vlm-trl").step_batch(recipe, 1)
    config = GRPOConfig(output_dir="unused", per_device_train_batch_size=4, gradient_accumulation_steps=3,
                        num_generations=2, use_cpu=True, report_to=[])  # fmt: skip
    assert ours.completions == config.generation_batch_size == 12 and ours.prompts == 6


def test_the_diffusion_count_is_a_real_rounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One round of the tiny diffusion recipe takes as many optimiser steps, over as many images, as counted (its
    brightness rewards never tie, so Flow-GRPO's zero-advantage filter keeps every row)."""
    from zoo.engines.diffusion import setup, trainer

    recipe = load_recipe(ROOT / "tests/engines/diffusion_smoke.yaml",
                         ["training.steps=1", "training.grad_accum=3", "training.train_batch_size=2",
                          f"training.output_dir={tmp_path / 'run'}"])  # fmt: skip
    counted = ENGINES.get("diffusion").step_batch(recipe, 1)
    steps, images = [], []
    real_step, real_round = setup.Run.optimizer_step, trainer.flat_round
    monkeypatch.setattr(setup.Run, "optimizer_step", lambda self: steps.append(1) or real_step(self))
    monkeypatch.setattr(trainer, "flat_round", lambda run, method, prompts: (images.append(len(prompts)),
                                                                              real_round(run, method, prompts))[1])
    ENGINES.get("diffusion").run(recipe, tmp_path / "run")
    assert images == [counted.prompts] and sum(steps) == counted.optimizer_steps > 1
