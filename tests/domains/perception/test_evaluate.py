"""REC evaluation (VLM-R1's accuracy at IoU > 0.5) on real pipelines and real predictions."""

from __future__ import annotations

import json

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
