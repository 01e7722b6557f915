"""The CLIP page in a browser (a tiny random open_clip model: the zoo ships no CLIP checkpoint)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from tests.demo.browsing import fill, open_page, shoot, upload, wait_for_status, wait_for_text
from zoo.cli import main

LABELS = "purple, pink, white"


@pytest.fixture(scope="module")
def page(servers, browser):
    page = open_page(browser, servers["clip"])
    yield page
    page.close()


def test_probabilities_are_zoo_runs(page, servers, screenshots: Path, tmp_path: Path, capsys) -> None:
    picture = tmp_path / "purple.png"
    Image.new("RGB", (40, 30), "purple").save(picture)
    upload(page, "image", picture)
    fill(page, "labels", LABELS)
    page.click("#run")
    shown = json.loads(wait_for_text(page, "probabilities"))
    shoot(page, screenshots, "clip")
    capsys.readouterr()
    assert main(["run", servers["clip"].name, "--image", str(picture), "--prompt", LABELS, "--json"]) == 0
    ran = json.loads(capsys.readouterr().out)["probabilities"]
    assert list(shown) == ["purple", "pink", "white"]
    assert shown == pytest.approx(ran, abs=1e-6)
    assert sum(shown.values()) == pytest.approx(1.0, abs=1e-5)


def test_one_class_name_is_refused(page) -> None:
    fill(page, "labels", "purple")
    page.click("#run")
    assert "Could not run" in wait_for_status(page, "two or more class names")
