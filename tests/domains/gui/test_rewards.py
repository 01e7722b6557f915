"""GUI rewards against the numbers the authors' code computes (tests/domains/gui/golden_cases.py).

Sources: Yuqi-Zhou/GUI-G1 ``src/open-r1-multimodal/src/open_r1/grpo_rec.py`` and X-PLUG/MobileAgent
``UI-S1/verl/utils/reward_score/gui_traj.py`` + ``gui_utils/utils.py``.
"""

from __future__ import annotations

import pickle

import pytest

from domains.gui.rewards import (
    GuiG1Reward,
    UiS1Reward,
    check_action_match,
    gui_g1_components,
    swipe_direction,
    ui_s1_score,
)
from rewards.base import RewardSample, get
from tests.domains.gui.golden_cases import G1_CASES, S1_CASES, S1_SIZE
from zoo.data import Sample

SIZE = (S1_SIZE["width"], S1_SIZE["height"])
RESIZED = (S1_SIZE["resized_width"], S1_SIZE["resized_height"])


@pytest.mark.parametrize("case", G1_CASES, ids=range(len(G1_CASES)))
def test_gui_g1_matches_authors_code(case):
    text, gt, size, hit, iou, box = case
    result = gui_g1_components(text, gt, size)
    assert result.components["hit"] == pytest.approx(hit, abs=1e-12)
    assert result.components["iou"] == pytest.approx(iou, abs=1e-12)
    assert result.components["box"] == pytest.approx(box, abs=1e-12)
    assert result.score == pytest.approx(hit + iou + box, abs=1e-12)


def test_gui_g1_reward_object_and_registry():
    reward = get("gui-g1")
    assert isinstance(reward, GuiG1Reward)
    sample = Sample("s", target={"bbox": [100, 50, 180, 90], "image_size": [1920, 1080]})
    [res] = reward(['[{"bbox_2d": [100, 50, 180, 90]}]'], [sample])
    assert res.score == pytest.approx(1.375)
    [bad] = reward(["no box here"], [sample])
    assert bad.score == 0.0 and "parse failure" in bad.error
    assert pickle.loads(pickle.dumps(reward)) == reward


def test_gui_g1_model_frame_scales_ground_truth_into_resized_frame():
    target = {"bbox": [100, 50, 180, 90], "image_size": [1000, 500], "resized_size": [500, 250]}
    text = '[{"bbox_2d": [50, 25, 90, 45]}]'  # the same box, written in the half-size frame
    [as_paper] = GuiG1Reward()([text], [RewardSample(target)])
    [scaled] = GuiG1Reward(model_frame=True)([text], [RewardSample(target)])
    assert as_paper.components["hit"] == 0.0
    assert scaled.components["hit"] == 1.0 and scaled.components["iou"] == pytest.approx(0.25 * 0.925, abs=0.02)


def test_gui_g1_rejects_bad_target():
    with pytest.raises(ValueError, match="image_size"):
        GuiG1Reward()(["x"], [RewardSample({"bbox": [0, 0, 1, 1]})])


@pytest.mark.parametrize("case", S1_CASES, ids=range(len(S1_CASES)))
def test_ui_s1_matches_authors_code(case):
    text, check, steps, score, fmt, type_match, extract_match, step_reward = case
    result = ui_s1_score(text, check, SIZE, RESIZED, steps)
    assert result.score == pytest.approx(score, abs=1e-12)
    assert result.components["format"] == fmt
    assert result.components["type_match"] == float(type_match)
    assert result.components["extract_match"] == float(extract_match)
    assert result.components["step_reward"] == pytest.approx(step_reward)


def test_ui_s1_reward_reads_verl_extra_info_from_meta():
    """verl hands width/height/resized_* as extra_info, which the hook puts in ``meta``."""
    text, check, steps, score, *_ = S1_CASES[0]
    sample = RewardSample(target={"check_options": check, "num_steps": steps}, meta=S1_SIZE)
    [res] = get("ui-s1")([text], [sample])
    assert res.score == pytest.approx(score)


def test_ui_s1_resized_size_defaults_to_authors_limits():
    # 1080x2400 under UI-S1's limits (factor 28, <= 12800 tokens) resizes to 1092x2408.
    text, check, steps, score, *_ = S1_CASES[1]
    target = {"check_options": check, "num_steps": steps, "image_size": [1080, 2400]}
    [res] = UiS1Reward()([text], [RewardSample(target)])
    assert res.score == pytest.approx(score)


def test_ui_s1_box_lists_option_normalises_every_candidate():
    """Upstream's training reward leaves a list of boxes in pixels (golden case above); the
    evaluation script normalises each box, which ``box_lists=True`` reproduces."""
    check = {"action": "click", "coordinate": [540, 1200], "candidate_bbox": [[0, 0, 100, 100], [0, 0, 10, 10]]}
    pred = {"action": "click", "coordinate": [300, 30]}  # 0.27 of the width: outside box 1 once normalised
    assert check_action_match(pred, check, SIZE, RESIZED) == (True, True)
    assert check_action_match(pred, check, SIZE, RESIZED, box_lists=True) == (True, False)
    pred_in = {"action": "click", "coordinate": [50, 50]}
    assert check_action_match(pred_in, check, SIZE, RESIZED, box_lists=True) == (True, True)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [((0, 0), (5, 1), "right"), ((5, 0), (0, 1), "left"), ((0, 0), (1, 5), "down"), ((0, 5), (1, 0), "up"),
     ((0, 0), (3, 3), "down"), ((0, 0), (0, 0), "up")],
)  # fmt: skip
def test_swipe_direction_ties_go_vertical(start, end, expected):
    assert swipe_direction(start, end) == expected


def test_ui_s1_needs_check_options():
    with pytest.raises(ValueError, match="check_options"):
        UiS1Reward()(["<action>{}</action>"], [RewardSample({"image_size": [10, 10]})])


def test_verl_hook_gui_g1_takes_raw_text_and_original_pixel_truth():
    from rewards.verl_hook import compute_score

    text, gt, size, hit, iou, box = G1_CASES[1]
    out = compute_score("gui-g1", text, {"bbox": gt, "image_size": size})
    assert out["score"] == pytest.approx(hit + iou + box)
    assert (out["hit"], out["iou"], out["box"]) == pytest.approx((hit, iou, box))


def test_verl_hook_ui_s1_with_authors_extra_info():
    from rewards.verl_hook import compute_score

    text, check, steps, score, *_ = S1_CASES[13]
    out = compute_score("ui-s1", text, {"check_options": check, "num_steps": steps}, extra_info=dict(S1_SIZE))
    assert out["score"] == pytest.approx(score)


def test_trl_adapter_scores_completions_from_target_column():
    import json

    from rewards.adapters import to_trl

    fn = to_trl("gui-g1", target_column="target_json")
    target = json.dumps({"bbox": [100, 50, 180, 90], "image_size": [1920, 1080]})
    scores = fn(prompts=["p", "p"], completions=[[{"role": "assistant", "content": '[{"bbox_2d": [100, 50, 180, 90]}]'}],
                                                  [{"role": "assistant", "content": "nothing"}]],
                target_json=[target, target])  # fmt: skip
    assert scores == pytest.approx([1.375, 0.0])
