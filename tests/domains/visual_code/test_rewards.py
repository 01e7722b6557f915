"""The domain's registered rewards: names, and the zoo's Visual Programmability reward by hand."""

import pytest

import rewards
import zoo.domains  # noqa: F401  (its discovery hook registers the domains' rewards)
from rewards.base import RewardSample


def test_registered_names():
    for name in ("msrl-chart", "svg-dino", "rlrf-svg", "visual-programmability"):
        assert name in rewards.list()


@pytest.mark.parametrize(("text", "score", "parts"), [
    # code pathway, right answer, right decision, 2 of 3 data values in the block: 1 + 0.5 + 0.5 * 2/3
    ("<mode>code</mode>```python\ndata = [10, 20.5, 99]\n```<answer>30.5</answer>", 1 + 0.5 + 1 / 3,
     {"answer": 1.0, "decision": 1.0, "data": 2 / 3}),
    # direct pathway where code was best, wrong answer
    ("<mode>direct</mode><answer>12</answer>", 0.0, {"answer": 0.0, "decision": 0.0, "data": 0.0}),
    ("<answer>30.5</answer>", 0.0, {"answer": 0.0, "decision": 0.0, "data": 0.0}),  # no mode: parse error
])
def test_visual_programmability_by_hand(text, score, parts):
    target = {"answer": "30.5", "best_mode": "code", "data": [10, 20, 30]}
    (result,) = rewards.get("visual-programmability")([text], [RewardSample(target=target)])
    assert result.score == pytest.approx(score) and result.components == pytest.approx(parts)
