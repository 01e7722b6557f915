"""Visual-RFT's LISA reward and metrics against a transcription of the authors' code, and the direct-use entry.

The ``_upstream_*`` functions are Liuziyu77/Visual-RFT@9486633 transcribed line for line (file and lines named on
each); the zoo's versions must agree with them on hand-picked and seeded random cases.
"""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest
from PIL import Image, ImageDraw

import zoo
from domains.perception.lisa import VisualRftLisaGiou, box_iou, lisa_eval_box, mask_overlap, mask_scores, polygon_mask
from domains.perception.lisa_eval import load_lisa_folder, sam_segmenter, score_lisa
from domains.perception.prompts import R1_SYSTEM
from rewards.base import get


def _upstream_compute_giou(gt_bbox, student_bbox):  # src/virft/src/open_r1/grpo_lisa.py:56-89
    x1_gt, y1_gt = gt_bbox[0]
    x2_gt, y2_gt = gt_bbox[1]
    x1_st, y1_st = student_bbox[0]
    x2_st, y2_st = student_bbox[1]
    x1_inter, y1_inter = max(x1_gt, x1_st), max(y1_gt, y1_st)
    x2_inter, y2_inter = min(x2_gt, x2_st), min(y2_gt, y2_st)
    inter_area = max(0, x2_inter - x1_inter) * max(0, y2_inter - y1_inter)
    union_area = (x2_gt - x1_gt) * (y2_gt - y1_gt) + (x2_st - x1_st) * (y2_st - y1_st) - inter_area
    iou = inter_area / union_area if union_area > 0 else 0
    c_area = (max(x2_gt, x2_st) - min(x1_gt, x1_st)) * (max(y2_gt, y2_st) - min(y1_gt, y1_st))
    giou = iou - (c_area - union_area) / c_area if c_area > 0 else iou
    return giou + 1


def _upstream_accuracy(content, sol, math_verify=True):  # grpo_lisa.py:93-134
    from math_verify import parse, verify

    reward = 0.0
    if math_verify:
        try:
            if float(verify(parse(content), parse(sol))) > 0:
                reward = 1.0
        except Exception:  # noqa: BLE001 - upstream's
            pass
    if reward == 0.0:
        sol_match = re.search(r"<answer>(.*?)</answer>", sol)
        ground_truth = sol_match.group(1).strip() if sol_match else sol.strip()
        content_match = re.search(r"<answer>(.*?)</answer>", content, re.DOTALL)
        student_answer = content_match.group(1).strip() if content_match else content.strip()
        try:
            pattern = r"\(\s*(\d+)\s*,\s*(\d+)\s*\)\s*,\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)"
            sm = re.findall(pattern, student_answer)
            student_bbox = [(int(a) / 1000, int(b) / 1000) for a, b, c, d in sm] + [(int(c) / 1000, int(d) / 1000) for a, b, c, d in sm]
            gm = re.findall(pattern, ground_truth)
            gt_bbox = [(int(a) / 1000, int(b) / 1000) for a, b, c, d in gm] + [(int(c) / 1000, int(d) / 1000) for a, b, c, d in gm]
            reward = _upstream_compute_giou(gt_bbox, student_bbox)
        except Exception:  # noqa: BLE001 - upstream's
            reward = 0.0
        if student_answer == ground_truth:
            reward = 2.0
    return reward


def _upstream_box_iou(box_a, box_b):  # lisa_evaluation/Qwen2_VL_lisa_infere.py:70-85
    x_a, y_a = max(box_a[0], box_b[0]), max(box_a[1], box_b[1])
    x_b, y_b = min(box_a[2], box_b[2]), min(box_a[3], box_b[3])
    inter = max(0, x_b - x_a) * max(0, y_b - y_a)
    area_a = (box_a[2] - box_a[0]) * (box_a[3] - box_a[1])
    area_b = (box_b[2] - box_b[0]) * (box_b[3] - box_b[1])
    return inter / float(area_a + area_b - inter + 1e-6)


def _upstream_polygon_to_mask(polygon, size):  # lisa_evaluation/mask_iou.py:8-11 (size = [height, width])
    mask = Image.new("L", (size[1], size[0]), 0)
    ImageDraw.Draw(mask).polygon([tuple(point) for point in polygon], outline=1, fill=1)
    return np.array(mask, dtype=np.uint8)


SOLUTION = "<answer> (100,200),(500,600) </answer>"
COMPLETIONS = [
    "<think>a dog</think>\n<answer>(100,200),(500,600)</answer>",  # the exact text: 2
    "<think>near</think><answer>(120,210),(480,650)</answer>",  # GIoU + 1
    "<think>far</think><answer>(700,700),(900,950)</answer>",  # disjoint: GIoU < 0, + 1
    "<think>two</think><answer>(120,210),(480,650), (10,20),(30,40)</answer>",  # second pair's top-left is corner 2
    "<think>none</think><answer>the left one</answer>",  # no box: 0
    "<answer>\n(100,200),(500,600)\n</answer>",  # multi-line answer: DOTALL on the completion, exact after strip
    "(100, 200), (500, 600)",  # no tags: the whole text, spaces allowed by the pattern
]


@pytest.mark.parametrize("math_verify", [False, True])
def test_lisa_giou_reward_matches_the_authors_accuracy_reward(math_verify):
    reward = VisualRftLisaGiou(math_verify=math_verify)
    rng = random.Random(0)
    cases = [(c, SOLUTION) for c in COMPLETIONS]
    for _ in range(200):
        x1, y1, x2, y2 = (rng.randint(0, 1000) for _ in range(4))
        a1, b1, a2, b2 = (rng.randint(0, 1000) for _ in range(4))
        cases.append((f"<think>t</think><answer>({x1},{y1}),({x2},{y2})</answer>", f"<answer> ({a1},{b1}),({a2},{b2}) </answer>"))
    for content, solution in cases:
        got = reward.score_one(content, {"solution": solution}).score
        assert got == pytest.approx(_upstream_accuracy(content, solution, math_verify)), content


def test_lisa_reward_scores_named_cases_and_is_registered_with_the_format_term():
    reward = VisualRftLisaGiou(math_verify=False)
    scores = [reward.score_one(c, {"solution": SOLUTION}).score for c in COMPLETIONS]
    assert scores[0] == 2.0 and scores[4] == 0.0 and scores[5] == 2.0
    assert 1.0 < scores[1] < 2.0 and 0.0 < scores[2] < 1.0 and scores[3] != scores[1]
    assert get("visual-rft-lisa-giou").name == "visual-rft-lisa-giou"
    combined = get("visual-rft-lisa")  # grpo_lisa.py's default --reward_funcs accuracy format, weight 1 each
    assert [(label, w) for label, _, w in combined.parts] == [("visual-rft-lisa-giou", 1.0), ("vlm-r1-format", 1.0)]
    [result] = combined([COMPLETIONS[0]], [{"solution": SOLUTION}])
    assert result.score == 3.0  # the exact box (2) in the format grpo_lisa.py:147 full-matches (1)


def test_box_metric_reads_the_first_box_and_matches_the_authors_iou():
    assert lisa_eval_box("<think>(1,2),(3,4) first</think><answer>(100,200),(300,400)</answer>") == [0.001, 0.002, 0.003, 0.004]
    assert lisa_eval_box("<answer>[100, 200, 300, 400]</answer>") is None
    rng = np.random.default_rng(0)
    for _ in range(200):
        a, b = np.sort(rng.random((2, 2, 2)), axis=1)  # two boxes of fractions, corners ordered
        box_a, box_b = [a[0, 0], a[0, 1], a[1, 0], a[1, 1]], [b[0, 0], b[0, 1], b[1, 0], b[1, 1]]
        assert box_iou(box_a, box_b) == pytest.approx(_upstream_box_iou(box_a, box_b))


def test_mask_metric_matches_the_authors_gIoU_and_cIoU():
    polygon = [[2.0, 3.0], [30.0, 4.0], [25.0, 20.0], [5.0, 18.0]]
    truth = polygon_mask(polygon, width=40, height=24)
    assert np.array_equal(truth, _upstream_polygon_to_mask(polygon, [24, 40]))
    predicted = np.zeros_like(truth)
    predicted[5:15, 10:35] = 1
    inter, union, iou = mask_overlap(predicted, truth)
    expected = np.logical_and(predicted, truth).sum() / (np.logical_or(predicted, truth).sum() + 1e-6)
    assert iou == pytest.approx(expected) and inter == np.logical_and(predicted, truth).sum()
    empty = mask_overlap(np.zeros_like(truth), truth)
    scores = mask_scores([(inter, union, iou), empty])
    assert scores["giou"] == pytest.approx((iou + 0.0) / 2)  # mask_iou.py:77
    assert scores["ciou"] == pytest.approx(inter / (union + empty[1] + 1e-6))  # mask_iou.py:78
    with pytest.raises(ValueError, match="mask shapes differ"):
        mask_overlap(np.zeros((3, 3)), truth)


def _lisa_folder(tmp_path):
    Image.new("RGB", (100, 50), "white").save(tmp_path / "a.jpg")
    (tmp_path / "a.json").write_text(json.dumps({"text": ["the thing that holds water"], "is_sentence": True,
                                                 "shapes": [{"label": "target", "points": [[10, 5], [60, 5], [60, 40], [10, 40]]}]}))
    (tmp_path / "b.json").write_text(json.dumps({"text": ["no image beside me"], "shapes": [{"points": [[0, 0], [1, 1], [0, 1]]}]}))
    Image.new("RGB", (20, 20)).save(tmp_path / "c.jpg")
    (tmp_path / "c.json").write_text(json.dumps({"text": ["no shapes"], "shapes": []}))
    return tmp_path


def test_lisa_folder_reads_what_visual_rft_reads_and_scores_box_and_mask(tmp_path):
    [sample] = load_lisa_folder(str(_lisa_folder(tmp_path)))  # b has no image, c no shapes: skipped as upstream
    assert sample.prompt == "the thing that holds water" and sample.target["bbox"] == [10.0, 5.0, 60.0, 40.0]
    answers = ["<think>x</think><answer>(100,100),(600,800)</answer>"]
    metrics, rows = score_lisa([sample], answers)
    assert metrics["box_miou"] == pytest.approx(_upstream_box_iou([0.1, 0.1, 0.6, 0.8], [0.1, 0.1, 0.6, 0.8]))
    box_mask = lambda image, box: polygon_mask([[box[0], box[1]], [box[2], box[1]], [box[2], box[3]], [box[0], box[3]]],  # noqa: E731
                                              *image.size)  # a rectangle as the segmenter's mask, for the test only
    metrics, rows = score_lisa([sample, sample], answers + ["no box"], box_to_mask=box_mask)
    assert rows[1]["box_iou"] == 0.0 and rows[1]["mask_iou"] == 0.0 and metrics["no_box"] == 0.5
    assert metrics["giou"] == pytest.approx(rows[0]["mask_iou"] / 2) and 0.8 < rows[0]["mask_iou"] < 1.0
    with pytest.raises(FileNotFoundError, match="LISA's data/test"):
        load_lisa_folder(str(tmp_path / "a.json"))


@pytest.mark.slow  # transformers' SAM processor pads every image to 1024 px: tens of seconds on two busy cores
def test_sam_segmenter_gives_a_mask_of_the_image_size(tmp_path):
    import torch
    from transformers import SamConfig, SamImageProcessor, SamModel, SamProcessor

    torch.manual_seed(0)
    config = SamConfig(
        vision_config={"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 1, "output_channels": 8,
                       "patch_size": 64, "global_attn_indexes": [0], "mlp_dim": 16, "window_size": 0, "num_pos_feats": 4},
        prompt_encoder_config={"hidden_size": 8, "patch_size": 64, "image_embedding_size": 16, "mask_input_channels": 4},
        mask_decoder_config={"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1, "mlp_dim": 16,
                             "iou_head_hidden_dim": 8},
    )  # fmt: skip
    SamModel(config).save_pretrained(tmp_path)
    SamProcessor(SamImageProcessor()).save_pretrained(tmp_path)
    mask = sam_segmenter(str(tmp_path))(Image.new("RGB", (80, 60), "white"), [10, 10, 50, 40])
    assert mask.shape == (60, 80) and set(np.unique(mask)) <= {0, 1}


def test_direct_use_entry_asks_as_the_authors_inference_and_trains_as_their_grpo():
    spec = zoo.info("visual-rft-lisa-7b").spec
    # Qwen2_VL_lisa_infere.py:38-46 / demo/README.md:32-42: R1 system prompt, the instruction in the prefix
    assert spec.system == R1_SYSTEM
    assert spec.user_text("the pokeymon that can perform Thunderbolt") == (
        "Output the bounding box in the image corresponding to the instruction: the pokeymon that can perform "
        'Thunderbolt. Output the thinking process in <think> </think> and your grouding box. Following "<think> '
        'thinking process </think>\n<answer>(x1,y1),(x2,y2)</answer>)" format.')
    # qwen-vl-utils' defaults (no limits passed) and the scripts' 128 new tokens (infere.py:115, demo L57)
    assert (spec.min_pixels, spec.max_pixels, spec.max_new_tokens) == (4 * 28 * 28, 16384 * 28 * 28, 128)
    # training: QUESTION_TEMPLATE around the data's question, which carries the prefix (gen_sft.py:14)
    train_question = "Output the bounding box in the image corresponding to the instruction: the cup"
    assert spec.user_text(train_question, "train").startswith(train_question + " Output the thinking process")
