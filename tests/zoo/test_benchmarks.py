"""``zoo eval --data``: one benchmark table for the command, its ``--help`` and the choice of evaluation."""

from __future__ import annotations

import pytest

from zoo.benchmarks import BENCHMARKS, benchmark_name, evaluating_domain, help_text
from zoo.cli import build_parser
from zoo.domains import discover
from zoo_common.registry import UnknownNameError


def test_the_table_holds_every_declared_benchmark_as_spelled() -> None:
    declared = {name for d in discover() if d.evaluate for name in d.benchmarks}
    assert {BENCHMARKS.get(key).name for key in BENCHMARKS.list()} == declared
    assert "u2bench-disease_diagnosis" in help_text() and "synthetic-us-<task>" not in help_text()


def test_help_reads_the_same_table() -> None:
    eval_parser = build_parser()._subparsers._group_actions[0].choices["eval"]
    data = next(a for a in eval_parser._actions if a.dest == "data")
    assert data.help == help_text()


def test_the_models_domain_decides_and_a_shared_name_asks_for_an_entry() -> None:
    assert {d.name for d in BENCHMARKS.get("synthetic").domains} == {"driving", "gui"}
    assert evaluating_domain("synthetic", "gui").name == "gui"
    assert evaluating_domain("synthetic", "driving").name == "driving"
    with pytest.raises(ValueError, match="benchmark of several domains \\(driving, gui\\); pass --entry"):
        evaluating_domain("synthetic", None)
    assert evaluating_domain("u2bench-cla:18", None).name == "medical"  # a dataset id after ':' is not the name
    assert benchmark_name("u2bench-cla:18") == "u2bench-cla"
    with pytest.raises(ValueError, match="evaluated by the medical domain, not by 'gui'"):
        evaluating_domain("pathmmu", "gui")
    with pytest.raises(UnknownNameError, match="unknown benchmark 'screenspot-v3'.*Did you mean: screenspot-v2"):
        evaluating_domain("screenspot-v3", "gui")
