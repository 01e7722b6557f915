"""A model that cannot run here opens a page saying why and what to do, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.demo.browsing import open_page, shoot


def test_a_gated_entry_offline_says_how_to_get_it(servers, browser, screenshots: Path) -> None:
    page = open_page(browser, servers["gated"])
    text = page.locator("#unavailable").inner_text()
    shoot(page, screenshots, "gated")
    page.close()
    name = servers["gated"].name
    assert f"{name} cannot run here" in text
    assert "HF_HUB_OFFLINE" in text and "hf download" in text  # not cached: the command that fetches it
    assert "hf auth login" in text and "licence" in text  # gated: accept the licence, then log in
    assert "Traceback" not in text


def test_an_unreleased_entry_says_so() -> None:
    """The same page's text for an entry with no weights (built without a server: it is the same function)."""
    import zoo
    from zoo.demo.errors import UNAVAILABLE, unavailable_reason

    name = next(n for n in zoo.list_models() if not zoo.info(n).released)
    with pytest.raises(UNAVAILABLE) as caught:
        zoo.load(name)
    text = unavailable_reason(name, caught.value)
    assert text.startswith(f"## {name} cannot run here") and "no public weights" in text
