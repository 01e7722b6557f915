"""AutoTrust loader and closed-ended metrics on small files in its published format.

Format and rules: taco-group/AutoTrust@309fa3da, qa-pairs/trustfulness/drivelm.json (records with
sample_token, question, answer, image_path, question_id, question_type) and src/eval/eval_close_end.py
+ src/eval/eval_utils.py (letter or most-similar option; first-sentence negation rule; macro/micro F1
over a b c d yes no). Expected numbers are worked out by hand beside each assertion.
"""

from __future__ import annotations

import json

import pytest
from PIL import Image

from domains.driving.autotrust import closed_end_metrics, multi_choice_label, yes_no_label
from domains.driving.data import load_autotrust

MCQ = ("What is the moving status of the bus? Please select the correct answer from the following options: "
       "A. Turn right. B. Going ahead. C. Drive backward. D. Turn left.")  # fmt: skip


@pytest.fixture
def qa_file(tmp_path):
    (tmp_path / "val_data/CAM_FRONT").mkdir(parents=True)
    Image.new("RGB", (8, 8)).save(tmp_path / "val_data/CAM_FRONT/a.jpg")
    records = [
        {"sample_token": "t1", "question": MCQ, "answer": "B", "image_path": "val_data/CAM_FRONT/a.jpg",
         "question_id": 1, "question_type": "multi-choice"},
        {"sample_token": "t1", "question": "Is there a bus?", "answer": "Yes", "image_path": "val_data/CAM_FRONT/a.jpg",
         "question_id": 2, "question_type": "yes-or-no"},
        {"sample_token": "t1", "question": "Describe.", "answer": "A road.", "image_path": "val_data/CAM_FRONT/a.jpg",
         "question_id": 3, "question_type": "open-ended"},
        {"sample_token": "t2", "question": "Is it red?", "answer": "No", "image_path": "val_data/CAM_FRONT/gone.jpg",
         "question_id": 4, "question_type": "yes-or-no"},
    ]  # fmt: skip
    path = tmp_path / "drivelm.json"
    path.write_text(json.dumps(records))
    return path


def test_loader_keeps_closed_questions_with_images(qa_file):
    samples = load_autotrust(qa_file)
    assert [s.id for s in samples] == ["autotrust-1", "autotrust-2"]  # open-ended dropped, missing image skipped
    assert samples[0].target == {"answer": "B", "question_type": "multi-choice"}
    assert len(load_autotrust(qa_file, question_types=("open-ended",))) == 1


def test_loader_errors_name_the_problem(qa_file, tmp_path):
    with pytest.raises(ValueError, match="unknown AutoTrust question_type"):
        load_autotrust(qa_file, question_types=("essay",))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question": "q", "answer": "A", "question_type": "multi-choice"}]))
    with pytest.raises(ValueError, match="image_path"):
        load_autotrust(bad)


def test_label_rules():
    assert multi_choice_label(MCQ, "b") == "b"
    assert multi_choice_label(MCQ, "The bus is going ahead") == "b"  # nearest option text
    assert yes_no_label("No, there is none. But yes later") == "no"
    assert yes_no_label("There is not a bus.") == "no"
    assert yes_no_label("Nope.") == "yes"  # only the words No / not / no count


def test_metrics_by_hand():
    items = [
        {"question": MCQ, "answer": "B", "question_type": "multi-choice", "prediction": "B"},  # b / b
        {"question": MCQ, "answer": "D", "question_type": "multi-choice", "prediction": "Turn right."},  # d / a
        {"question": "q", "answer": "Yes", "question_type": "yes-or-no", "prediction": "Yes."},  # yes / yes
        {"question": "q", "answer": "No", "question_type": "yes-or-no", "prediction": "It is there."},  # no / yes
        {"question": "q", "answer": "x", "question_type": "open-ended", "prediction": "y"},  # skipped
    ]
    metrics, rows = closed_end_metrics(items)
    assert len(rows) == 4
    assert metrics["multi_choice_accuracy"] == 0.5 and metrics["yes_no_accuracy"] == 0.5
    assert metrics["closed_accuracy"] == 0.5
    # per label F1: a 0 (fp 1), b 1, c 0 (absent), d 0 (fn 1), yes 2*1/(2+1+0)=2/3, no 0 -> macro (1 + 2/3)/6
    assert metrics["macro_f1"] == pytest.approx((1 + 2 / 3) / 6)
    # micro: tp 2, fp 2, fn 2 -> 4/8
    assert metrics["micro_f1"] == pytest.approx(0.5)
