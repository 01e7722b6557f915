"""Every recipe that claims the authors' run cites every setting, and no text claims it for one that does not.

The mechanism is :mod:`zoo.provenance`: ``reproduces: <entry>`` plus a ``provenance:`` row per field the
file sets (the authors' code at a commit, the paper, a page, or ``zoo: <why the zoo differs>``). Here it
runs over every shipped recipe, and over every line of the READMEs, model cards and recipe files that
says "the authors' settings" (or run, or recipe): such a line must name a recipe (or an entry) whose
provenance is complete. The mechanism's own behaviour (uncited and stale rows, malformed sources,
command-line overrides becoming ``user:`` rows, ``zoo info`` showing differences first) is tested at the end.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from zoo import provenance
from zoo.cli import main
from zoo.domains import discover
from zoo.engines.reading import load_recipe
from zoo.recipe import RecipeError, read_yaml
from zoo.registry import list_models

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted(path for domain in discover() for path in domain.recipe_files())
TEXTS = sorted([ROOT / "README.md", *ROOT.glob("domains/*/README.md"), *ROOT.glob("model_cards/*/README.md"),
                *RECIPES])  # fmt: skip
_RECIPE_PATH = re.compile(r"[\w./-]*?([\w-]*\{[\w,-]+\}[\w-]*|[\w-]+)\.yaml")


def _named_recipes(line: str) -> list[str]:
    """Recipe file stems a line names (``flow-grpo-sd35m-{geneval,ocr}.yaml`` names two)."""
    stems = []
    for match in _RECIPE_PATH.finditer(line):
        stem = match.group(1)
        brace = re.search(r"\{([\w,-]+)\}", stem)
        if brace:
            stems += [stem.replace(brace.group(0), part) for part in brace.group(1).split(",")]
        else:
            stems.append(stem)
    return stems


BY_STEM = {path.stem: path for path in RECIPES}
ENTRIES = set(list_models())


def test_the_recipes_are_found() -> None:
    assert len(RECIPES) > 20 and "gui-g1-3b" in BY_STEM


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_a_recipe_cites_every_setting_it_claims_from_the_authors(path: Path) -> None:
    data = read_yaml(path)
    resolved = load_recipe(path).to_dict()  # the recipe a run writes: every field, defaults included
    assert provenance.check(resolved) == [], path
    rows = provenance.rows(data.get("provenance") or {})
    assert not [row.field for row in rows if row.kind == "user"], "user: rows come from --set only"
    if data.get("reproduces"):
        assert data["reproduces"] in ENTRIES, f"{path}: reproduces {data['reproduces']!r}, not a registered entry"
    text = path.read_text()
    if provenance.claims_authors(text):
        assert data.get("reproduces"), f"{path} says it is the authors' run but has no `reproduces` (and provenance)"


def _claims() -> list[tuple[Path, int, str]]:
    found = []
    for path in TEXTS:
        if path.suffix == ".yaml":
            continue  # recipe files are checked whole, above
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if provenance.claims_authors(line):
                found.append((path, number, line))
    return found


@pytest.mark.parametrize("path, number, line", _claims(), ids=lambda v: str(v)[-40:] if isinstance(v, Path) else None)
def test_a_text_claims_the_authors_run_only_for_a_complete_recipe(path: Path, number: int, line: str) -> None:
    where = f"{path.relative_to(ROOT)}:{number}"
    stems = [s for s in _named_recipes(line) if s in BY_STEM]
    named_entries = [e for e in re.findall(r"`([\w.-]+)`", line) if e in ENTRIES]
    reproducing = [p for e in named_entries for p in provenance.reproducing_recipes(e)]
    assert stems or reproducing, f"{where} claims the authors' run without naming a recipe that reproduces it: {line}"
    for stem in stems:
        data = read_yaml(BY_STEM[stem])
        assert data.get("reproduces"), f"{where} calls {stem}.yaml the authors' run, but it reproduces nothing"


# --- the mechanism --------------------------------------------------------------------------------------------


def _recipe(**extra: object) -> dict:
    return {"name": "t", "engine": "vlm-trl", "data": {"name": "synthetic-colour", "kwargs": {"n": 4}},
            "rewards": ["exact-match"], "model": {"name": "tiny:qwen2_5_vl"}, "training": {"lr": 1e-5}, **extra}  # fmt: skip


#: Rows that cover every setting of :func:`_recipe` resolved, defaults included: the tests below change one of them.
COMPLETE = {"launch": {"unset": "one process"}, "processes": {"unset": "one process"}, "data": "zoo: a test set",
            "rewards": "arXiv:2505.15810 §3", "model": "zoo: a tiny model for CPU", "algorithm": "zoo: the defaults",
            "rollout": "zoo: the defaults", "training": "zoo: the defaults",
            "training.lr": {"authors": "1e-5", "source": "arXiv:2505.15810 §4.1"}}  # fmt: skip


def _reproducing(**rows: object) -> dict:
    return _recipe(reproduces="gui-g1-3b", provenance={**COMPLETE, **rows})


def load_recipe_from(data: dict) -> object:
    """Read ``data`` as a ``vlm-trl`` recipe and check its provenance, as ``zoo train``'s check step does."""
    from zoo.engines.checks import check_provenance
    from zoo.engines.vlm.recipe import VLMRecipe

    recipe = VLMRecipe.from_dict(data)
    check_provenance(recipe)
    return recipe


def test_uncited_stale_and_malformed_rows_are_named() -> None:
    data = _recipe(reproduces="gui-g1-3b", provenance={
        "data": "Yuqi-Zhou/GUI-G1@e581fe98:src/open-r1-multimodal/run_scripts/run.sh:12",
        "training.lr": {"authors": "1e-5", "source": "arXiv:2505.15810 §4.1"},
        "algorithm.beta": "zoo: nothing sets it",
        "model.name": "somewhere in the paper",
    })  # fmt: skip
    problems = provenance.check(data)
    assert any("algorithm.beta: the recipe has no such field" in p for p in problems), problems
    assert any("model.name: 'somewhere in the paper' is not a source" in p for p in problems), problems
    assert any("no provenance row" in p and p.endswith(": rewards, model.name") for p in problems), problems
    with pytest.raises(RecipeError, match="no provenance row"):
        load_recipe_from(data)


def test_a_complete_recipe_loads_and_its_resolved_settings_are_all_covered() -> None:
    recipe = load_recipe_from(_reproducing())
    assert provenance.check(recipe.to_dict()) == []


def test_a_default_the_file_leaves_needs_a_row_but_a_setting_that_cannot_change_the_run_does_not() -> None:
    """review-reliability 11.1: a reproducing recipe that leaves a field to the engine default differed silently."""
    rows = {key: row for key, row in COMPLETE.items() if key not in ("algorithm", "training")}
    resolved = load_recipe_from(_recipe()).to_dict() | {"reproduces": "gui-g1-3b", "provenance": rows}
    problem = next(p for p in provenance.check(resolved) if "no provenance row" in p)
    uncovered = problem.rsplit("): ", 1)[1].split(", ")
    assert {"algorithm.normalize_std", "algorithm.clip_high", "training.steps"} <= set(uncovered), uncovered
    assert "training.output_dir" in provenance.RUN_NEUTRAL and not set(uncovered) & provenance.RUN_NEUTRAL


@pytest.mark.parametrize("authors, ours, same", [
    ("1e-6", 1.0e-6, True), (1e-6, 1.0e-6, True), (0.2, 0.2000001, False), (4, "4", True), (True, 1, False),
    (False, False, True), ("bfloat16", "bfloat16", True), ("bf16", "bfloat16", False), (None, None, True),
    ([1, "a"], [1.0, "a"], True), ([1], [1, 2], False), ({"a": 1}, {"a": 1.0}, True), ({"a": 1}, {"b": 1}, False),
])  # fmt: skip
def test_the_authors_value_compares_numbers_numerically_and_the_rest_exactly(authors, ours, same) -> None:
    assert provenance.same_value(authors, ours) is same


def test_a_cited_value_that_is_not_the_recipes_is_refused_unless_the_row_is_a_difference() -> None:
    wrong = {"authors": "3e-5", "source": "arXiv:2505.15810 §4.1 lr 3e-5"}
    with pytest.raises(RecipeError, match=r"training.lr: the authors' value is '3e-5' but the recipe's is 1e-05"):
        load_recipe_from(_reproducing(**{"training.lr": wrong}))
    marked = {"authors": "3e-5", "source": "zoo: a smaller rate for a tiny model"}
    recipe = load_recipe_from(_reproducing(**{"training.lr": marked}))
    row = next(row for row in provenance.rows(recipe.provenance) if row.field == "training.lr")
    assert row.differs and row.authors == "3e-5" and row.why == "a smaller rate for a tiny model"


def test_a_cited_number_or_flag_must_record_the_authors_value() -> None:
    with pytest.raises(RecipeError, match="training.lr: a cited number or flag records the authors' value"):
        load_recipe_from(_reproducing(**{"training.lr": "arXiv:2505.15810 §4.1"}))
    hidden = {"training": "arXiv:2505.15810 §4.1"}  # a parent row without a value would hide the numbers under it
    with pytest.raises(RecipeError, match=r"provenance.training: it covers numbers or flags .*training.steps"):
        load_recipe_from(_reproducing(**hidden))


def test_rows_of_the_three_forms_are_read_and_anything_else_is_named() -> None:
    found = provenance.rows({"a": "zoo: ours", "b": {"unset": "no such setting"},
                             "c": {"authors": 1, "source": "arXiv:2505.15810 §4"},
                             "d": "user: --set d=1"})  # fmt: skip
    assert [(r.field, r.kind) for r in found] == [("a", "zoo"), ("d", "user"), ("b", "unset"), ("c", "paper")]
    assert [r.field for r in found if r.cited] == ["c"] and found[2].why == "no such setting"
    for bad in ({"authors": 1}, {"unset": ""}, {"source": "arXiv:2505.15810 §4", "authors": 1, "extra": 2}, 3):
        problems = provenance.check(_recipe(provenance={"training.lr": bad}))
        assert problems and "is not a provenance row" in problems[0], (bad, problems)


def test_sources_of_every_form_are_read() -> None:
    kinds = [provenance.source_kind(s) for s in (
        "X-PLUG/MobileAgent@12d958e:UI-S1/scripts/train_example.sh:40",
        "yifan123/flow_grpo@ac4c86e:config/grpo.py:120-140 geneval_sd3",
        "Yuqi-Zhou/GUI-G1@e581fe98:src/open-r1-multimodal/run_scripts/run.sh:9,21-23 4 x 8 x 2",
        "arXiv:2509.11543v2 §4.2, Table 5",
        "https://huggingface.co/mPLUG/UI-S1-7B/commit/8f38d44 front matter: apache-2.0",
        "zoo: the authors run vLLM; hf works everywhere",
    )]  # fmt: skip
    assert kinds == ["code", "code", "code", "paper", "page", "zoo"]


def test_a_command_line_change_becomes_a_user_row_of_the_run(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(json.dumps(_reproducing()))
    recipe = load_recipe(path, ["training.lr=3e-5", "data.kwargs.n=8"])
    assert recipe.provenance["training.lr"] == "user: --set training.lr=3e-5"
    assert recipe.provenance["data.kwargs.n"] == "user: --set data.kwargs.n=8"
    assert recipe.provenance["data"] == "zoo: a test set"  # the rest of data keeps its row
    kinds = [row.kind for row in provenance.rows(recipe.provenance)]
    assert kinds == sorted(kinds, key=["zoo", "user", "unset", "paper"].index)  # differences first: zoo, then user


def test_zoo_info_lists_a_recipes_differences_before_its_sources(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    path = tmp_path / "r.yaml"
    path.write_text(json.dumps(_reproducing()))
    assert main(["info", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "reproduces gui-g1-3b: 2 settings cited to the authors, 5 differ, 2 not set by the authors" in lines[1]
    assert lines[2].strip() == "differs  data: a test set"
    assert [line.split()[0] for line in lines[2:]] == ["differs"] * 5 + ["unset"] * 2 + ["cited"] * 2
    assert "cited    training.lr: authors: '1e-5'; arXiv:2505.15810 §4.1" in lines[-1]


@pytest.mark.parametrize("stem, field", [
    ("vlm-r1-rec", "algorithm.normalize_std"), ("vision-r1", "algorithm.normalize_std"),
    ("flow-grpo-sd35m-geneval", "model.dtype"), ("gui-g1-3b", "data.kwargs.image_root"),
    ("fetch-push-dppo", "training.lr"),
])  # fmt: skip
def test_the_reviews_hidden_differences_are_differences(stem: str, field: str) -> None:
    """review-image-code-perception §2 and review-driving-robot-gui-medical §2: these rows cited the authors while
    the recipe differs from them (an epsilon, a precision, a placeholder read as a path, a warm-up)."""
    row = next(row for row in provenance.rows(read_yaml(BY_STEM[stem])["provenance"]) if row.field == field)
    assert row.differs, row


def test_cards_count_cited_rows_only() -> None:
    from zoo.cards import _reproduction_text
    from zoo.registry import info

    text = _reproduction_text(info("gui-g1-3b"))
    rows = provenance.rows(read_yaml(BY_STEM["gui-g1-3b"])["provenance"])
    assert f"({sum(row.cited for row in rows)} settings cited to the authors' code" in text
    assert all(f"`{row.field}`" in text for row in rows if row.differs)


REPRODUCING = [path for path in RECIPES if read_yaml(path).get("reproduces")]


@pytest.mark.parametrize("path", REPRODUCING, ids=lambda p: p.stem)
def test_a_runs_own_recipe_yaml_reads_back(path: Path, tmp_path: Path) -> None:
    """review-reliability 11.2: the resolved ``recipe.yaml`` a run writes (every field, defaults included) was refused
    ("no provenance row: data.max_samples, ...") for each reproducing recipe. A field at its default needs no row."""
    recipe = load_recipe(path, ["training.lr=3e-5"])
    recipe.to_yaml(tmp_path / "recipe.yaml")
    again = load_recipe(tmp_path / "recipe.yaml")
    assert again.to_dict() == recipe.to_dict() and again.provenance["training.lr"] == "user: --set training.lr=3e-5"
    assert provenance.check(again.to_dict()) == []


def test_set_cannot_claim_or_cite_and_a_value_becomes_one_line(tmp_path: Path) -> None:
    """review-reliability 11.3, 11.5: ``--set reproduces=`` recorded an uncited claim, ``--set provenance.*`` and a
    multi-line value left a ``recipe.yaml`` the zoo refused."""
    for override in ("reproduces=gui-g1-3b", "provenance.training.lr=arXiv:1 made up"):
        with pytest.raises(RecipeError, match="what a recipe claims and cites is the recipe file's"):
            load_recipe(REPRODUCING[0], [override])
    ui_s1 = next(path for path in REPRODUCING if path.stem == "ui-s1-7b")
    spread = load_recipe(ui_s1, ["data.kwargs.path=/data/a\n  /b.jsonl"])
    assert spread.provenance["data.kwargs.path"] == "user: --set data.kwargs.path=/data/a /b.jsonl"
    spread.to_yaml(tmp_path / "recipe.yaml")
    assert load_recipe(tmp_path / "recipe.yaml").provenance == spread.provenance
