"""Grounding and GUI action rewards on hand-made outputs."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rewards import RewardSample
from rewards.action import ActionMatch, token_f1
from rewards.grounding import BoxIoU, PointInBox, box_from_text, iou, point_in_box, to_pixels


def one(reward, prediction, target):
    return reward([prediction], [RewardSample(target=target)])[0]


def test_iou_and_point_in_box() -> None:
    assert iou([0, 0, 10, 10], [0, 0, 10, 10]) == 1.0
    assert iou([0, 0, 10, 10], [5, 0, 15, 10]) == pytest.approx(50 / 150)
    assert iou([0, 0, 10, 10], [20, 20, 30, 30]) == 0.0
    assert iou([10, 10, 0, 0], [0, 0, 10, 10]) == 1.0  # corners in either order
    assert iou([0, 0, 0, 0], [0, 0, 0, 0]) == 0.0
    assert point_in_box([10, 5], [0, 0, 10, 10]) and not point_in_box([11, 5], [0, 0, 10, 10])


@pytest.mark.parametrize("text", [
    '```json\n[{"bbox_2d": [10, 20, 30, 40], "label": "cat"}]\n```',
    '{"bbox_2d": [10, 20, 30, 40]}',
    "[10, 20, 30, 40]",
    "<|box_start|>(10,20),(30,40)<|box_end|>",
    "<box>(10, 20), (30, 40)</box>",
])
def test_box_from_text_qwen_formats(text: str) -> None:
    assert box_from_text(text) == [10, 20, 30, 40]


def test_relative_frames() -> None:
    assert box_from_text("[100, 500, 200, 1000]", "relative-1000", (640, 480)) == [64, 240, 128, 480]
    assert to_pixels([0.5, 0.5], "relative-1", (100, 50)) == [50, 25]
    with pytest.raises(ValueError, match="needs the image size"):
        to_pixels([1, 2], "relative-1000", None)


def test_box_iou_reward() -> None:
    target = {"bbox": [0, 0, 10, 10]}
    result = one(BoxIoU(), '<answer>{"bbox_2d": [5, 0, 15, 10]}</answer>', target)
    assert result.score == pytest.approx(1 / 3) and result.components["iou"] == pytest.approx(1 / 3)
    assert one(BoxIoU(threshold=0.5), "[0, 0, 9, 10]", target).score == 1.0
    bad = one(BoxIoU(), "a cat somewhere", target)
    assert bad.score == 0.0 and "no box" in bad.error and bad.components == {"iou": 0.0}
    parsed = SimpleNamespace(text="ignored", bbox=[0, 0, 10, 10])
    assert one(BoxIoU(), parsed, target).score == 1.0


def test_point_in_box_reward() -> None:
    target = {"bbox": [100, 100, 200, 150], "image_size": [1000, 500]}
    assert one(PointInBox(), '{"point_2d": [150, 120]}', target).score == 1.0
    assert one(PointInBox(), '{"bbox_2d": [140, 110, 160, 130]}', target).score == 1.0  # box centre
    assert one(PointInBox(frame="relative-1000"), "[150, 250]", target).score == 1.0  # (150, 125) px
    miss = one(PointInBox(), "[10, 10]", target)
    assert miss.score == 0.0 and "outside" in miss.error


def test_action_match() -> None:
    reward = ActionMatch()
    target = {"action": {"action": "click", "coordinate": [100, 200]}}
    assert one(reward, '<answer>{"action": "click", "coordinate": [105, 203]}</answer>', target).score == 1.0
    far = one(reward, '{"action": "click", "coordinate": [300, 300]}', target)
    assert far.score == 0.5 and far.components == {"type_match": 1.0, "args_match": 0.0}
    wrong = one(reward, '{"action": "scroll", "direction": "down"}', target)
    assert wrong.score == 0.0 and "scroll" in wrong.error
    boxed = {"action": {"action": "click", "coordinate": [0, 0]}, "bbox": [250, 250, 350, 350]}
    assert one(reward, '{"action": "click", "coordinate": [300, 300]}', boxed).score == 1.0
    typed = {"action": {"action_type": "type", "text": "hello world"}}
    assert one(reward, '{"action_type": "TYPE", "text": "Hello world!"}', typed).score == 1.0
    assert one(reward, '{"action_type": "type", "text": "goodbye"}', typed).score == 0.5
    assert "no type field" in one(reward, '{"coordinate": [1, 2]}', target).error
    assert token_f1("x y z", "x y w") == pytest.approx(2 / 3)
