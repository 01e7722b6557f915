"""The U2-Bench release (DolphinAI/u2-bench: eight task folders of TSVs, base64 ``img_data``) loads and scores.

Each task is written as a released TSV (:data:`u2_cases.RELEASE_COLUMNS`, the task's truth in its own
column, every other column empty) and scored as the evalkit scores it: the expected numbers are the
evalkit functions' outputs on the same rows (``u2_cases.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from domains.medical import data as mdata
from domains.medical.evaluate import evaluate
from domains.medical.u2_prompts import fill_prompt
from tests.domains.medical import u2_cases
from zoo.cli import main
from zoo.hub import CHECKPOINTS_DIR
from zoo.images import load_image

#: The prompt cell as the dataset viewer shows it: markdown-escaped underscore, written-out newlines.
PROMPT_CELL = (
    r"You are a radiologist analyzing an ultrasound image focused on the {anatomy\_location}.\n\n"
    r"Your task: answer."
)
PROMPT_TEXT = "You are a radiologist analyzing an ultrasound image focused on the breast.\n\nYour task: answer."

CLA = {"parser_rate": 1.0, "acc": 0.5714285714285714, "precision": 0.5, "recall": 0.4583333333333333, "f1": 0.475}
CLA_INT = {"parser_rate": 0.8333333333333334, "acc": 0.8, "precision": 0.875, "recall": 0.875,
           "f1": 0.8333333333333333}  # fmt: skip
SEG = {"acc": 0.8333333333333334, "failed_items": 1}
MEASURE_18 = {"MAE": 0.07115384615384612, "RMSE": 0.08400126795323672, "Std": 0.07737845976434886,
              "%_within_tolerance": 75.0, "failed_items": 1}  # fmt: skip
REPORT = {"Bleu-1": 77.7777777756173, "Bleu-2": 73.1247032261095, "Bleu-3": 68.72894978218422,
          "Bleu-4": 64.09964387522137, "Rouge": 62.775459098497485}  # fmt: skip

#: task folder -> (released truth column, the case rows' truths, their responses, dataset_name, evalkit's numbers)
CASES = {
    "disease_diagnosis": ("class_label", u2_cases.CLA_STR["class"], u2_cases.CLA_STR["response"], "23.BUSI", CLA),
    "view_recognition_and_assessment": ("class_label", u2_cases.CLA_INT["class"], u2_cases.CLA_INT["response"],
                                        "44.COVID-BLUES", CLA_INT),
    "lesion_localisation": ("gt_bbox", u2_cases.SEG["gt_bbox"], u2_cases.SEG["response"], "04.BUS", SEG),
    "organ_detection": ("gt_bbox", u2_cases.SEG["gt_bbox"], u2_cases.SEG["response"], "09.Kidney", SEG),
    "keypoint_detection": ("keypoints", u2_cases.SEG["gt_bbox"], u2_cases.SEG["response"], "48.Fetal", SEG),
    "clinical_value_estimation": ("measurement", u2_cases.MEASURE_18["measurement"], u2_cases.MEASURE_18["response"],
                                  "18.Ultrasound_Heart_Segmentation_Dataset", MEASURE_18),
    "report_generation": ("report", u2_cases.REPORT["caption"], u2_cases.REPORT["response"], "39.Liver", REPORT),
    "caption_generation": ("caption", u2_cases.REPORT["caption"], u2_cases.REPORT["response"], "10.FPUS23", REPORT),
}  # fmt: skip


def _release_file(tmp_path: Path, task: str, with_response: bool = True) -> Path:
    column, truths, responses, name, _ = CASES[task]
    columns = {column: truths, "dataset_name": [name] * len(truths), "anatomy_location": ["breast"] * len(truths),
               "prompt": [PROMPT_CELL] * len(truths)}  # fmt: skip
    if with_response:
        columns["response"] = responses
    folder = tmp_path / task
    folder.mkdir(exist_ok=True)
    extra = ("response",) if with_response else ()
    return u2_cases.write_release_tsv(columns, folder / "cases.tsv", extra)


def test_the_eight_released_task_folders_are_the_zoo_tasks() -> None:
    assert set(mdata.U2_TASKS) == set(CASES)
    assert {mdata.u2_task(alias)[0] for alias in ("cla", "seg", "measurement", "report")} <= set(CASES)


@pytest.mark.parametrize("task", sorted(CASES))
def test_released_task_scores_as_the_evalkit(task: str, tmp_path: Path) -> None:
    """The evalkit's numbers on a table laid out as released (its answers in a ``response`` column)."""
    got = evaluate(None, f"u2bench-{task}", str(_release_file(tmp_path, task)), out_dir=tmp_path / "out")
    expected = CASES[task][-1]
    assert {k: got[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    assert got["task"] == task
    record = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert len(record["samples"]) == len(CASES[task][1])


@pytest.mark.parametrize("task", sorted(CASES))
def test_released_task_loads_images_targets_and_prompts(task: str, tmp_path: Path) -> None:
    samples = mdata.load_u2bench_tsv(_release_file(tmp_path, task, with_response=False), task, prompts="row")
    _, truths, _, name, _ = CASES[task]
    assert len(samples) == len(truths) and isinstance(samples[0].images[0], bytes), "decoded when used, not at load"
    assert load_image(samples[0].images[0]).size == (8, 6)
    assert samples[0].question == PROMPT_TEXT  # the row's prompt cell, placeholder filled, when asked for
    assert samples[0].meta["dataset"] == name[:2] and samples[0].meta["task"] == task
    rule = mdata.U2_TASKS[task].rule
    first = samples[0].target
    expected = {"cla": {"label": str(truths[0])}, "seg": {"position": "upper left"},
                "measurement": {"value": 55.0, "dataset": "18"}, "report": {"report": truths[0]}}[rule]  # fmt: skip
    assert first == expected


def test_the_evalkit_task_names_read_the_released_columns(tmp_path: Path) -> None:
    pairs = {"cla": "disease_diagnosis", "seg": "lesion_localisation", "measurement": "clinical_value_estimation",
             "report": "report_generation"}  # fmt: skip
    for alias, task in pairs.items():
        path = str(_release_file(tmp_path, task))
        short, full = evaluate(None, f"u2bench-{alias}", path), evaluate(None, f"u2bench-{task}", path)
        assert short == {**full, "data": f"u2bench-{alias}"}


def test_a_table_scored_as_the_wrong_task_names_the_right_one(tmp_path: Path) -> None:
    path = _release_file(tmp_path, "keypoint_detection")
    wrong = r"reads the column 'gt_bbox'.*fills \['keypoints'\].*u2bench-keypoint_detection"
    with pytest.raises(ValueError, match=wrong):
        evaluate(None, "u2bench-lesion_localisation", str(path))


def test_measurement_dataset_comes_from_dataset_name_or_the_data_suffix(tmp_path: Path) -> None:
    path = _release_file(tmp_path, "clinical_value_estimation")  # "cases.tsv": no number in the file name
    assert evaluate(None, "u2bench-measurement", str(path))["range"] == [10.0, 75.0]
    cells = {"measurement": u2_cases.MEASURE_27["measurement"], "response": u2_cases.MEASURE_27["response"]}
    carotid = u2_cases.write_release_tsv(cells, tmp_path / "carotid.tsv", ("response",))
    got = evaluate(None, "u2bench-clinical_value_estimation:27", str(carotid))
    expected = {"MAE": 0.06250000000000001, "RMSE": 0.06588078458684125, "Std": 0.020833333333333356,
                "%_within_tolerance": 100.0, "failed_items": 1}  # fmt: skip
    assert {k: got[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    mixed = {"measurement": ["{'EF': 50}", "{'IMT': [0.8]}"], "dataset_name": ["18.Heart", "27.Carotid"],
             "response": ["50", "0.8"]}  # fmt: skip
    both = u2_cases.write_release_tsv(mixed, tmp_path / "mixed.tsv", ("response",))
    with pytest.raises(ValueError, match=r"rows of datasets \['18', '27'\]"):
        evaluate(None, "u2bench-clinical_value_estimation", str(both))


def test_fill_prompt_undoes_the_viewer_escapes_and_fills_columns() -> None:
    row = {"anatomy_location": "thyroid", "classification_task": "TI-RADS", "options": float("nan")}
    text = fill_prompt(r"On the {anatomy\_location} ({classification\_task}).\nOptions: {options}", row)
    assert text == "On the thyroid (TI-RADS).\nOptions: {options}"  # an empty cell leaves its placeholder


def test_every_released_task_runs_through_zoo_eval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`zoo eval --data u2bench-<task> --path FILE` with a tiny shipped VLM answering each released table."""
    model = str(CHECKPOINTS_DIR / "gui-grounding-tiny")
    kit = tmp_path / "evalkit" / "vlmeval" / "dataset"  # the user's checkout, with the datasets' prompts
    kit.mkdir(parents=True)
    for file in ("cla_prompt.json", "mea_prompt.json"):
        (kit / file).write_text(json.dumps({case[3][:2]: f"{file}: {case[3]}" for case in CASES.values()}))
    for task in sorted(CASES):
        path = _release_file(tmp_path, task, with_response=False)
        code = main(["eval", model, "--entry", "patho-r1-3b", "--data", f"u2bench-{task}", "--path", str(path),
                     "--limit", "2", "--device", "cpu", "--option", "max_new_tokens=3",
                     "--option", f"evalkit={kit.parents[1]}", "--out", str(tmp_path / "out" / task)])  # fmt: skip
        assert code == 0, capsys.readouterr().err
        record = json.loads((tmp_path / "out" / task / "metrics.json").read_text())
        assert record["metrics"]["task"] == task and len(record["samples"]) == 2
        assert record["metrics"]["prompts"]["source"] == "evalkit"
