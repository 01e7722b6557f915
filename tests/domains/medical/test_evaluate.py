"""U2-Bench and PathMMU metrics from files in the published formats, against the benchmarks' own code.

Golden numbers: see ``u2_cases.py`` / ``pathmmu_cases.py`` (the evalkit's and PathMMU's functions
run in a scratch venv on exactly these rows).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from domains.medical.evaluate import evaluate, pathmmu_choice
from tests.domains.medical import pathmmu_cases, u2_cases


def test_classification_matches_evalkit(tmp_path: Path) -> None:
    path = u2_cases.write_tsv(u2_cases.CLA_STR, tmp_path / "23.tsv")
    got = evaluate(None, "u2bench-cla", str(path), out_dir=tmp_path / "out")
    assert got["parser_rate"] == 1.0
    assert got["acc"] == pytest.approx(0.5714285714285714)
    assert (got["precision"], got["recall"], got["f1"]) == pytest.approx((0.5, 0.4583333333333333, 0.475))
    record = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert record["metrics"]["acc"] == got["acc"] and len(record["samples"]) == 7
    assert record["samples"][3]["correct"] is False  # "benign " is not stripped by U2-Bench


def test_integer_classification_counts_unparseable_answers_as_failed(tmp_path: Path) -> None:
    path = u2_cases.write_tsv(u2_cases.CLA_INT, tmp_path / "44.tsv")
    got = evaluate(None, "u2bench-cla", str(path))
    expected = {"parser_rate": 0.8333333333333334, "acc": 0.8, "precision": 0.875, "recall": 0.875,
                "f1": 0.8333333333333333}
    assert {k: got[k] for k in expected} == pytest.approx(expected)
    assert got["failed_items"] == 1


def test_localization_matches_evalkit(tmp_path: Path) -> None:
    path = u2_cases.write_tsv(u2_cases.SEG, tmp_path / "04.tsv")
    got = evaluate(None, "u2bench-seg", str(path))
    assert got["acc"] == pytest.approx(0.8333333333333334)
    assert got["failed_items"] == 1  # the empty response


def test_measurement_matches_evalkit_with_dataset_from_file_name(tmp_path: Path) -> None:
    path = u2_cases.write_tsv(u2_cases.MEASURE_18, tmp_path / "18_1.Ultrasound_Heart_Segmentation_Dataset.tsv")
    got = evaluate(None, "u2bench-measurement", str(path))
    expected = {"MAE": 0.07115384615384612, "RMSE": 0.08400126795323672, "Std": 0.07737845976434886,
                "%_within_tolerance": 75.0}
    assert {k: got[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    assert got["failed_items"] == 1 and got["range"] == [10.0, 75.0]


def test_measurement_null_answer_is_failed_as_on_the_evalkit_jsonl_path(tmp_path: Path) -> None:
    path = u2_cases.write_tsv(u2_cases.MEASURE_27, tmp_path / "carotid.tsv")
    got = evaluate(None, "u2bench-measurement:27", str(path))
    expected = {"MAE": 0.06250000000000001, "RMSE": 0.06588078458684125, "Std": 0.020833333333333356,
                "%_within_tolerance": 100.0}
    assert {k: got[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    assert got["failed_items"] == 1


def test_report_matches_evalkit(tmp_path: Path) -> None:
    path = u2_cases.write_tsv(u2_cases.REPORT, tmp_path / "11.tsv")
    got = evaluate(None, "u2bench-report", str(path))
    expected = {"Bleu-1": 77.7777777756173, "Bleu-2": 73.1247032261095, "Bleu-3": 68.72894978218422,
                "Bleu-4": 64.09964387522137, "Rouge": 62.775459098497485}
    assert {k: got[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    assert got["BERTScore"] is None  # needs bert-base-multilingual-cased; not computed offline


def test_predictions_can_come_from_outside_the_table(tmp_path: Path) -> None:
    path = u2_cases.write_tsv(u2_cases.CLA_STR, tmp_path / "23.tsv", drop=("response",))
    with pytest.raises(ValueError, match="no 'response' or 'prediction' column"):
        evaluate(None, "u2bench-cla", str(path))


def test_unknown_benchmark_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="u2bench-cla"):
        evaluate(None, "u2bench", None)
    with pytest.raises(ValueError, match="unknown medical benchmark"):
        evaluate([], "pathmmmu", "x")


def test_pathmmu_parser_matches_pathmmu_code() -> None:
    import random

    rng = random.Random(42)  # PathMMU seeds the global generator with 42 at import
    golden = ["Fibrosis", "Mitosis", "Necrosis", "Necrosis", "Mitosis", "Fibrosis", "Necrosis", "Mitosis",
              "Necrosis", "Inflammation"]
    got = []
    for response, index2ans, gt in pathmmu_cases.CASES:
        letter, _ = pathmmu_choice(response, index2ans, rng)
        got.append(gt if response == gt else index2ans[letter])
    assert got == golden


def _write_pathmmu(root: Path) -> None:
    (root / "images").mkdir(parents=True)
    Image.new("RGB", (8, 8), "pink").save(root / "images" / "a.png")
    items = [
        {"No": 1, "question": "What feature is shown?", "img": "a.png", "answer": "B",
         "options": ["(A) Necrosis", "(B) Fibrosis", "(C) Mitosis", "(D) Inflammation"]},
        {"No": 2, "question": "Which stain?", "img": "a.png", "answer": "A",
         "options": ["(A) H&E (routine)", "(B) PAS"]},
        {"No": 3, "question": "Missing image", "img": "missing.png", "answer": "A", "options": ["(A) x", "(B) y"]},
    ]
    (root / "data.json").write_text(json.dumps({"PubMed": {"test_tiny": items}}))


def test_pathmmu_accuracy_from_data_json(tmp_path: Path) -> None:
    """Default: the raw response, as PathMMU's main.py scores it; ``answer``: the parsed span."""
    _write_pathmmu(tmp_path)
    from zoo.outputs import Prediction

    text = "<think>Dense fibres replace the stroma, so the feature is (B) here</think><answer>B</answer>"
    preds = {"1": Prediction(text=text, answer="B"), "2": "(B)"}
    got = evaluate(preds, "pathmmu:PubMed_test_tiny", str(tmp_path), out_dir=tmp_path / "out")
    assert got["response_source"] == "raw" and got["n"] == 2  # No. 3 skipped: no image
    assert got["acc"] == 0.5 and got["random_guesses"] == 0  # "(B)" found in the raw text
    record = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert record["metrics"]["response_source"] == "raw" and record["samples"][0]["response"] == text
    assert record["samples"][1]["gt_content"] == "H&E (routine"  # PathMMU's option split on ')' is kept

    spans = evaluate(preds, "pathmmu:PubMed_test_tiny", str(tmp_path), response_source="answer")
    assert spans["response_source"] == "answer" and spans["acc"] == 0.5


def test_pathmmu_raw_and_answer_span_can_disagree(tmp_path: Path) -> None:
    """A think trace naming other options: the authors' raw parser takes the last one it finds."""
    _write_pathmmu(tmp_path)
    from zoo.outputs import Prediction

    text = "<think>Not (B), rather (C)</think><answer>B</answer>"
    preds = [Prediction(text=text, answer="B"), "(A)"]
    raw = evaluate(preds, "pathmmu:PubMed_test_tiny", str(tmp_path))
    span = evaluate(preds, "pathmmu:PubMed_test_tiny", str(tmp_path), response_source="answer")
    # raw: candidates B and C, C written last -> "Mitosis" (wrong); span: "B" -> "Fibrosis" (right)
    assert (raw["acc"], span["acc"]) == (0.5, 1.0)
    with pytest.raises(ValueError, match="response_source"):
        evaluate(preds, "pathmmu:PubMed_test_tiny", str(tmp_path), response_source="think")


def test_pathmmu_unknown_category(tmp_path: Path) -> None:
    _write_pathmmu(tmp_path)
    with pytest.raises(ValueError, match="PubMed_test_tiny"):
        evaluate(["A"], "pathmmu:Atlas_test", str(tmp_path))
