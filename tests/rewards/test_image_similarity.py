"""Image metrics (golden SSIM from scikit-image), CLIP/DINOv2 loading of tiny random weights,
and the render-and-compare reward."""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest
import torch
from PIL import Image

from rewards import RewardSample
from rewards.image_similarity import RenderedImageSimilarity, edge_similarity, pixel_similarity, ssim, to_array

RNG = np.random.default_rng(0)
A = RNG.integers(0, 256, (32, 40, 3), dtype=np.uint8)
B = np.clip(A.astype(int) + RNG.integers(-40, 41, A.shape), 0, 255).astype(np.uint8)


def stripes(phase: float) -> np.ndarray:
    _, xx = np.mgrid[0:48, 0:48]
    gray = ((np.sin(xx / 5.0 + phase) + 1) * 127).astype(np.uint8)
    return np.stack([gray] * 3, -1)


def test_ssim_matches_scikit_image() -> None:
    """Golden values: scikit-image 0.26.0 ``structural_similarity(gray_a, gray_b, gaussian_weights=True,
    sigma=1.5, use_sample_covariance=False, data_range=255)`` on OpenCV 5.0 ``COLOR_RGB2GRAY`` images."""
    assert ssim(A, B) == pytest.approx(0.9510703630378564, abs=1e-9)
    assert ssim(stripes(0.0), stripes(0.5)) == pytest.approx(0.5802063253364371, abs=1e-9)
    assert ssim(A, A) == pytest.approx(1.0)


def test_pixel_and_edge_similarity() -> None:
    black, white = np.zeros((8, 8, 3), np.uint8), np.full((8, 8, 3), 255, np.uint8)
    assert pixel_similarity(black, white) == 0.0 and pixel_similarity(A, A) == 1.0
    assert pixel_similarity(black, np.full((8, 8, 3), 51, np.uint8)) == pytest.approx(0.8)
    square = np.zeros((64, 64, 3), np.uint8)
    square[16:48, 16:48] = 255
    shifted = np.roll(square, 1, axis=1)  # within the 1-pixel tolerance
    far = np.roll(square, 10, axis=1)
    assert edge_similarity(square, square) == 1.0
    assert edge_similarity(square, shifted) == 1.0
    assert 0.0 < edge_similarity(square, far) < 0.8
    assert edge_similarity(black, black) == 1.0 and edge_similarity(square, black[:1, :1]) == 0.0


def test_to_array_composites_transparency_on_white_and_resizes() -> None:
    clear = Image.new("RGBA", (4, 2), (0, 0, 0, 0))
    assert to_array(clear).tolist() == np.full((2, 4, 3), 255).tolist()
    assert to_array(clear, (8, 6)).shape == (6, 8, 3)


def test_dino_loads_a_local_checkpoint_through_timm(tmp_path) -> None:
    timm = pytest.importorskip("timm")
    from safetensors.torch import save_file

    from rewards.embedding_similarity import DinoSimilarity

    arch = {"img_size": 28, "embed_dim": 32, "depth": 1, "num_heads": 2}
    torch.manual_seed(0)
    source = timm.create_model("vit_small_patch14_dinov2", pretrained=False, num_classes=0, **arch).eval()
    save_file(source.state_dict(), tmp_path / "dino.safetensors")
    scorer = DinoSimilarity("vit_small_patch14_dinov2.lvd142m", checkpoint=str(tmp_path / "dino.safetensors"), **arch)
    emb = scorer.embed_images([A])
    batch = scorer._transform(Image.fromarray(A)).unsqueeze(0)
    with torch.inference_mode():
        expected = torch.nn.functional.normalize(source(batch), dim=-1)
    torch.testing.assert_close(emb, expected)  # the saved weights, not a fresh init
    assert scorer(A, A) == pytest.approx(1.0)


def test_clip_loads_a_local_checkpoint_through_open_clip(tmp_path) -> None:
    open_clip = pytest.importorskip("open_clip")
    from safetensors.torch import save_file

    from rewards.embedding_similarity import ClipSimilarity

    config = {"embed_dim": 16,
              "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
              "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}
    (tmp_path / "zoo-tiny-clip.json").write_text(json.dumps(config))
    open_clip.add_model_config(tmp_path / "zoo-tiny-clip.json")
    torch.manual_seed(0)
    source = open_clip.create_model("zoo-tiny-clip", pretrained=None).eval()
    save_file(source.state_dict(), tmp_path / "clip.safetensors")
    scorer = ClipSimilarity("zoo-tiny-clip", pretrained=str(tmp_path / "clip.safetensors"))
    emb = scorer.embed_images([A, B])
    batch = torch.stack([scorer._transform(Image.fromarray(x)) for x in (A, B)])
    with torch.inference_mode():
        expected = torch.nn.functional.normalize(source.encode_image(batch), dim=-1)
    torch.testing.assert_close(emb, expected)
    assert scorer(A, A) == pytest.approx(1.0) and 0.0 <= scorer(A, B) <= 1.0
    assert 0.0 <= scorer.text_score(A, "a bar chart") <= 2.5


SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32"><rect width="16" height="32" fill="{c}"/></svg>'


def test_rendered_similarity_reward_scores_and_masks(render_pool) -> None:
    reward = RenderedImageSimilarity("svg", "pixel", size=(32, 32), timeout=3.0)
    reference = render_pool.render("svg", SVG.format(c="red"), size=(32, 32)).image
    sample = RewardSample(target={"image": reference})
    same, other, broken, bomb = reward(
        [f"```svg\n{SVG.format(c='red')}\n```", SVG.format(c="blue"), "<svg", "x" * 10], [sample] * 4)
    assert same.score == pytest.approx(1.0) and same.components["rendered"] == 1.0
    assert 0.0 < other.score < 1.0
    assert broken.score == 0.0 and broken.error.startswith("invalid")
    assert bomb.score == 0.0


# Failures the job causes itself: each must score 0, never be masked (a policy could choose them).
SELF_INFLICTED = {
    "wall-clock": ("matplotlib", "while True: pass"),
    "sleep": ("matplotlib", "import time\ntime.sleep(99)"),
    "os-exit": ("matplotlib", "import os\nos._exit(0)"),
    "segfault": ("matplotlib", "import faulthandler\nfaulthandler._read_null()"),
    "cairo-spin": ("svg", '<svg xmlns="http://www.w3.org/2000/svg"><circle r="1e300"/></svg>'),
}


@pytest.mark.parametrize("case", sorted(SELF_INFLICTED))
def test_a_failure_the_job_causes_scores_zero(render_pool, case: str) -> None:
    kind, code = SELF_INFLICTED[case]
    reward = RenderedImageSimilarity(kind, "ssim", size=(32, 32), timeout=1.0)
    result = reward([code], [RewardSample(target={"image": A})])[0]
    assert result.score == 0.0, result
    assert result.components["render_failed"] == 1.0 and result.components["render_infra"] == 0.0


def test_a_lost_worker_is_masked_and_counted_apart() -> None:
    from rewards.rendering import RenderPool

    with RenderPool(1, kinds=("svg",), preload=(), max_batch=1) as pool:  # one job per sample: the first is lost
        os.killpg(pool.worker_pids[0], signal.SIGKILL)
        reward = RenderedImageSimilarity("svg", "pixel", size=(8, 8), timeout=2.0, pool=pool)
        lost, fine = reward([SVG.format(c="red")] * 2, [RewardSample(target={"image": A})] * 2)
        assert lost.score is None and lost.error.startswith("infra")
        assert lost.components == {"similarity": 0.0, "rendered": 0.0, "render_failed": 0.0, "render_infra": 1.0}
        assert fine.score is not None and fine.components["render_infra"] == 0.0
        counts = pool.failure_counts
    assert counts["infra_failure"] == 1 and counts["model_failure"] == 0 and counts["ok"] == 1


def test_foreground_iou_pays_only_for_overlap_of_the_same_colour() -> None:
    from rewards.image_similarity import foreground_iou

    blank = np.full((20, 20, 3), 255, np.uint8)
    red, moved, blue = blank.copy(), blank.copy(), blank.copy()
    red[2:8, 2:8] = moved[4:10, 4:10] = (200, 30, 30)
    blue[4:10, 4:10] = (30, 30, 200)
    assert foreground_iou(red, red) == foreground_iou(blank, blank) == 1.0
    assert foreground_iou(blank, red) == 0.0  # drawing nothing earns nothing
    assert foreground_iou(red, moved) == pytest.approx(16 / 56)  # 4x4 overlap of two 6x6 squares
    assert foreground_iou(red, blue) == 0.0  # overlap in the wrong colour


def test_with_options_changes_settings_and_keeps_the_rest() -> None:
    reward = RenderedImageSimilarity("svg", "foreground-iou", name="shape").with_options(size=(32, 32))
    assert (reward.kind, reward.metric, reward.size, reward.name) == ("svg", "foreground-iou", (32, 32), "shape")
