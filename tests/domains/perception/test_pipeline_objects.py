"""Detections from a perception pipeline come back in the pixels of the caller's (non-square) image.

The model writes boxes in the frame it saw (Qwen2.5-VL: the smart-resized image, read back from the
processor's ``image_grid_thw``); :class:`zoo.pipelines.vlm.VLMPipeline` maps ``objects`` as it maps
``bbox`` (:func:`zoo_common.coords.to_original`). The tiny model's ``generate`` is replaced by one that
writes a fixed answer, so the whole public call path runs (resize, processor, decode, parse, map).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

import zoo
from zoo.hub import ResolvedModel
from zoo.pipelines.vlm import VLMPipeline
from zoo.tiny import build_tiny_vlm

MODEL_BOXES = [{"bbox_2d": [28, 14, 84, 42], "label": "red square"}, {"bbox_2d": [0, 0, 56, 28], "label": "cup"}]
ANSWER = "<think>two things</think><answer>```json\n" + json.dumps(MODEL_BOXES) + "\n```</answer>"


@pytest.fixture(scope="module")
def pipe() -> VLMPipeline:
    model, processor = build_tiny_vlm("qwen2_5_vl", corpus=[ANSWER])
    tokenizer = processor.tokenizer
    answer_ids = torch.tensor([tokenizer(ANSWER, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]])

    def writes_the_answer(input_ids, **kwargs):
        return torch.cat([input_ids, answer_ids.expand(input_ids.shape[0], -1)], dim=1)

    model.generate = writes_the_answer
    return VLMPipeline(model, processor, zoo.info("vlm-r1-ovd-3b"), ResolvedModel("/nonexistent", "local", "local"))


def test_detected_objects_are_mapped_to_original_pixels_per_axis(pipe):
    image = Image.fromarray(np.random.default_rng(0).integers(0, 255, (130, 300, 3), dtype=np.uint8))  # 300 x 130
    pred = pipe(image, "detect red square, cup")
    assert pred.parse_error is None, pred.text
    seen_w, seen_h = pred.extra["model_frame_size"]
    assert seen_w / seen_h != pytest.approx(300 / 130)  # the resize changed the aspect ratio: x and y scale differ
    sx, sy = 300 / seen_w, 130 / seen_h
    expected = [[b["bbox_2d"][0] * sx, b["bbox_2d"][1] * sy, b["bbox_2d"][2] * sx, b["bbox_2d"][3] * sy] for b in MODEL_BOXES]
    assert [o["bbox"] for o in pred.objects] == [pytest.approx(e) for e in expected]
    assert [o["label"] for o in pred.objects] == ["red square", "cup"]
    assert "objects_frame" not in pred.extra


def test_batched_images_of_different_sizes_each_get_their_own_scale(pipe):
    small = Image.new("RGB", (60, 200), (10, 20, 30))
    wide = Image.new("RGB", (400, 90), (10, 20, 30))
    preds = pipe([small, wide], "detect red square, cup")
    for pred, (width, height) in zip(preds, [(60, 200), (400, 90)]):
        seen_w, seen_h = pred.extra["model_frame_size"]
        assert pred.objects[0]["bbox"] == pytest.approx([28 * width / seen_w, 14 * height / seen_h,
                                                          84 * width / seen_w, 42 * height / seen_h])  # fmt: skip
