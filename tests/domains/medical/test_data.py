"""Loaders of the published formats and the synthetic generators; data and rewards agree."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import domains.medical.rewards  # noqa: F401  (registers the rewards)
from domains.medical import data as mdata
from domains.medical.metrics import box_position_label
from domains.medical.prompts import MCQ_SEPARATOR
from domains.medical.synthetic import ultrasound_case
from rewards.base import REWARDS
from tests.domains.medical import u2_cases
from zoo.images import load_image


def test_synthetic_pathology_mcq_is_seeded_and_in_patho_r1_layout() -> None:
    a, b = mdata.synthetic_pathology(4, seed=3), mdata.synthetic_pathology(4, seed=3)
    assert [s.target for s in a] == [s.target for s in b]
    assert np.array_equal(np.asarray(a[0].images[0]), np.asarray(b[0].images[0]))
    sample = a[0]
    assert sample.prompt[0]["role"] == "system" and "<think>" in sample.prompt[0]["content"]
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


def _png_b64(colour: str) -> str:
    buf = io.BytesIO()
    Image.new("RGB", (80, 60), colour).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def test_u2bench_tsv_loader_reads_images_targets_and_prompts(tmp_path: Path) -> None:
    columns = {**u2_cases.SEG, "image": [_png_b64("gray")] * 7, "anatomy_location": ["breast"] * 7}
    path = u2_cases.write_tsv(columns, tmp_path / "04.tsv", drop=("response",))
    samples = mdata.load_u2bench_tsv(path, "seg", limit=3)
    assert len(samples) == 3 and isinstance(samples[0].images[0], bytes), "decoded when used, not at load"
    assert load_image(samples[0].images[0]).size == (80, 60)
    assert [s.target["position"] for s in samples] == ["upper left", "center", "not visible"]
    assert "about breast" in samples[0].question and samples[0].meta["dataset"] == "04"


def test_u2bench_measurement_loader_and_prompt_file(tmp_path: Path) -> None:
    columns = {**u2_cases.MEASURE_18, "img_path": ["a.png"] * 6}
    path = u2_cases.write_tsv(columns, tmp_path / "18.tsv", drop=("response",))
    with pytest.raises(ValueError, match="prompt_file"):
        mdata.load_u2bench_tsv(path, "measurement")
    prompts = tmp_path / "mea_prompt.json"
    prompts.write_text('{"18": "Estimate the EF."}')
    samples = mdata.load_u2bench_tsv(path, "measurement", prompt_file=prompts)
    assert [s.target["value"] for s in samples] == [55.0, 30.0, 62.5, None, 70.0, 12.0]
    assert samples[0].question == "Estimate the EF." and samples[0].images[0] == str(tmp_path / "a.png")
    assert mdata.load_u2bench_tsv(path, "measurement")[0].question == "Estimate the EF."  # found next to the table


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
