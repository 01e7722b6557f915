"""The reward tab (on the VLM page's server): the registry's reward, the sandbox's rendering, the same scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from tests.demo.browsing import fill, open_page, shoot, textbox, upload, wait_for_status, wait_for_text

SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><circle cx="32" cy="32" r="20" fill="red"/></svg>'


@pytest.fixture(scope="module")
def page(servers, browser):
    page = open_page(browser, servers["vlm"])
    page.get_by_role("tab", name="Score with a reward").click()
    yield page
    page.close()


def pick(page, name: str) -> None:
    page.click("#reward-name input")
    page.fill("#reward-name input", name)
    page.locator(f"ul[role=listbox] li[aria-label='{name}']").first.click()


def score(page, reward: str, output: str, target: str) -> tuple[str, str, str]:
    pick(page, reward)
    fill(page, "reward-output", output)
    fill(page, "reward-target", target)
    before = textbox(page, "reward-score")
    page.click("#reward-run")
    return (
        wait_for_text(page, "reward-score", before),
        textbox(page, "reward-components"),
        textbox(page, "reward-error"),
    )


def test_a_text_reward_scores_as_the_registry_does(page) -> None:
    import rewards
    from rewards import RewardSample

    output, target = '[{"bbox_2d": [10, 10, 50, 50]}]', {"bbox": [20, 20, 60, 60], "image_size": [112, 112]}
    value, components, error = score(page, "gui-g1", output, json.dumps(target))
    [expected] = rewards.get("gui-g1")([output], [RewardSample(target)])
    assert float(value) == pytest.approx(expected.score, rel=1e-5)
    assert all(key in components for key in expected.components)
    assert error == (expected.error or "")


def test_a_render_reward_shows_the_sandbox_rendering(page, screenshots: Path, tmp_path: Path) -> None:
    import rewards
    from rewards import RewardSample

    reference = tmp_path / "reference.png"
    picture = Image.new("RGB", (64, 64), "white")
    ImageDraw.Draw(picture).ellipse([12, 12, 52, 52], fill="red")
    picture.save(reference)
    upload(page, "reward-reference", reference)
    value, _, _ = score(page, "svg-ssim", SVG, "")
    page.wait_for_selector("#reward-rendered img")
    shoot(page, screenshots, "reward")
    [expected] = rewards.get("svg-ssim")([SVG], [RewardSample({"image": picture})])
    assert float(value) == pytest.approx(expected.score, rel=1e-5)


def test_bad_target_json_is_refused(page) -> None:
    pick(page, "exact-match")
    fill(page, "reward-output", "B")
    fill(page, "reward-target", "{answer: B")
    page.click("#reward-run")
    assert "Could not run" in wait_for_status(page, "not JSON", elem_id="reward-status")


def test_the_tab_opens_on_the_models_own_reward(servers, browser) -> None:
    """On a page of its own: the other tests of this module pick other rewards."""
    fresh = open_page(browser, servers["vlm"])
    fresh.get_by_role("tab", name="Score with a reward").click()
    assert fresh.locator("#reward-name input").first.input_value() == "gui-g1"  # the recipes' reward of this model
    fresh.close()
