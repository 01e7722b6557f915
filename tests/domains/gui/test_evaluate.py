"""GUI evaluation: ScreenSpot's point-in-box accuracy, grouped, with its files written."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from domains.gui import evaluate
from domains.gui.data import load_synthetic
from zoo.outputs import Prediction


class ScriptedPipe:
    """Answers sample i with: the true box (i even), a box beside it (i odd), garbage (every 5th)."""

    def __init__(self, samples):
        self.boxes = [s.target["bbox"] for s in samples]
        self.calls = 0

    def __call__(self, images, questions):
        out = []
        for _ in images:
            i, box = self.calls, self.boxes[self.calls]
            self.calls += 1
            if i % 5 == 4:
                out.append(Prediction(text="no idea", parse_error="no box found"))
            elif i % 2 == 0:
                out.append(Prediction(text="ok", bbox=list(box)))
            else:
                out.append(Prediction(text="far", bbox=[box[2] + 50, box[3] + 50, box[2] + 60, box[3] + 60]))
        return out


def test_point_in_box_is_inclusive_and_points_win_over_boxes():
    assert evaluate.point_in_box([10, 20], [10, 20, 30, 40]) and evaluate.point_in_box([30, 40], [10, 20, 30, 40])
    assert not evaluate.point_in_box([30.01, 40], [10, 20, 30, 40]) and not evaluate.point_in_box(None, [0, 0, 1, 1])
    assert evaluate.click_point(Prediction(text="", bbox=[0, 0, 10, 20])) == [5, 10]
    assert evaluate.click_point(Prediction(text="", bbox=[0, 0, 10, 20], point=[1, 2])) == [1, 2]


def test_run_writes_metrics_predictions_and_png(tmp_path, monkeypatch):
    samples = load_synthetic(n=10, seed=3)
    monkeypatch.setattr(evaluate, "load_eval_data", lambda data, path, limit: samples)
    metrics = evaluate.run(ScriptedPipe(samples), "synthetic", None, tmp_path, limit=10)
    # indices 0, 2, 6, 8 correct; 4 and 9 unparsable; 1, 3, 5, 7 wrong
    assert metrics["overall"] == {"accuracy": 0.4, "n": 10, "correct": 4, "wrong_format": 2}
    assert set(metrics["by_platform"]) <= {"desktop", "mobile", "web"}
    assert sum(v["n"] for v in metrics["by_element_type"].values()) == 10
    rows = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert [r["correctness"] for r in rows][:5] == ["correct", "wrong", "correct", "wrong", "wrong_format"]
    assert json.loads((tmp_path / "metrics.json").read_text()) == metrics
    with Image.open(tmp_path / "predictions.png") as png:
        assert png.size == (4 * 320, 3 * 320)


def test_unknown_or_incomplete_data_names():
    with pytest.raises(ValueError, match="screenspot-pro"):
        evaluate.load_eval_data("imagenet")
    with pytest.raises(ValueError, match="--path"):
        evaluate.load_eval_data("screenspot")
    tiny = evaluate.load_eval_data("synthetic-tiny", limit=3)
    assert len(tiny) == 3 and tiny[0].target["image_size"] == [112, 112]
