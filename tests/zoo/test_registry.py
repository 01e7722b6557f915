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
        assert entry.spec.parser is not None and "{question}" in entry.spec.user


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


def test_readme_model_table_is_in_step_with_the_registry():
    assert markdown_table() in README.read_text(), "regenerate the README table with `zoo list --markdown`"
