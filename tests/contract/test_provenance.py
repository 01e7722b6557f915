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
from zoo.recipe import RecipeError, load_recipe, read_yaml
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
    assert provenance.check(data) == [], path
    rows = data.get("provenance") or {}
    assert not [k for k, v in rows.items() if provenance.source_kind(v) == "user"], "user: rows come from --set only"
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


def test_uncited_stale_and_malformed_rows_are_named() -> None:
    data = _recipe(reproduces="gui-g1-3b", provenance={
        "data": "Yuqi-Zhou/GUI-G1@e581fe98:src/open-r1-multimodal/run_scripts/run.sh:12",
        "training.lr": "arXiv:2505.15810 §4.1",
        "algorithm.beta": "zoo: nothing sets it",
        "model.name": "somewhere in the paper",
    })  # fmt: skip
    problems = provenance.check(data)
    assert any("algorithm.beta: the recipe sets no such field" in p for p in problems), problems
    assert any("model.name: 'somewhere in the paper' is not a source" in p for p in problems), problems
    assert any(p.endswith("no provenance row: rewards") for p in problems), problems
    with pytest.raises(RecipeError, match="no provenance row: rewards"):
        load_recipe_from(data)


def load_recipe_from(data: dict) -> object:
    from zoo.engines.vlm.recipe import VLMRecipe

    return VLMRecipe.from_dict(data)


def test_sources_of_every_form_are_read() -> None:
    kinds = [provenance.source_kind(s) for s in (
        "X-PLUG/MobileAgent@12d958e:UI-S1/scripts/train_example.sh:40",
        "yifan123/flow_grpo@ac4c86e:config/grpo.py:120-140 geneval_sd3",
        "arXiv:2509.11543v2 §4.2, Table 5",
        "https://huggingface.co/mPLUG/UI-S1-7B/commit/8f38d44 front matter: apache-2.0",
        "zoo: the authors run vLLM; hf works everywhere",
    )]  # fmt: skip
    assert kinds == ["code", "code", "paper", "page", "zoo"]


def test_a_command_line_change_becomes_a_user_row_of_the_run(tmp_path: Path) -> None:
    rows = {"data": "arXiv:2505.15810 §4", "rewards": "arXiv:2505.15810 §3", "model": "zoo: a tiny model for CPU",
            "training.lr": "arXiv:2505.15810 §4.1"}  # fmt: skip
    path = tmp_path / "r.yaml"
    path.write_text(json.dumps(_recipe(reproduces="gui-g1-3b", provenance=rows)))
    recipe = load_recipe(path, ["training.lr=3e-5", "data.kwargs.n=8"])
    assert recipe.provenance["training.lr"] == "user: --set training.lr=3e-5"
    assert recipe.provenance["data.kwargs.n"] == "user: --set data.kwargs.n=8"
    assert recipe.provenance["data"] == "arXiv:2505.15810 §4"  # the rest of data is still the paper's
    first = [row.field for row in provenance.rows(recipe.provenance)][:3]
    assert first == ["model", "training.lr", "data.kwargs.n"]  # differences first: zoo, then user rows


def test_zoo_info_lists_a_recipes_differences_before_its_sources(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    rows = {"data": "arXiv:2505.15810 §4", "rewards": "arXiv:2505.15810 §3", "model": "zoo: a tiny model for CPU",
            "training": "Yuqi-Zhou/GUI-G1@e581fe98:src/open-r1-multimodal/run_scripts/run.sh:20"}  # fmt: skip
    path = tmp_path / "r.yaml"
    path.write_text(json.dumps(_recipe(reproduces="gui-g1-3b", provenance=rows)))
    assert main(["info", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "reproduces gui-g1-3b: 3 settings cited to the authors, 1 differ" in lines[1]
    assert lines[2].strip() == "differs  model: a tiny model for CPU" and lines[3].strip().startswith("cited")


REPRODUCING = [path for path in RECIPES if read_yaml(path).get("reproduces")]


@pytest.mark.parametrize("path", REPRODUCING, ids=lambda p: p.stem)
def test_a_runs_own_recipe_yaml_reads_back(path: Path, tmp_path: Path) -> None:
    """review-reliability 11.2: the resolved ``recipe.yaml`` a run writes (every field, defaults included) was refused
    ("no provenance row: data.max_samples, ...") for each reproducing recipe. A field at its default needs no row."""
    recipe = load_recipe(path, ["training.lr=3e-5"])
    recipe.to_yaml(tmp_path / "recipe.yaml")
    again = load_recipe(tmp_path / "recipe.yaml")
    assert again.to_dict() == recipe.to_dict() and again.provenance["training.lr"] == "user: --set training.lr=3e-5"


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
