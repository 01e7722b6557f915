"""The text-to-image page in a browser: the image is ``zoo run``'s, pixel for pixel; the grid is one per seed."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.demo.browsing import fill, image_bytes, open_page, shoot, textbox, wait_for_status
from zoo.cli import main

NAME = "flow-grpo-tiny-colour"


@pytest.fixture(scope="module")
def page(servers, browser):
    page = open_page(browser, servers["diffusion"])
    yield page
    page.close()


def shown(page, elem_id: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(image_bytes(page, elem_id))).convert("RGB"))


def test_the_image_is_zoo_runs_and_the_grid_has_one_cell_per_seed(page, screenshots: Path, tmp_path: Path) -> None:
    import zoo
    from zoo.visualize import grid

    prompt = textbox(page, "prompt")
    assert prompt == "a green circle"  # the entry's example
    page.fill("#seeds input[type=number]", "3")
    page.press("#seeds input[type=number]", "Enter")
    page.click("#run")
    page.wait_for_selector("#grid img", timeout=120_000)
    shoot(page, screenshots, "diffusion")
    assert (
        main(["run", NAME, "--prompt", prompt, "--seed", "0", "--out", str(tmp_path / "ran.png"), "--device", "cpu"])
        == 0
    )
    assert np.array_equal(shown(page, "image"), np.asarray(Image.open(tmp_path / "ran.png").convert("RGB")))
    pipe = zoo.load(NAME, device="cpu")
    expected = grid([pipe(prompt, seed=s).images[0] for s in range(3)], columns=3)
    assert np.array_equal(shown(page, "grid"), np.asarray(expected))
    assert not np.array_equal(*np.split(shown(page, "grid")[:, :512], 2, axis=1))  # seeds 0 and 1 differ


def test_an_empty_prompt_is_refused(page) -> None:
    fill(page, "prompt", "  ")
    page.click("#run")
    assert "Could not run" in wait_for_status(page, "type a prompt")


@pytest.mark.parametrize(("elem_id", "typed", "said"), [
    ("steps", "100000", "steps 100000 is out of range: type a whole number from 1 to 100"),
    ("seeds", "0", "seeds in the grid 0 is out of range: type a whole number from 1 to 8"),
    ("seed", "99999999999999999999", "seed 1e+20 is out of range: type a whole number from 0 to 2147483647"),
    ("guidance", "35", "guidance scale 35 is out of range: type a number from 0 to 20"),
])  # fmt: skip
def test_a_number_out_of_range_is_reported_with_the_range(page, elem_id: str, typed: str, said: str) -> None:
    """They were clamped silently (steps, seeds) or failed inside torch ("Overflow when unpacking long long")."""
    before = textbox(page, elem_id)
    fill(page, "prompt", "a green circle")
    fill(page, elem_id, typed)
    page.click("#run")
    assert "Could not run" in wait_for_status(page, said)
    fill(page, elem_id, before)
