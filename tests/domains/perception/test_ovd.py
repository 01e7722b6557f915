"""VLM-R1's OVD rewards and OVDEval's NMS-AP against numbers the authors' own code computed.

golden/perception.json sections ``ovd`` and ``ovdeval``, made by golden/make_perception_golden.py from
om-ai-lab/VLM-R1 @ 90052f478646e38bc67363862f699b7afca6b337
(``src/open-r1-multimodal/src/open_r1/grpo_jsonl.py``: ``calculate_map``, ``map_reward``, ``od_reward``,
``odLength_reward``, run on the repository's vendored ``open_r1/utils/pycocotools``) and
om-ai-lab/OVDEval @ 2ba0aa95bf71988207599d7b78cf0005ea6c9e19 (``eval.py``: ``nms_threaded``, ``cal_map``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from domains.perception.ovd import nms_with_ground_truth, ovdeval_scores
from rewards.base import RewardSample, get

GOLDEN = json.loads((Path(__file__).parent / "golden" / "perception.json").read_text())
SIZE = {"image_size": [2048, 2048], "resized_size": [2048, 2048]}  # the model's frame is the image's


def target_of(gt):
    return {"objects": [{"bbox": o["bbox_2d"], "label": o["label"]} for o in gt], **SIZE}


def score(name, text, target):
    [result] = get(name)([text], [RewardSample(target=target)])
    return result


@pytest.mark.parametrize("case", GOLDEN["ovd"], ids=range(len(GOLDEN["ovd"])))
def test_ovd_rewards_match_vlm_r1(case):
    text, gt, od_ap, od_ap50, od_length = case
    target = target_of(gt)
    assert score("vlm-r1-ovd-ap", text, target).score == pytest.approx(od_ap, abs=1e-12)
    assert score("vlm-r1-ovd-ap50", text, target).score == pytest.approx(od_ap50, abs=1e-12)
    assert score("vlm-r1-ovd-length", text, target).score == pytest.approx(od_length, abs=1e-12)


def test_ovd_reward_maps_predictions_from_the_model_frame():
    # a 300x200 image the model saw as 150x100: the same boxes written at half scale score the same
    gt = [{"bbox_2d": [30, 20, 120, 100], "label": "cup"}, {"bbox_2d": [150, 40, 270, 180], "label": "cup"}]
    half = [{"bbox_2d": [v / 2 for v in o["bbox_2d"]], "label": o["label"]} for o in gt]
    text = "<think>x</think><answer>```json\n" + json.dumps(half) + "\n```</answer>"
    target = {"objects": [{"bbox": o["bbox_2d"], "label": o["label"]} for o in gt], "image_size": [300, 200],
              "resized_size": [150, 100]}  # fmt: skip
    assert score("vlm-r1-ovd-ap", text, target).score == pytest.approx(1.0)
    assert score("vlm-r1-ovd-ap", text, {**target, "resized_size": [300, 200]}).score < 0.1


def test_ovd_composite_adds_the_format_reward():
    text, gt = GOLDEN["ovd"][0][:2]
    result = score("vlm-r1-ovd", text, target_of(gt))
    assert result.score == pytest.approx(2.0)  # odLength 1 + format 1


def test_ovdeval_nms_and_ap_match_the_benchmark_script():
    golden = GOLDEN["ovdeval"]
    by_image = {}
    for det in golden["results"]:
        by_image.setdefault(det["image_id"], []).append(det)
    kept = [d for image, dets in by_image.items()
            for d in nms_with_ground_truth([a for a in golden["gt"]["annotations"] if a["image_id"] == image], dets)]
    assert kept == golden["after_nms"]
    scores = ovdeval_scores(golden["gt"], golden["results"])
    assert [scores["nms_ap"], scores["ap50"], scores["ap75"]] == pytest.approx(golden["stats"][:3], abs=1e-12)
    assert scores["detections_before_nms"] == 7 and scores["detections_after_nms"] == len(golden["after_nms"])


def test_ovdeval_without_detections_scores_zero():
    assert ovdeval_scores(GOLDEN["ovdeval"]["gt"], [])["nms_ap"] == 0.0
