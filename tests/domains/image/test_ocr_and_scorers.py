"""Flow-GRPO's OCR reward (yifan123/flow_grpo ac4c86e, flow_grpo/ocr.py) and the CLIP-based scorers."""

from __future__ import annotations

import numpy as np
import pytest

from domains.image.ocr import OcrReward, ocr_score, quoted_target


@pytest.mark.parametrize(("recognised", "target", "expected"), [
    ("Hello World", "hello world", 1.0),          # spaces removed, lower-cased
    ("xxhelloworldyy", "Hello World", 1.0),       # substring -> distance 0
    ("helo world", "hello world", 1 - 1 / 10),    # one deletion, len("helloworld") = 10
    ("completely unrelated text here", "abc", 0.0),  # distance capped at len(target)
    ("", "OPEN", 0.0),
])  # fmt: skip
def test_ocr_score_as_flow_grpo(recognised, target, expected):
    assert ocr_score(recognised, target) == pytest.approx(expected)


def test_target_is_the_first_quoted_text():
    assert quoted_target('New York with "Hello World" in fireworks and "more"') == "Hello World"
    assert quoted_target("no quotes") is None and quoted_target('one " only') is None


def test_reward_with_an_engine_that_reads_and_one_that_fails():
    image = np.zeros((8, 8, 3))
    sample = {"prompt": 'a shop sign that says "OPEN 24h"'}
    assert OcrReward(lambda _: "open 24 h")([image], [sample])[0].score == 1.0

    def broken(_):
        raise RuntimeError("paddle crashed")

    result = OcrReward(broken)([image], [sample])[0]
    assert result.score == 0.0 and result.components["ocr_failed"] == 1.0
    unscorable = OcrReward(lambda _: "")([image], [{"prompt": "no quoted text"}])[0]
    assert unscorable.score is None and "no quoted text" in unscorable.error


def _tiny_clip(tmp_path):
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    from tests.domains.image.conftest import tiny_clip_tokenizer

    torch.manual_seed(0)
    config = CLIPConfig(text_config={"hidden_size": 32, "intermediate_size": 37, "num_attention_heads": 4,
                                     "num_hidden_layers": 1, "vocab_size": 60, "max_position_embeddings": 16},
                        vision_config={"hidden_size": 32, "intermediate_size": 37, "num_attention_heads": 4,
                                       "num_hidden_layers": 1, "image_size": 32, "patch_size": 8}, projection_dim=16)
    processor = CLIPProcessor(CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
                              tiny_clip_tokenizer(tmp_path / "tok"))
    return CLIPModel(config).eval(), processor


def test_pickscore_and_clipscore_follow_their_formulas(tmp_path):
    from domains.image.scorers import ClipScore, PickScore

    model, processor = _tiny_clip(tmp_path)
    images = [np.random.default_rng(i).random((32, 32, 3)) for i in range(2)]
    samples = [{"prompt": "a red square"}, {"prompt": "a blue circle"}]
    pick = PickScore(model=model, processor=processor)(images, samples)
    scale = float(model.logit_scale.exp())
    assert all(r.score == pytest.approx(scale * r.components["cosine"] / 26) for r in pick)
    clip = ClipScore(model=model, processor=processor)(images + ["not an image"], samples + samples[:1])
    assert all(r.score == pytest.approx(2.5 * max(r.components["cosine"], 0)) for r in clip[:2])
    assert clip[2].score == 0.0 and clip[2].error
