"""Perception rewards against numbers the authors' own code computed (golden/perception.json).

Made by golden/make_perception_golden.py, which runs the authors' functions unchanged:
om-ai-lab/VLM-R1 @ 90052f47 (``src/open-r1-multimodal/src/open_r1/vlm_modules/qwen_module.py``,
``.../open_r1/grpo_jsonl.py``), Liuziyu77/Visual-RFT @ 94866331 (``src/virft/src/open_r1/grpo.py``),
jefferyZhan/Griffon @ 9866875e (``Vision-R1/vision_r1/visionr1_qwen.py``, ``griffon/coor_utils.py``),
ding523/Curr_REFT @ f123433e (``.../open_r1/Stage1_judge_math_resize.py``, ``Stage2_choice_math_resize.py``),
GenuineWWD/SCS @ 7014027d (``openrlhf/models/remote_rm/option_verifier_cut_response.py``),
yfzhang114/r1_reward @ 3693413a (``openrlhf/models/remote_rm/math_verifier_mllm.py``).
"""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest

from domains.perception.rewards import R1Reward, VisualRftReward, VlmR1Fuzzy, VlmR1RecIoU
from domains.perception.text import indel_ratio
from domains.perception.vision_r1 import VisionR1Format, VisionR1Precision, VisionR1Recall
from rewards.base import RewardSample, get

GOLDEN = json.loads((Path(__file__).parent / "golden" / "perception.json").read_text())
VLM_R1, RFT, VR1, R1R = GOLDEN["vlm_r1"], GOLDEN["visual_rft"], GOLDEN["vision_r1"], GOLDEN["r1_reward"]


def one(reward, text, target, meta=None):
    [result] = reward([text], [RewardSample(target=target, meta=meta or {})])
    return result


@pytest.mark.parametrize("case", VLM_R1["rec_iou"], ids=range(len(VLM_R1["rec_iou"])))
def test_vlm_r1_rec_iou_matches_authors(case):
    text, gt, size, seen, expected = case
    result = one(VlmR1RecIoU(), text, {"bbox": gt, "image_size": size, "resized_size": seen})
    assert result.score == pytest.approx(expected, abs=1e-12)


def test_vlm_r1_rec_iou_computes_the_resized_frame_with_smart_resize():
    # 640x480 at VLM-R1's pixel limits is seen as 644x476 (the frame the golden rows pass explicitly).
    text, gt, size, seen, expected = VLM_R1["rec_iou"][0]
    assert seen == [644, 476]
    assert one(VlmR1RecIoU(), text, {"bbox": gt, "image_size": size}).score == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("name", "key"), [("vlm-r1-rec-format", "rec_format"), ("vlm-r1-format", "format")])
def test_vlm_r1_format_variants_match_authors(name, key):
    reward = get(name)
    for text, expected in VLM_R1[key]:
        assert one(reward, text, {}).score == expected, text


@pytest.mark.parametrize("case", VLM_R1["text"], ids=range(len(VLM_R1["text"])))
def test_vlm_r1_all_match_and_fuzzy_match_authors(case):
    completion, reference, all_match, default, default_without_math_verify = case
    assert one(get("vlm-r1-all-match"), completion, {"answer": reference}).score == all_match
    assert one(VlmR1Fuzzy(), completion, {"answer": reference}).score == pytest.approx(default, abs=1e-12)
    without = one(VlmR1Fuzzy(math_verify=False), completion, {"answer": reference}).score
    assert without == pytest.approx(default_without_math_verify, abs=1e-12)


def test_math_verify_step_matters_in_the_goldens():
    """The switch is not cosmetic: at least one authors' case changes without the math_verify step."""
    assert any(row[3] != row[4] for row in VLM_R1["text"])
    assert any(row[2:4] != row[4:6] for row in RFT)


def test_indel_ratio_is_levenshtein_ratio():
    # Levenshtein.ratio values: 2 * LCS / (len(a) + len(b)).
    assert indel_ratio("", "") == 1.0
    assert indel_ratio("abc", "") == 0.0
    assert indel_ratio("kitten", "sitting") == pytest.approx(2 * 4 / 13)


@pytest.mark.parametrize("math_verify", [True, False], ids=["authors", "without-math-verify"])
@pytest.mark.parametrize("case", RFT, ids=range(len(RFT)))
def test_visual_rft_iou_and_confidence_match_authors(case, math_verify):
    text, gt, iou, conf, iou_off, conf_off = case
    target = {"objects": [{"bbox": b} for b in gt]}
    expected = (iou, conf) if math_verify else (iou_off, conf_off)
    got = (one(VisualRftReward("iou", math_verify), text, target).score,
           one(VisualRftReward("confidence", math_verify), text, target).score)
    assert got == pytest.approx(expected, abs=1e-12)


def _vr1_target(sol, size, seen):
    return {"objects": [{"label": lab, "bbox": box} for lab, box in sol], "image_size": size,
            "resized_size": seen, "label_ids": VR1["ids"]}


@pytest.mark.parametrize("case", VR1["cases"], ids=range(len(VR1["cases"])))
def test_vision_r1_rewards_match_authors_at_each_threshold_stage(case):
    text, sol, size, seen, *scores, fmt = case
    target = _vr1_target(sol, size, seen)
    for step, (precision, recall) in zip((None, 10, 2000), zip(scores[::2], scores[1::2])):
        meta = {} if step is None else {"step": step}
        assert one(VisionR1Precision(), text, target, meta).score == pytest.approx(precision, abs=2e-6), step
        assert one(VisionR1Recall(), text, target, meta).score == pytest.approx(recall, abs=2e-6), step
    assert one(VisionR1Format(), text, target).score == fmt


@pytest.mark.parametrize("case", VR1["empty"], ids=range(len(VR1["empty"])))
def test_vision_r1_on_images_without_objects(case):
    text, fmt, precision = case
    target = _vr1_target([], [640, 480], [640, 480])
    assert one(VisionR1Format(), text, target).score == fmt
    assert one(VisionR1Precision(), text, target, {"step": 10}).score == precision


def test_vision_r1_detections_on_empty_image_score_zero_with_reason():
    # Upstream raises here (torch.cat of no ground-truth boxes / division by zero objects).
    target = _vr1_target([], [640, 480], [640, 480])
    text = '[{"bbox_2d": [1, 2, 30, 40], "label": "cat"}]'
    for reward in (VisionR1Precision(), VisionR1Recall()):
        result = one(reward, text, target, {"step": 10})
        assert result.score == 0.0 and "no objects" in result.error


@pytest.mark.parametrize("case", R1R, ids=range(len(R1R)))
def test_r1_reward_matches_authors(case):
    response, answers, consistency, fmt, acc, total = case
    result = one(R1Reward(), response, {"answer": answers[0], "consistency": consistency})
    assert (result.components["format"], result.components["accuracy"]) == (fmt, acc)
    assert result.score == pytest.approx(total, abs=1e-12)


def verify_math_reward(content, sols, compare):
    """yfzhang114/r1_reward@3693413:openrlhf/models/remote_rm/math_verifier_mllm.py:105-132, ported with its two
    verifiers (evaluate_math, math_verify) as one ``compare`` and the answer prefixes left out."""
    try:
        for sol in sols:
            sol_match = re.search(r"<answer>(.*?)</answer>", sol, re.DOTALL)
            ground_truth = sol_match.group(1).strip() if sol_match else sol.strip()
            content_match = re.search(r"<answer>(.*?)</answer>", content, re.DOTALL)
            student_answer = content_match.group(1).strip() if content_match else content.strip()
            if compare(student_answer, ground_truth):
                reward = 1.0
                break
            else:
                reward = 0.0
    except Exception:
        reward = 1.0
    return reward


@pytest.mark.parametrize("answer", ["1", "2", "oops"])
def test_r1_reward_scores_a_verifier_exception_as_upstream(answer):
    def fragile(said, truth):  # a verifier that fails on what it cannot read, as math parsing can
        return int(said) == int(truth)

    text = f"<think>a</think><answer>{answer}</answer>"
    result = one(R1Reward(verifier=fragile), text, {"answer": "<answer>2</answer>"})
    assert result.components["accuracy"] == verify_math_reward(text, ["<answer>2</answer>"], fragile)
    assert (result.error is not None) == (answer == "oops")


def test_r1_reward_judge_and_bad_consistency():
    reward = R1Reward(judge=lambda text: -1)
    assert one(reward, "<think>a</think><answer>2</answer>", {"answer": "2"}).score == pytest.approx(1.0)
    with pytest.raises(ValueError, match="consistency"):
        one(R1Reward(), "<think>a</think><answer>2</answer>", {"answer": "2", "consistency": 3})


@pytest.mark.parametrize("name", ["vlm-r1-rec", "visual-rft-detection", "vision-r1", "r1-reward"])
def test_registered_rewards_name_missing_targets(name):
    with pytest.raises(KeyError):
        get(name)(["<think>a</think><answer>1</answer>"], [RewardSample(target={})])


@pytest.mark.parametrize("name", ["vlm-r1-rec-format", "vlm-r1-format", "visual-rft-iou", "vision-r1-precision"])
def test_rewards_pickle_to_an_equal_reward(name):
    reward = get(name)
    copy = pickle.loads(pickle.dumps(reward))
    assert copy == reward
    assert one(copy, "<think>a</think><answer>[1, 2, 3, 4]</answer>", {"objects": [], "image_size": [9, 9]}).ok


def test_vlm_r1_rec_iou_rejects_bad_image_size():
    with pytest.raises(ValueError, match="image_size"):
        one(VlmR1RecIoU(), "<answer>[1, 2, 3, 4]</answer>", {"bbox": [1, 2, 3, 4], "image_size": [0, 10]})


def test_trl_call_passes_the_global_step_that_raises_vision_r1_thresholds():
    from types import SimpleNamespace

    from rewards.adapters import to_trl

    text, sol, size, seen, *scores, _ = VR1["cases"][10]  # precision 0.8834 before step 1500, 0.9208 after
    target = _vr1_target(sol, size, seen)
    fn = to_trl("vision-r1-precision")
    early = fn(["p"], [text], target=[target], trainer_state=SimpleNamespace(global_step=10))
    late = fn(["p"], [text], target=[target], trainer_state=SimpleNamespace(global_step=2000))
    assert early[0] == pytest.approx(scores[2], abs=2e-6) and late[0] == pytest.approx(scores[4], abs=2e-6)
    assert early[0] != late[0]


@pytest.mark.parametrize("case", GOLDEN["scs"], ids=range(len(GOLDEN["scs"])))
def test_scs_reward_matches_authors(case):
    response, answer, resampled, fmt, acc, consistency, total = case
    result = one(get("scs-mcq"), response, {"answer": answer}, {"scs_resampled": resampled})
    assert (result.components["format"], result.components["accuracy"]) == (fmt, acc)
    assert result.components["consistency"] == pytest.approx(consistency, abs=1e-12)
    assert result.score == pytest.approx(total, abs=1e-12)


def test_scs_reward_needs_the_resampled_trajectories():
    with pytest.raises(KeyError, match="scs_resampled"):
        one(get("scs-mcq"), "<think>x</think><answer>B</answer>", {"answer": "B"})


CURR = GOLDEN["curr_reft"]


@pytest.mark.parametrize(("name", "case"), [("curr-reft-judge", c) for c in CURR["judge"]]
                         + [("curr-reft-choice", c) for c in CURR["choice"]]
                         + [("curr-reft-open", c) for c in CURR["open"]])  # fmt: skip
def test_curr_reft_stage_accuracy_matches_authors(name, case):
    text, solution, task, expected = case
    assert one(get(name), text, {"answer": solution, "task": task}).score == expected


@pytest.mark.parametrize("case", CURR["format"], ids=range(len(CURR["format"])))
def test_curr_reft_format_matches_authors(case):
    text, task, expected = case
    assert one(get("curr-reft-format"), text, {"task": task}).score == expected


def test_curr_reft_dispatches_on_the_curriculum_stage():
    judge = {"answer": "<answer>yes</answer>", "stage": "judge"}
    choice = {"answer": "<answer>B</answer>", "stage": "choice"}
    assert one(get("curr-reft"), "<think>t</think><answer>yes</answer>", judge).score == 1.0
    assert one(get("curr-reft"), "<think>t</think><answer>B</answer>", choice).components["is_choice"] == 1.0
    opened = {"answer": "<answer>cat dog</answer>", "task": "classify", "stage": "open"}
    result = one(get("curr-reft"), "<think>t</think><answer>cat</answer>", opened)
    assert result.score == 0.5 and result.components["is_open"] == 1.0  # {cat} of {cat, dog}
    with pytest.raises(ValueError, match="stage 'final'"):
        one(get("curr-reft"), "<answer>x</answer>", {"answer": "x", "stage": "final"})


def test_curr_reft_open_names_what_it_cannot_score():
    vqa = one(get("curr-reft-open"), "<answer>a dog</answer>", {"answer": "<answer>a dog</answer>", "task": "coco_vqa"})
    assert vqa.score is None and "GTE" in vqa.error
    # the stage-3 math fallback: two tagged answers with no option letter agree, whatever they say
    text_match = one(get("curr-reft-open"), "<answer>17</answer>", {"answer": "<answer>71</answer>", "task": "math"})
    assert text_match.components == {"iou": 0.0, "items_overlap": 0.0, "math_verify": 0.0, "text_match": 1.0}
