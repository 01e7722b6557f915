"""The VLM page in a browser, against ``zoo run`` on the same input: same text, same fields, same drawing."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.demo.browsing import fill, image_bytes, open_page, shoot, textbox, upload, wait_for_status, wait_for_text
from zoo.cli import main
from zoo.demo.examples import EXAMPLES_DIR

EXAMPLE = EXAMPLES_DIR / "screen.png"
QUESTION = json.loads(EXAMPLE.with_suffix(".json").read_text())["instruction"]


@pytest.fixture(scope="module")
def page(servers, browser):
    page = open_page(browser, servers["vlm"])
    yield page
    page.close()


def zoo_run(capsys: pytest.CaptureFixture, *argv: str) -> dict:
    capsys.readouterr()
    assert main(["run", *argv, "--json", "--device", "cpu"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_example_answers_as_zoo_run_does(page, screenshots: Path, tmp_path: Path, capsys) -> None:
    assert textbox(page, "question") == QUESTION  # pre-filled with the entry's example
    page.click("#run")
    raw = wait_for_text(page, "raw-text")
    parsed = json.loads(textbox(page, "parsed"))
    shoot(page, screenshots, "vlm")
    ran = zoo_run(capsys, "gui-grounding-tiny", "--image", str(EXAMPLE), "--prompt", QUESTION,
                  "--draw", str(tmp_path / "drawn.png"))  # fmt: skip
    assert raw == ran["text"]
    assert parsed == {k: v for k, v in ran.items() if k not in ("model", "revision", "source", "text", "drawn")}
    assert len(parsed["bbox"]) == 4 and max(parsed["bbox"]) > 112  # original 448-px pixels, not the model's frame
    shown = np.asarray(Image.open(io.BytesIO(image_bytes(page, "drawn"))).convert("RGB"))
    assert np.array_equal(shown, np.asarray(Image.open(tmp_path / "drawn.png").convert("RGB")))


def test_a_broken_upload_is_refused_and_the_page_keeps_serving(page, tmp_path: Path) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"these bytes are no picture")
    upload(page, "image", broken)
    page.click("#run")
    status = wait_for_status(page, "not an image file")
    assert "Could not run: broken.png: not an image file" in status
    assert str(Path(tempfile.gettempdir())) not in status and "/" not in status  # never the server's own path
    assert textbox(page, "raw-text") == ""
    upload(page, "image", EXAMPLE)
    page.click("#run")
    assert wait_for_text(page, "raw-text")  # answered again
    assert "Could not run" not in page.locator("#status").inner_text()


def test_an_oversized_image_is_refused_by_name(page, tmp_path: Path) -> None:
    huge = tmp_path / "huge.png"
    Image.new("L", (9000, 9000)).save(huge)  # 81 MP: over zoo.images.MAX_IMAGE_PIXELS, a small file
    upload(page, "image", huge)
    page.click("#run")
    assert "exceeds the limit" in wait_for_status(page, "9000x9000")


def test_a_blank_question_is_refused(page) -> None:
    """The review's case: a blank question was answered with a box at y = 52421 on a 600-px image."""
    upload(page, "image", EXAMPLE)
    fill(page, "question", "   ")
    page.click("#run")
    assert "type a question: gui-grounding-tiny answers one about the image" in wait_for_status(page, "type a question")
    fill(page, "question", QUESTION)


def test_the_examples_fill_the_inputs(page) -> None:
    from zoo.demo.examples import examples_for

    second = examples_for("gui-grounding-tiny")[1]
    page.get_by_text(second.prompt(), exact=True).first.click()
    page.wait_for_function("(q) => document.querySelector('#question textarea')?.value === q", arg=second.prompt())
    fill(page, "question", QUESTION)
