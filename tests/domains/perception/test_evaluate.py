"""REC evaluation (VLM-R1's accuracy at IoU > 0.5) on real pipelines and real predictions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import zoo
from domains.perception.evaluate import load_eval_data, run, score_rows, summarise
from zoo.hub import CHECKPOINTS_DIR
from zoo.outputs import Prediction


def test_scoring_follows_vlm_r1_iou_threshold():
    samples = load_eval_data("synthetic-rec", limit=3)
    truth = [s.target["bbox"] for s in samples]
    shifted = [truth[1][0] + 6, truth[1][1], truth[1][2] + 6, truth[1][3]]  # IoU well under 0.5 for 14-px shapes
    preds = [Prediction(text="t", bbox=truth[0]), Prediction(text="t", bbox=shifted),
             Prediction(text="garbage", parse_error="no <answer>")]  # fmt: skip
    rows = score_rows(samples, preds)
    assert [r["correct"] for r in rows] == [True, False, False]
    assert rows[2]["bbox"] == [0.0, 0.0, 0.0, 0.0]
    metrics = summarise(rows)
    assert metrics["accuracy"] == pytest.approx(100 / 3) and metrics["no_box"] == pytest.approx(1 / 3)


def test_run_writes_metrics_for_a_real_pipeline(tmp_path):
    # The shipped tiny GUI checkpoint read with VLM-R1's REC prompt and parser: the numbers are what
    # they are (it never learnt this prompt); the files and their agreement are what is checked.
    pipe = zoo.load(str(CHECKPOINTS_DIR / "gui-grounding-tiny"), entry="vlm-r1-rec-3b", device="cpu")
    metrics = run(pipe, "synthetic-rec", None, tmp_path, limit=4)
    rows = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == metrics["n"] == 4
    assert metrics == json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["accuracy"] == pytest.approx(100 * sum(r["correct"] for r in rows) / 4)


def test_benchmark_errors_say_what_to_pass():
    with pytest.raises(ValueError, match="--path"):
        load_eval_data("refcoco")
    with pytest.raises(ValueError, match="drop --path"):
        load_eval_data("synthetic-rec", path="x")
    with pytest.raises(ValueError, match="synthetic-rec"):
        load_eval_data("coco")


# --- OVDEval ---------------------------------------------------------------------------------------
# om-ai-lab/OVDEval @ 2ba0aa95 Evaluation.md: annotations/<task>.json (COCO json; images carry `text` and
# `neg_text`; bbox x, y, w, h) and images/<task>/; eval.py: NMS against the ground truth, then COCO AP.


def write_ovdeval(root, boxes_per_image, first_id=1):
    """A two-category OVDEval sub-task ``material`` with one image per entry of ``boxes_per_image``."""
    from PIL import Image

    (root / "annotations").mkdir()
    (root / "images" / "material").mkdir(parents=True)
    images, annotations = [], []
    for i, boxes in enumerate(boxes_per_image):
        Image.new("RGB", (200, 120), (90, 90, 90)).save(root / "images" / "material" / f"{i}.jpg")
        images.append({"file_name": f"{i}.jpg", "id": i, "height": 120, "width": 200, "text": ["wooden chair"],
                       "neg_text": ["metal chair"]})  # fmt: skip
        annotations += [{"id": first_id + len(annotations) + k, "bbox": b, "category_id": 0, "image_id": i, "iscrowd": 0,
                         "area": b[2] * b[3]} for k, b in enumerate(boxes)]  # fmt: skip
    categories = [{"supercategory": "object", "id": 0, "name": "wooden chair"},
                  {"supercategory": "object", "id": 1, "name": "metal chair"}]  # fmt: skip
    path = root / "annotations" / "material.json"
    path.write_text(json.dumps({"categories": categories, "images": images, "annotations": annotations}))
    return path


class Answers:
    """A stand-in pipeline answering each image (by file name) with given objects, in original pixels."""

    entry = zoo.info("vlm-r1-ovd-3b")

    def __init__(self, answers):
        self.answers = answers

    def __call__(self, images, questions):
        assert all("wooden chair, metal chair" in q for q in questions)  # positive then hard-negative labels
        return [Prediction(text="t", objects=self.answers.get(Path(image).name, [])) for image in images]


def test_ovdeval_scores_a_hand_computed_ap(tmp_path):
    path = write_ovdeval(tmp_path, [[[10, 10, 40, 50]], [[100, 20, 60, 60]]])
    # image 0 found exactly, image 1 missed; one box with a label outside the file's categories.
    # COCO AP: recall 0.5 at precision 1 -> 51 of the 101 recall points have precision 1: 51/101.
    pipe = Answers({"0.jpg": [{"bbox": [10, 10, 50, 60], "label": "wooden chair"}, {"bbox": [0, 0, 5, 5], "label": "sofa"}]})
    metrics = run(pipe, "ovdeval", str(path), tmp_path / "out")
    assert metrics["nms_ap"] == pytest.approx(51 / 101) and metrics["ap50"] == pytest.approx(51 / 101)
    assert metrics["n"] == 2 and metrics["unknown_labels"] == 1 and metrics["subset"] == "material"
    rows = [json.loads(line) for line in (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()]
    assert [r["detections"] for r in rows] == [1, 0]


def test_ovdeval_limit_scores_only_the_evaluated_images(tmp_path):
    path = write_ovdeval(tmp_path, [[[10, 10, 40, 50]], [[100, 20, 60, 60]]])
    pipe = Answers({"0.jpg": [{"bbox": [10, 10, 50, 60], "label": "wooden chair"}]})
    assert run(pipe, "ovdeval", str(path), tmp_path / "out", limit=1)["nms_ap"] == pytest.approx(1.0)


def test_ovdeval_keeps_pycocotools_reading_of_annotation_id_0(tmp_path):
    # COCOeval records a match by the ground truth's id, and an id of 0 reads as "unmatched"; OVDEval's
    # eval.py runs pycocotools as is (and its documented example starts at id 0), so a perfect box on
    # that annotation scores nothing there, and here.
    path = write_ovdeval(tmp_path, [[[10, 10, 40, 50]]], first_id=0)
    pipe = Answers({"0.jpg": [{"bbox": [10, 10, 50, 60], "label": "wooden chair"}]})
    assert run(pipe, "ovdeval", str(path), tmp_path / "out")["nms_ap"] == 0.0


def test_ovdeval_needs_its_annotation_file():
    with pytest.raises(ValueError, match="annotations/material.json"):
        load_eval_data("ovdeval")
