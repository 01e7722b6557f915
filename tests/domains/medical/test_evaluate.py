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


def test_a_released_table_without_answers_needs_a_model(tmp_path: Path) -> None:
    cells = {"class_label": u2_cases.CLA_STR["class"], "prompt": ["Benign, malignant or normal?"] * 7}
    path = u2_cases.write_release_tsv(cells, tmp_path / "23.tsv")
    with pytest.raises(ValueError, match="no 'response' or 'prediction' column"):
        evaluate(None, "u2bench-disease_diagnosis", str(path))
    given = evaluate(u2_cases.CLA_STR["response"], "u2bench-cla", str(path))  # answers in row order instead
    assert given["acc"] == pytest.approx(4 / 7)  # the evalkit's accuracy on these rows (test_u2bench_release.py)


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
