"""The LAION aesthetic predictor (christophschuhmann/improved-aesthetic-predictor ``simple_inference.py``: MLP
768-1024-128-64-16-1, dropouts 0.2/0.2/0.1, no activations, on the L2-normalised CLIP image embedding) and HPS v2
(``hpsv2`` ``img_score.py``: ``diag(image_features @ text_features.T)`` of open_clip's normalised features), on
tiny random models of the same classes; weights read from pickled files as the authors publish them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from domains.image.preference import AestheticMLP, AestheticScore, HPSv2, hub_file
from domains.image.scorers import to_pil
from tests.domains.image.test_ocr_and_scorers import _tiny_clip


@pytest.fixture(autouse=True)
def _converted_cache(tmp_path, monkeypatch):
    """Converted copies of the pickled files land in the test's folder, not the user's cache."""
    monkeypatch.setattr("zoo.safe_weights.CONVERTED_CACHE", tmp_path / "converted")


def test_aesthetic_mlp_has_their_layers_and_loads_their_pickled_file(tmp_path):
    mlp = AestheticMLP()
    linears = [m for m in mlp.layers if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(768, 1024), (1024, 128), (128, 64), (64, 16), (16, 1)]
    assert [m.p for m in mlp.layers if isinstance(m, torch.nn.Dropout)] == [0.2, 0.2, 0.1]
    assert len(mlp.layers) == 8  # no activation anywhere
    # their file is a plain state dict saved with torch.save, keys layers.0 ... layers.7
    torch.manual_seed(0)
    source = AestheticMLP(16)
    torch.save(source.state_dict(), tmp_path / "sac+logos+ava1-l14-linearMSE.pth")
    assert set(source.state_dict()) == {f"layers.{i}.{p}" for i in (0, 2, 4, 6, 7) for p in ("weight", "bias")}
    model, processor = _tiny_clip(tmp_path)
    scorer = AestheticScore(weights=str(tmp_path / "sac+logos+ava1-l14-linearMSE.pth"), model=model, processor=processor)
    images = [np.full((32, 32, 3), v) for v in (0.1, 0.9)]
    scores = scorer.scores(images)
    with torch.no_grad():
        pixels = processor(images=[to_pil(im) for im in images], return_tensors="pt")["pixel_values"]
        emb = model.get_image_features(pixel_values=pixels)
        emb = emb if isinstance(emb, torch.Tensor) else emb.pooler_output
        expected = source.eval()(emb / emb.norm(dim=-1, keepdim=True)).squeeze(-1)
    torch.testing.assert_close(scores, expected)
    results = scorer(images, [{}, {}])
    assert [r.score for r in results] == pytest.approx(expected.tolist(), abs=1e-6)


TINY = {"embed_dim": 16, "vision_cfg": {"layers": 1, "width": 32, "head_width": 16, "patch_size": 8, "image_size": 32},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}  # fmt: skip


def test_hps_loads_their_checkpoint_and_scores_the_feature_cosine(tmp_path):
    """The whole path: open_clip builds the architecture, the pickled ``{"state_dict": ...}`` file is converted and
    loaded, and the score is their ``diag(image_features @ text_features.T)`` on the source model."""
    import json

    import open_clip

    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "tiny-hps-test.json").write_text(json.dumps(TINY))
    open_clip.add_model_config(tmp_path / "configs")
    torch.manual_seed(0)
    source = open_clip.create_model("tiny-hps-test", pretrained=None, output_dict=True).eval()
    torch.save({"state_dict": source.state_dict(), "epoch": 3}, tmp_path / "HPS_v2.1_compressed.pt")  # their layout
    hps = HPSv2(str(tmp_path / "HPS_v2.1_compressed.pt"), arch="tiny-hps-test")
    images = [np.random.default_rng(i).random((40, 48, 3)) for i in range(3)]
    prompts = ["a red apple", "a cat on a mat", "a blue sky"]
    results = hps(images, [{"prompt": p} for p in prompts])
    preprocess, tokenizer = open_clip.image_transform(32, is_train=False), open_clip.get_tokenizer("tiny-hps-test")
    with torch.no_grad():
        out = source(torch.stack([preprocess(to_pil(im)) for im in images]), tokenizer(prompts))
        expected = torch.diagonal(out["image_features"] @ out["text_features"].T)
    assert [r.score for r in results] == pytest.approx(expected.tolist(), abs=1e-5)
    assert all(-1 <= r.score <= 1 for r in results) and len({r.score for r in results}) == 3


def test_missing_weights_offline_is_a_named_error(monkeypatch):
    from zoo.hub import ModelNotAvailableError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError, match="hf download xswu/no-such-repo"):
        hub_file("xswu/no-such-repo", "HPS_v2.1_compressed.pt")


def test_unreadable_images_are_not_scored_and_load_nothing():
    results = AestheticScore(clip_repo="nowhere/never-loaded")(["garbage", None], [{}, {}])
    assert [r.score for r in results] == [None, None] and all("aesthetic" in r.error for r in results)
