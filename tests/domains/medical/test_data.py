"""Loaders of the published formats and the synthetic generators; data and rewards agree."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import domains.medical.rewards  # noqa: F401  (registers the rewards)
from domains.medical import data as mdata
from domains.medical.metrics import box_position_label
from domains.medical.prompts import MCQ_SEPARATOR
from domains.medical.synthetic import ultrasound_case
from rewards.base import REWARDS
from tests.domains.medical import u2_cases


def test_synthetic_pathology_mcq_is_seeded_and_in_patho_r1_layout() -> None:
    a, b = mdata.synthetic_pathology(4, seed=3), mdata.synthetic_pathology(4, seed=3)
    assert [s.target for s in a] == [s.target for s in b]
    assert np.array_equal(np.asarray(a[0].images[0]), np.asarray(b[0].images[0]))
    sample = a[0]
    assert [m["role"] for m in sample.prompt] == ["user"]  # the raw question: the entry adds the system prompt
    assert sample.question.count(MCQ_SEPARATOR) == 4
    assert sample.target["options"][sample.target["answer"]] in sample.question


def test_ultrasound_lesion_is_where_the_box_says() -> None:
    case = ultrasound_case(np.random.default_rng(0), (96, 80), label="benign")
    grey = np.asarray(case.image.convert("L"), dtype=np.float32)
    x1, y1, x2, y2 = (int(v) for v in case.bbox)
    inside = grey[(y1 + y2) // 2 - 2 : (y1 + y2) // 2 + 2, (x1 + x2) // 2 - 2 : (x1 + x2) // 2 + 2].mean()
    ring = np.concatenate([grey[y1 : y2, max(x1 - 6, 0) : x1 - 2].ravel(), grey[y1 : y2, x2 + 2 : x2 + 6].ravel()])
    assert inside < 0.5 * ring.mean()  # hypoechoic lesion inside, speckled tissue around
    assert case.diameter_mm == pytest.approx(max(x2 - x1, y2 - y1) * 0.5)


ORACLE = {
    "classification": lambda t: t["label"],
    "localization": lambda t: t["position"],
    "measurement": lambda t: str(t["value"]),
    "report": lambda t: t["report"],
}


@pytest.mark.parametrize("task", mdata.US_TASKS)
def test_synthetic_ultrasound_targets_score_full_reward(task: str) -> None:
    samples = mdata.synthetic_ultrasound(6, task=task, seed=1)
    reward = REWARDS.get(f"us-{task}")
    answers = [f"<think>look</think><answer>{ORACLE[task](s.target)}</answer>" for s in samples]
    assert [r.score for r in reward(answers, samples)] == pytest.approx([1.0] * 6)
    if task == "localization":
        assert all(s.target["position"] == box_position_label(s.target["bbox"], (96, 80)) for s in samples)


def test_u2bench_asks_the_evalkits_prompt_file_and_the_row_cell_only_on_request(tmp_path: Path) -> None:
    """Measurement asks the evalkit's mea_prompt.json from the user's checkout (``evalkit=``) or a file passed; the
    row's ``prompt`` cell is asked only with ``prompts="row"``; without either, the error names the setting."""
    cells = {**u2_cases.MEASURE_18, "dataset_name": ["18.Heart"] * 6, "prompt": ["Row prompt."] * 6}
    path = u2_cases.write_release_tsv(cells, tmp_path / "heart.tsv")
    with pytest.raises(ValueError, match="evalkit=<your checkout"):
        mdata.load_u2bench_tsv(path, "clinical_value_estimation")
    (tmp_path / "mea_prompt.json").write_text('{"18": "Next to the table: not read."}')
    with pytest.raises(ValueError, match="evalkit=<your checkout"):
        mdata.load_u2bench_tsv(path, "measurement")
    kit = tmp_path / "u2-bench-evalkit" / "vlmeval" / "dataset"
    kit.mkdir(parents=True)
    (kit / "mea_prompt.json").write_text('{"18": "The evalkit\'s EF prompt."}')
    samples = mdata.load_u2bench_tsv(path, "measurement", evalkit=kit.parents[1])
    assert [s.target["value"] for s in samples] == [55.0, 30.0, 62.5, None, 70.0, 12.0]
    assert samples[0].question == "The evalkit's EF prompt."
    assert samples[0].meta["prompts"] == {"source": "evalkit", "file": str((kit / "mea_prompt.json").resolve())}
    chosen = tmp_path / "mine.json"
    chosen.write_text('{"18": "Estimate the EF."}')
    assert mdata.load_u2bench_tsv(path, "measurement", prompt_file=chosen)[0].question == "Estimate the EF."
    row = mdata.load_u2bench_tsv(path, "measurement", prompts="row")[0]
    assert row.question == "Row prompt." and row.meta["prompts"]["source"] == "row"
    with pytest.raises(ValueError, match="evalkit=.* holds no vlmeval/dataset/mea_prompt.json"):
        mdata.load_u2bench_tsv(path, "measurement", evalkit=tmp_path / "elsewhere")


def test_bad_inputs_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="U2-Bench task"):
        mdata.load_u2bench_tsv(tmp_path / "x.tsv", "detection")
    with pytest.raises(FileNotFoundError, match="data.json"):
        mdata.load_pathmmu(tmp_path)
    with pytest.raises(ValueError, match="ultrasound task"):
        mdata.synthetic_ultrasound(1, task="segmentation")


def test_mixed_ultrasound_tasks_are_scored_by_us_answer() -> None:
    samples = mdata.synthetic_ultrasound(8, task="mixed", seed=2)
    assert [s.target["task"] for s in samples[:4]] == list(mdata.US_TASKS)
    answers = [ORACLE[s.target["task"]](s.target) for s in samples]
    assert [r.score for r in REWARDS.get("us-answer")(answers, samples)] == pytest.approx([1.0] * 8)
