"""The REC rewards of the released VLM-R1 checkpoint's code, against that code.

``_reference_iou_reward`` and ``_reference_format_reward`` are om-ai-lab/VLM-R1@ec920b2:
src/open-r1-multimodal/src/open_r1/grpo_rec.py:227-280 (``iou_reward`` and ``format_reward``), transcribed with the
debug logging left out; the cases cover every branch of theirs (multi-line answers, decimals, negatives, zero-area
boxes, the 0.5 threshold, text around the answer).
"""

from __future__ import annotations

import re

import pytest

from rewards import base as rewards_base
from zoo.domains import load_rewards


def _reference_iou_reward(completions: list, solution: list) -> list[float]:
    def iou(box1, box2):
        inter_x1 = max(box1[0], box2[0])
        inter_y1 = max(box1[1], box2[1])
        inter_x2 = min(box1[2] - 1, box2[2] - 1)
        inter_y2 = min(box1[3] - 1, box2[3] - 1)
        if inter_x1 < inter_x2 and inter_y1 < inter_y2:
            inter = (inter_x2 - inter_x1 + 1) * (inter_y2 - inter_y1 + 1)
        else:
            inter = 0
        union = (box1[2] - box1[0]) * (box1[3] - box1[1]) + (box2[2] - box2[0]) * (box2[3] - box2[1]) - inter
        return float(inter) / union

    contents = [completion[0]["content"] for completion in completions]
    rewards = []
    answer_tag_pattern = r"<answer>(.*?)</answer>"
    bbox_pattern = r"\[(\s*-?\d*\.?\d+\s*),\s*(\s*-?\d*\.?\d+\s*),\s*(\s*-?\d*\.?\d+\s*),\s*(\s*-?\d*\.?\d+\s*)\]"
    for content, sol in zip(contents, solution):
        reward = 0.0
        try:
            content_answer_match = re.search(answer_tag_pattern, content)
            if content_answer_match:
                content_answer = content_answer_match.group(1).strip()
                bbox_match = re.search(bbox_pattern, content_answer)
                if bbox_match:
                    bbox = [int(bbox_match.group(i)) for i in (1, 2, 3, 4)]
                    if iou(bbox, sol) > 0.5:
                        reward = 1.0
        except Exception:
            pass
        rewards.append(reward)
    return rewards


def _reference_format_reward(completions: list) -> list[float]:
    pattern = r"<think>.*?</think>\s*<answer>.*?\{.*\[\d+,\s*\d+,\s*\d+,\s*\d+\].*\}.*?</answer>"
    matches = [re.fullmatch(pattern, completion[0]["content"], re.DOTALL) for completion in completions]
    return [1.0 if match else 0.0 for match in matches]


SOLUTION = [100, 100, 200, 200]
CASES = [
    '<think>the dog</think> <answer>{"bbox_2d": [100, 100, 200, 200]}</answer>',
    '<think>x</think><answer>{"bbox_2d": [110, 105, 205, 198]}</answer>',
    '<think>x</think><answer>{"bbox_2d": [150, 150, 250, 250]}</answer>',  # IoU ~0.14
    '<think>x</think><answer>{"bbox_2d": [100.5, 100, 200, 200]}</answer>',  # a decimal: int() raises
    '<think>x</think><answer>{"bbox_2d": [-10, 100, 200, 200]}</answer>',  # a negative integer is read
    '<think>x</think><answer>{"bbox_2d":\n[100, 100, 200, 200]}</answer>',  # a line break inside the answer
    '<think>x</think><answer>{"bbox_2d": [5, 5, 5, 5]}</answer>',
    'before <think>x</think><answer>{"bbox_2d": [100, 100, 200, 200]}</answer> after',
    '<answer>[100, 100, 200, 200]</answer>',
    "no answer at all",
    '<think>a\nb</think>\n<answer>{"b": [100, 100, 200, 200]}</answer>',
    '<think>x</think><answer>{"bbox_2d": [100, 100, 170, 170]}</answer>',  # IoU 0.49 on the +1 pixel convention
]


@pytest.fixture(scope="module")
def registered() -> None:
    load_rewards()


@pytest.mark.parametrize("text", CASES)
def test_release_rewards_match_the_released_code(registered: None, text: str) -> None:
    sample = rewards_base.RewardSample(target={"bbox": SOLUTION, "image_size": [640, 480]})
    completions = [[{"role": "assistant", "content": text}]]
    accuracy = rewards_base.get("vlm-r1-rec-release-iou")([text], [sample])[0]
    fmt = rewards_base.get("vlm-r1-rec-release-format")([text], [sample])[0]
    both = rewards_base.get("vlm-r1-rec-release")([text], [sample])[0]
    assert accuracy.score == _reference_iou_reward(completions, [SOLUTION])[0]
    assert fmt.score == _reference_format_reward(completions)[0]
    assert both.score == accuracy.score + fmt.score
    assert (accuracy.error is None) == (accuracy.score == 1.0)


def test_the_cases_reach_every_outcome(registered: None) -> None:
    completions = [[[{"role": "assistant", "content": t}]] for t in CASES]
    iou = [_reference_iou_reward(c, [SOLUTION])[0] for c in completions]
    fmt = [_reference_format_reward(c)[0] for c in completions]
    assert 0 < sum(iou) < len(CASES) and 0 < sum(fmt) < len(CASES)
