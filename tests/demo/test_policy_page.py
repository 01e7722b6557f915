"""The policy page in a browser: the returns are the evaluation loop's on the same seeds; the film is episode 0."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from tests.demo.browsing import fill, image_bytes, open_page, shoot, wait_for_status

NAME = "fetch-push-bc-tiny"


@pytest.fixture(scope="module")
def page(servers, browser):
    page = open_page(browser, servers["policy"])
    yield page
    page.close()


def table_rows(page) -> list[list[str]]:
    rows = page.locator("#returns [role=row]")  # the header row has no cells
    cells = [[c.strip() for c in rows.nth(i).locator("[role=gridcell]").all_inner_texts()] for i in range(rows.count())]
    return [row for row in cells if row]


def test_episodes_match_the_evaluation_loop(page, screenshots: Path) -> None:
    import zoo
    from zoo.engines.policy.envs import make_environment
    from zoo.engines.policy.evaluate import run_episodes

    page.fill("#episodes input[type=number]", "2")
    page.press("#episodes input[type=number]", "Enter")
    page.fill("#seed input", "3")
    page.click("#run")
    page.wait_for_selector("#rollout img", timeout=180_000)
    page.wait_for_function("document.querySelector('#note')?.innerText.includes('success')", timeout=60_000)
    shoot(page, screenshots, "policy")
    rows = table_rows(page)
    pipe = zoo.load(NAME, device="cpu")
    played = list(run_episodes(make_environment("fetch-push"), pipe.act, 2, 3, on_reset=pipe.reset))
    assert [int(r[1]) for r in rows] == [3, 4]
    assert [float(r[2]) for r in rows] == [round(total, 4) for total, _ in played]
    assert [r[3] for r in rows] == [str(bool(info.get("is_success"))).lower() for _, info in played]
    film = Image.open(io.BytesIO(image_bytes(page, "rollout")))
    # the reset frame, then one per step (PIL merges identical consecutive frames into one)
    assert film.format == "GIF" and 1 < film.n_frames <= int(rows[0][4]) + 1


@pytest.mark.parametrize(("elem_id", "typed", "said"), [
    ("episodes", "100000", "episodes 100000 is out of range: type a whole number from 1 to 20"),
    ("episodes", "0", "episodes 0 is out of range: type a whole number from 1 to 20"),
    ("seed", "-1", "seed -1 is out of range: type a whole number from 0 to 2147483647"),
])  # fmt: skip
def test_a_number_out_of_range_is_refused_as_an_input_not_a_server_error(page, servers, elem_id: str, typed: str,
                                                                         said: str) -> None:  # fmt: skip
    """Episodes were clamped silently; seed -1 failed inside gymnasium and was logged as an unexpected error."""
    fill(page, elem_id, typed)
    page.click("#run")
    assert "Could not run" in wait_for_status(page, said)
    fill(page, elem_id, "3" if elem_id == "episodes" else "0")
    assert "demo handler failed" not in servers["policy"].log.read_text()
