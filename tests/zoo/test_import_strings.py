"""Import strings in files a user is handed resolve only to installed, project or registered-domain code.

Review 3.5 / 3.10: under ``python -m zoo.cli`` the current directory is importable, so a recipe's
``model.added_tokens: handed_recipes.helpers:TOKENS`` or a checkpoint's ``training.json`` card hook ran
a ``helpers.py`` shipped beside it. Here such a module is planted in the current directory (with
``''`` on ``sys.path``, as ``python -m`` has it); importing it writes a marker file.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

import zoo.cards
import zoo.push
from zoo.cli import main
from zoo.data import DATASETS, load_dataset
from zoo.hub import CHECKPOINTS_DIR
from zoo.import_strings import TRUST_ENV, ImportStringError, resolve
from zoo.recipe import RecipeError, import_named
from zoo.records import RecordError

#: Read by a test below through ``resolve(f"{__name__}:ANSWER")``.
ANSWER = 42

HELPERS = '''
from pathlib import Path
Path({marker!r}).write_text("ran")
TOKENS = ["<loc_0>", "<loc_1>"]

def write_card(path, record, checkpoint):
    import zoo
    from zoo.cards import render_card
    path.write_text(str(render_card(zoo.info("gui-grounding-tiny"), record)))

def load(**kwargs):
    return []
'''


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """``handed_recipes/helpers.py`` in the current directory, importable as ``python -m`` makes it."""
    work = tmp_path / "work"
    (work / "handed_recipes").mkdir(parents=True)
    (work / "handed_recipes" / "__init__.py").write_text("")
    marker = tmp_path / "MARKER"
    (work / "handed_recipes" / "helpers.py").write_text(HELPERS.format(marker=str(marker)))
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    monkeypatch.delenv(TRUST_ENV, raising=False)
    importlib.invalidate_caches()
    spec = importlib.util.find_spec("handed_recipes")
    assert spec is not None and Path(spec.origin).parent == work / "handed_recipes"  # a plain import would run it
    yield marker
    for name in [m for m in sys.modules if m.partition(".")[0] == "handed_recipes"]:
        del sys.modules[name]


def test_a_recipe_naming_a_module_beside_it_is_refused_and_it_never_runs(planted):
    with pytest.raises(RecipeError) as refused:
        import_named("model.added_tokens", "handed_recipes.helpers:TOKENS")
    message = str(refused.value)
    assert "recipe key model.added_tokens" in message and "'handed_recipes.helpers:TOKENS'" in message
    assert str(Path.cwd() / "handed_recipes") in message and f"{TRUST_ENV}=handed_recipes" in message
    assert not planted.exists() and "handed_recipes" not in sys.modules


def test_the_opt_in_by_name_lets_it_through(planted, monkeypatch):
    monkeypatch.setenv(TRUST_ENV, "something_else, handed_recipes")
    assert import_named("model.added_tokens", "handed_recipes.helpers:TOKENS") == ["<loc_0>", "<loc_1>"]
    assert planted.read_text() == "ran"


@pytest.fixture
def colleague_checkpoint(tmp_path, monkeypatch):
    """``checkpoints/gui-grounding-tiny`` as a colleague's copy whose training.json names a card hook."""
    checkpoints = tmp_path / "checkpoints"
    folder = checkpoints / "gui-grounding-tiny"
    shutil.copytree(CHECKPOINTS_DIR / "gui-grounding-tiny", folder)
    record = json.loads((folder / "training.json").read_text())
    (folder / "training.json").write_text(json.dumps({**record, "card": "handed_recipes.helpers:write_card"}))
    monkeypatch.setattr(zoo.cards, "CHECKPOINTS_DIR", checkpoints)
    monkeypatch.setattr(zoo.push, "CHECKPOINTS_DIR", checkpoints)
    return folder


@pytest.mark.parametrize("trusted", [False, True])
def test_a_checkpoint_naming_code_is_refused_by_zoo_card_and_push_even_trusted(planted, colleague_checkpoint, tmp_path,
                                                                            capsys, monkeypatch, trusted):  # fmt: skip
    """A training record is data (:class:`zoo.records.TrainingRecord`): a key naming code is an unknown field,
    refused by name, and nothing it names is imported, whatever the user trusts."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if trusted:
        monkeypatch.setenv(TRUST_ENV, "handed_recipes")
    with pytest.raises(RecordError, match=r"unknown field\(s\) \['card'\]"):
        zoo.cards.write_card("gui-grounding-tiny", tmp_path / "cards")
    assert main(["card", "gui-grounding-tiny", "--out", str(tmp_path / "cards")]) == 1
    assert main(["push", "gui-grounding-tiny", "--repo-id", "me/model", "--dry-run"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 2 and all("unknown field(s) ['card']" in e for e in err.splitlines())
    assert not planted.exists()


def test_a_dataset_registered_to_a_planted_module_is_refused(planted, monkeypatch):
    monkeypatch.setitem(DATASETS._items, "planted-data", "handed_recipes.helpers:load")
    with pytest.raises(ImportStringError, match="dataset 'planted-data'"):
        load_dataset("planted-data")
    assert not planted.exists()


def test_a_registered_domain_package_resolves(planted, monkeypatch):
    """A domain another distribution advertises under the ``zoo.domains`` entry points is trusted code."""
    import zoo.import_strings

    monkeypatch.setattr(zoo.import_strings, "entry_point_packages", lambda: ["handed_recipes.domain"])
    assert resolve("handed_recipes.helpers:TOKENS", what="test") == ["<loc_0>", "<loc_1>"]
    assert planted.exists()


@pytest.mark.parametrize("target", [
    "json:dumps",  # standard library
    "yaml:safe_load",  # site-packages
    "domains.gui.location_tokens:TOKENS",  # this project
    "zoo.engines.vlm.recipe:VLMRecipe",
    f"{__name__}:ANSWER",  # already imported (the test suite is not installed): importing it runs nothing new
])  # fmt: skip
def test_installed_project_and_already_imported_code_resolves(planted, target):
    module, _, attr = target.partition(":")
    assert resolve(target, what="test") is getattr(importlib.import_module(module), attr)


@pytest.mark.parametrize(("target", "message"), [
    ("no_colon_here", "not an importable"),
    (":TOKENS", "not an importable"),
    ("json:", "not an importable"),
    (".relative:x", "not an importable"),
    ("domains.gui.nope:X", r"not an importable.*No module named 'domains.gui.nope'"),
    ("json:no_such_name", "has no 'no_such_name'"),
])  # fmt: skip
def test_malformed_or_missing_targets_are_one_clear_error(target, message):
    with pytest.raises(ImportStringError, match=message):
        resolve(target, what="test")


def test_a_trusted_module_missing_a_dependency_reports_the_dependency(planted, monkeypatch):
    (Path.cwd() / "handed_recipes" / "needy.py").write_text("import a_dependency_that_is_not_installed\n")
    monkeypatch.setenv(TRUST_ENV, "handed_recipes")
    with pytest.raises(ModuleNotFoundError) as failed:
        resolve("handed_recipes.needy:X", what="test")
    assert failed.value.name == "a_dependency_that_is_not_installed" and not isinstance(failed.value, ImportStringError)


def test_a_project_package_counts_only_where_this_installation_keeps_it(tmp_path, monkeypatch):
    """``domains`` found anywhere but beside this ``zoo`` (a folder of that name in the current directory
    shadowing it under ``python -m``) is not this project's code."""
    from zoo import import_strings

    assert import_strings._refusal("domains", "domains.gui.location_tokens:TOKENS", "test") is None
    monkeypatch.setattr(import_strings, "PROJECT_ROOT", tmp_path)
    refusal = import_strings._refusal("domains", "domains.gui.location_tokens:TOKENS", "test")
    assert refusal is not None and f"this installation's own 'domains' ({tmp_path / 'domains'})" in refusal
