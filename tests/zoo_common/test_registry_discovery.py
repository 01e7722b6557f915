"""A registry finds its plug-ins itself: pending discovery hooks run on the first miss, once each."""

from __future__ import annotations

import pytest

from zoo_common.registry import Registry, UnknownNameError


def test_a_miss_runs_the_hook_once_and_a_hit_runs_nothing() -> None:
    calls: list[str] = []
    reg: Registry[int] = Registry("thing", discover=lambda: (calls.append("found"), reg.register("far", 2)))
    reg.register("near", 1)
    assert reg.get("near") == 1 and calls == []  # a hit needs no discovery
    assert reg.get("far") == 2 and calls == ["found"]
    with pytest.raises(UnknownNameError, match="unknown thing 'fa'.*Did you mean: far"):
        reg.get("fa")
    assert calls == ["found"]  # not re-run at the next miss


def test_listing_membership_and_length_discover_first() -> None:
    for probe in (Registry.list, len, lambda r: "far" in r, list):
        reg: Registry[int] = Registry("thing")
        reg.add_discovery(lambda reg=reg: reg.register("far", 2))
        assert probe(reg) in (["far"], 1, True)


def test_a_hook_may_look_up_and_add_hooks_without_reentering() -> None:
    calls: list[str] = []
    reg: Registry[int] = Registry("thing")

    def plugin() -> None:  # a plug-in that brings its own plug-in, and reads the table while loading
        calls.append("plugin")
        assert "late" not in reg  # the hook is already off the list: this does not recurse into it
        reg.add_discovery(lambda: (calls.append("late"), reg.register("late", 3)))

    reg.add_discovery(plugin)
    assert reg.get("late") == 3
    assert calls == ["plugin", "late"]


def test_a_failing_hook_raises_once_and_is_not_retried() -> None:
    def broken() -> None:
        raise RuntimeError("domain package broke")

    reg: Registry[int] = Registry("thing", discover=broken)
    with pytest.raises(RuntimeError, match="domain package broke"):
        reg.get("x")
    with pytest.raises(UnknownNameError):
        reg.get("x")
