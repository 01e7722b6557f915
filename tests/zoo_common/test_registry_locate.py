"""A registry's locator registers a declared name alone; only a name it does not find runs the discovery."""

from __future__ import annotations

import pytest

from zoo_common.registry import Registry, UnknownNameError


def test_locator_finds_a_declared_name_without_discovery():
    calls: list[str] = []

    def locate(name: str) -> None:
        calls.append(f"locate {name}")
        if name == "Near":  # the one name a plug-in declares
            table.register("near", 1)

    def discover() -> None:
        calls.append("discover")
        table.register("far", 2)

    table: Registry[int] = Registry("thing", discover=discover, locate=locate)
    assert table.get("Near") == 1 and calls == ["locate Near"]
    assert "far" in table and calls == ["locate Near", "locate far", "discover"]
    with pytest.raises(UnknownNameError, match="Did you mean: near"):
        table.get("nearr")
