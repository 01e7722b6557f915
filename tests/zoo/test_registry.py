"""The catalog: discovery, lookups, the registry contract, and the README table."""

from pathlib import Path

import pytest

import zoo
from zoo.cli import markdown_table
from zoo_common.registry import Registry, UnknownNameError

README = Path(__file__).resolve().parents[2] / "README.md"


def test_domains_are_discovered_and_first_entries_exist():
    names = zoo.list_models()
    for required in ("patho-r1-3b", "patho-r1-7b", "gui-g1-3b", "ui-s1-7b"):
        assert required in names
    assert set(zoo.list_models(domain="gui")) >= {"gui-g1-3b", "ui-s1-7b"}
    assert all(zoo.info(n).domain == "medical" for n in zoo.list_models(domain="medical"))


@pytest.mark.parametrize("name", zoo.list_models())
def test_every_entry_is_well_formed(name):
    entry = zoo.info(name)
    assert entry.name == name == name.lower() and " " not in name
    assert entry.kind in {"vlm", "diffusion", "policy", "clip"}
    assert entry.license and entry.domain and entry.task
    if entry.released and entry.kind == "vlm":
        # the user's question goes into the template, except where the picture is the whole task and the weights
        # were trained on the prompt alone (svg-scenes-tiny: blank questions)
        whole_task = entry.name in {"svg-scenes-tiny"}
        assert entry.spec.parser is not None and ("{question}" in entry.spec.user) != whole_task


def test_aliases_and_case_insensitive_lookup():
    assert zoo.info("patho-r1") is zoo.info("Patho_R1_7B") is zoo.info("PATHO-R1-7B")
    entry = zoo.info("patho-r1-7b")
    assert entry.gated and entry.license == "cc-by-nc-nd-4.0"


def test_registry_refuses_silent_shadowing_and_suggests_names():
    reg: Registry[int] = Registry("thing")
    reg.register("alpha-one", 1, aliases=("a1",))
    reg.register("alpha-one", 1)  # same object again: fine
    with pytest.raises(ValueError, match="different object"):
        reg.register("alpha-one", 2)
    with pytest.raises(ValueError, match="alias"):
        reg.register("beta", 3, aliases=("a1",))
    with pytest.raises(UnknownNameError, match="Did you mean: alpha-one"):
        reg.get("alpha-on")


def test_the_models_table_is_generated_from_the_registry_and_the_readme_points_to_it():
    """The table lives on the site, generated at build time (tests/docs/test_site.py builds it), so it cannot
    fall out of step; the README names where to find it instead of copying it."""
    from docs.hooks.registry_pages import _model_index

    table = _model_index(zoo.list_models())
    for name in zoo.list_models():
        assert f"[`{name}`]({name}.md)" in table
    assert markdown_table().splitlines()[0] in table
    assert "site/models/index.html" in README.read_text() and "zoo list --markdown" in README.read_text()
