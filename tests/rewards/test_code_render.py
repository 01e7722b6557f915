"""VinciCoder-style rendered-code reward: hand-checked scores, failure semantics, tiling."""


import pytest
from PIL import Image

from rewards.base import RewardSample
from rewards.code_render import DinoEncoder, RenderedCodeReward, extract_code, tile_grid, tiles
from rewards.rendering import close_optional_pools, render


@pytest.fixture(autouse=True, scope="module")
def _shared_pools(render_pool):
    """Default kinds go to the session's pool; the optional kinds' pools stop with this module."""
    yield
    close_optional_pools()


CHART = "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.bar(['a', 'b'], [1, 3], color='#d62728')\n"
TINY = {"model": "tiny", "tile": 28}


@pytest.fixture(scope="module")
def sample():
    image = render("matplotlib", CHART, size=(64, 64)).image
    return RewardSample(target={"image": image})


def test_tile_grid_matches_the_aspect_ratio():
    assert tile_grid(448, 448) == (1, 1)
    assert tile_grid(896, 448) == (2, 1)
    assert tile_grid(448, 1344) == (1, 3)
    wide = tiles(Image.new("RGB", (100, 50)), tile=28)  # 2:1 ties 2x1 and 4x2; 5000 px > half of 4x2's 6272
    assert len(wide) == 9 and all(t.size == (28, 28) for t in wide)  # 8 tiles + thumbnail


def test_tiny_dino_is_built_from_a_config_and_scores_identical_images_one():
    encoder = DinoEncoder(**TINY)
    image = Image.new("RGB", (40, 30), (10, 200, 30))
    assert encoder.similarity(image, image) == pytest.approx(1.0, abs=1e-6)
    assert encoder.cls([image]).shape == (1, 32)


def test_scores_are_the_weighted_format_and_visual(sample):
    reward = RenderedCodeReward("matplotlib", encoder=TINY, size=(64, 64))
    texts = [f"```python\n{CHART}```", "I cannot draw this.", "```python\nraise ValueError('no')\n```"]
    right, missing, broken = reward(texts, [sample] * 3)
    assert right.score == pytest.approx(1.0) and right.components == {"format": 1.0, "visual": 1.0, "executed": 1.0}
    assert missing.score == 0.0 and "no matplotlib code block" in missing.error
    assert broken.score == pytest.approx(0.1) and broken.components["visual"] == 0.0  # well-formed, fails: 0 visual
    assert "ValueError" in broken.error


def test_a_render_timeout_is_the_answers_failure_not_masked(sample):
    reward = RenderedCodeReward("matplotlib", encoder=TINY, size=(64, 64), timeout=1.0)
    (result,) = reward(["```python\nwhile True:\n    pass\n```"], [sample])
    assert result.score == pytest.approx(0.1) and result.components == {"format": 1.0, "visual": 0.0, "executed": 0.0}
    assert "wall-clock limit" in result.error


def test_missing_reference_image_is_a_named_error():
    reward = RenderedCodeReward("matplotlib", encoder=TINY)
    with pytest.raises(KeyError, match="image"):
        reward(["x"], [RewardSample(target={})])


def test_extract_code_takes_the_last_block_and_bare_svg():
    assert extract_code("```python\na\n```\n```python\nb\n```", "matplotlib") == "b"
    assert extract_code("text <svg><rect/></svg>", "svg-skia") == "<svg><rect/></svg>"
    assert extract_code("```python\na\n```", "svg") is None


def test_uncached_dino_weights_name_the_fix(tmp_path):
    encoder = DinoEncoder(model=str(tmp_path / "no-such-model"))
    with pytest.raises(OSError, match="encoder=\\{'model': 'tiny'\\}"):
        encoder.cls([Image.new("RGB", (8, 8))])
