"""Perception loaders on small files written in each published format, and the synthetic generator."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from domains.perception.data import load_lisa, load_ovdeval, load_refcoco, load_synthetic
from domains.perception.prompts import VLM_R1_REC_USER
from rewards.base import get


@pytest.fixture
def images(tmp_path):
    Image.new("RGB", (640, 480)).save(tmp_path / "COCO_train2014_000000000009.jpg")
    Image.new("RGB", (340, 254)).save(tmp_path / "64d22c6fe4b011b0db94b993.jpg")
    return tmp_path


def test_refcoco_eval_json_and_training_jsonl(images):
    # src/eval/test_rec_r1.py reads image / problem / solution; grpo_jsonl.py reads conversations.
    (images / "refcoco_val.json").write_text(json.dumps([
        {"image": "COCO_train2014_000000000009.jpg", "problem": "the left dog", "solution": [10, 20, 110, 220]}]))
    (images / "refcoco_train.jsonl").write_text(json.dumps(
        {"id": 7, "image": "COCO_train2014_000000000009.jpg", "conversations": [
            {"from": "human", "value": "<image>the right cat"}, {"from": "gpt", "value": "[300, 40, 600, 400]"}]}) + "\n")
    [val] = load_refcoco(str(images / "refcoco_val.json"))
    [train] = load_refcoco(str(images / "refcoco_train.jsonl"), template=False)
    assert val.target == {"bbox": [10.0, 20.0, 110.0, 220.0], "image_size": [640, 480]}
    assert val.prompt == VLM_R1_REC_USER.replace("{question}", "the left dog")
    assert train.prompt == "the right cat" and train.id == "7" and train.target["bbox"] == [300.0, 40.0, 600.0, 400.0]


def test_refcoco_errors_name_the_problem(images):
    (images / "bad.json").write_text(json.dumps([{"image": "missing.jpg", "problem": "x", "solution": [1, 2, 3, 4]}]))
    with pytest.raises(FileNotFoundError, match="image_root"):
        load_refcoco(str(images / "bad.json"))
    (images / "bad2.json").write_text(json.dumps([{"image": "COCO_train2014_000000000009.jpg", "problem": "x",
                                                   "solution": [5, 2, 3, 4]}]))
    with pytest.raises(ValueError, match="negative width"):
        load_refcoco(str(images / "bad2.json"))


def test_ovdeval_coco_json_with_negative_labels(images):
    # om-ai-lab/OVDEval Evaluation.md "Dataset Structure": bbox is x, y, w, h.
    (images / "negation.json").write_text(json.dumps({
        "categories": [{"supercategory": "object", "id": 0, "name": "computer without screen on"},
                       {"supercategory": "object", "id": 1, "name": "computer with screen on"}],
        "annotations": [{"id": 0, "bbox": [111, 117, 99, 75], "category_id": 0, "image_id": 0, "iscrowd": 0,
                         "area": 7425}],
        "images": [{"file_name": "64d22c6fe4b011b0db94b993.jpg", "id": 0, "height": 254, "width": 340,
                    "text": ["computer without screen on"], "neg_text": ["computer with screen on"]}]}))
    [sample] = load_ovdeval(str(images / "negation.json"))
    assert sample.target["objects"] == [{"bbox": [111.0, 117.0, 210.0, 192.0], "label": "computer without screen on"}]
    assert sample.target["neg_labels"] == ["computer with screen on"] and sample.target["image_size"] == [340, 254]
    assert "computer without screen on, computer with screen on" in sample.prompt
    with pytest.raises(ValueError, match="COCO json"):
        load_ovdeval(str(images / "nothing.json"))


def test_lisa_visual_rft_format_maps_1000_frame_to_pixels(images):
    # Visual-RFT grpo_lisa.py: "<img>path</img>" in the user turn, "(x1,y1),(x2,y2)" on 0-1000.
    (images / "lisa.json").write_text(json.dumps([{"conversations": [
        {"from": "user", "value": "<img>COCO_train2014_000000000009.jpg</img> What keeps the rain off?"},
        {"from": "assistant", "value": "(100,250),(500,1000)"}]}]))
    [sample] = load_lisa(str(images / "lisa.json"))
    assert sample.target["bbox"] == [64.0, 120.0, 320.0, 480.0]
    assert sample.target["bbox_norm1000"] == [100.0, 250.0, 500.0, 1000.0]
    assert sample.prompt.startswith("What keeps the rain off? Output the thinking process")


@pytest.mark.parametrize("task", ["rec", "detection", "preference"])
def test_synthetic_is_seeded_and_scores_its_own_truth_as_perfect(task):
    a, b = load_synthetic(n=4, seed=3, task=task), load_synthetic(n=4, seed=3, task=task)
    assert [s.target for s in a] == [s.target for s in b] and a[0].images[0].tobytes() == b[0].images[0].tobytes()
    sample = a[0]
    if task == "rec":
        box = [int(v) for v in sample.target["bbox"]]
        [result] = get("vlm-r1-rec-iou")([f"<think>t</think><answer>{box}</answer>"], [sample])
        assert result.score == pytest.approx(1.0)
    elif task == "detection":
        answer = json.dumps([{"bbox_2d": o["bbox"], "label": o["label"]} for o in sample.target["objects"]])
        [result] = get("vision-r1-precision")([answer], [sample])
        assert result.score == pytest.approx(1.0) and len(sample.target["objects"]) == 3
    else:
        [result] = get("r1-reward")([f"<think>t</think><answer>{sample.target['answer']}</answer>"], [sample])
        assert result.score == pytest.approx(1.5)


def test_synthetic_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown synthetic"):
        load_synthetic(task="segmentation")
    with pytest.raises(ValueError, match="at least 28"):
        load_synthetic(size=10)
