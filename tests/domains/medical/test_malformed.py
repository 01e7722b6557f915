"""Malformed PathMMU and U2-Bench files give named errors (and ``zoo eval`` exits 1), never a traceback."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from PIL import Image

from domains.medical import data as mdata
from domains.medical.evaluate import evaluate
from tests.domains.medical import u2_cases
from zoo.cli import main
from zoo.hub import CHECKPOINTS_DIR

QUESTION = {"No": 1, "question": "Which?", "options": ["(A) x", "(B) y"], "answer": "B", "img": "a.jpg"}


def pathmmu(tmp_path: Path, data, image: str | None = "a.jpg") -> Path:
    (tmp_path / "images").mkdir(exist_ok=True)
    if image:
        Image.new("RGB", (8, 8)).save(tmp_path / "images" / image)
    (tmp_path / "data.json").write_text(json.dumps(data))
    return tmp_path


def test_pathmmu_well_formed_loads(tmp_path):
    samples = mdata.load_pathmmu(pathmmu(tmp_path, {"PubMed": {"test_tiny": [QUESTION]}}))
    assert [s.target["answer_text"] for s in samples] == ["y"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([QUESTION], "must map source -> split -> list of questions"),
        ({"PubMed": {"test_tiny": QUESTION}}, "must map source -> split -> list of questions"),
        ({"PubMed": {"test_tiny": ["oops"]}}, r"test_tiny\[0\]: a PathMMU question is a JSON object"),
        ({"PubMed": {"test_tiny": [{k: v for k, v in QUESTION.items() if k != "img"}]}}, "field 'img' must be str"),
        ({"PubMed": {"test_tiny": [{**QUESTION, "options": "A, B"}]}}, "field 'options' must be list"),
        ({"PubMed": {"test_tiny": [{**QUESTION, "options": [1, 2]}]}}, "options must be strings"),
        ({"PubMed": {"test_tiny": [{**QUESTION, "img": "/etc/hostname"}]}}, "points outside the data folder"),
        ({"PubMed": {"test_tiny": [{**QUESTION, "img": "../../a.jpg"}]}}, "points outside the data folder"),
    ],
)
def test_malformed_pathmmu_is_a_named_error(tmp_path, data, message):
    with pytest.raises(ValueError, match=message):
        mdata.load_pathmmu(pathmmu(tmp_path, data))


def test_pathmmu_with_every_image_missing_is_an_error(tmp_path):
    folder = pathmmu(tmp_path, {"PubMed": {"test_tiny": [QUESTION, {**QUESTION, "No": 2}]}}, image=None)
    with pytest.raises(FileNotFoundError, match="images of all 2 questions are missing"):
        mdata.load_pathmmu(folder)
    (folder / "data.json").write_text("{not json")
    with pytest.raises(ValueError, match="is not valid JSON"):
        mdata.load_pathmmu(folder)


@pytest.mark.parametrize("task", sorted(mdata.U2_TASKS))
def test_u2bench_table_without_the_task_column(tmp_path, task):
    path = tmp_path / "04.tsv"
    path.write_text(f"img_data\tresponse\n{u2_cases.PNG_8X6}\ta\n")
    column = mdata.U2_TASKS[task].column
    with pytest.raises(ValueError, match=f"reads the column '{column}', which is missing; this table has"):
        evaluate(None, f"u2bench-{task}", path=str(path))
    with pytest.raises(ValueError, match=f"reads the column '{column}'"):
        mdata.load_u2bench_tsv(path, task)


def test_u2bench_bad_images_are_named(tmp_path):
    cells = {"gt_bbox": ["[0.5, 0.5]"]}
    empty = u2_cases.write_release_tsv(cells, tmp_path / "03.tsv", img_data="")
    with pytest.raises(ValueError, match=r"03\.tsv row 0 has no 'img_data'"):
        mdata.load_u2bench_tsv(empty, "seg")
    garbage = u2_cases.write_release_tsv(cells, tmp_path / "05.tsv", img_data="!" * 100)
    with pytest.raises(ValueError, match="not base64"):
        mdata.load_u2bench_tsv(garbage, "seg")
    big = io.BytesIO()
    Image.new("1", (9000, 8000)).save(big, format="PNG")  # 72 MP, a few kB on disk
    bomb = u2_cases.write_release_tsv(cells, tmp_path / "06.tsv", img_data=base64.b64encode(big.getvalue()).decode())
    with pytest.raises(ValueError, match="9000x8000 pixels exceeds the limit"):
        mdata.load_u2bench_tsv(bomb, "seg")


def test_non_finite_ground_truth_is_unreadable_and_all_unreadable_is_an_error(tmp_path):
    assert mdata.u2bench_position("[inf, 0.5]") == mdata.u2bench_position("[NaN, 0.5]") == "not visible"
    cells = ["{'ef': Infinity}", "{'ef': NaN}", None]
    assert [mdata.u2bench_measurement(c, "18") for c in cells] == [None, None, None]
    columns = {"measurement": cells, "dataset_name": ["18.Heart"] * 3, "response": ["1", "2", "3"]}
    path = u2_cases.write_release_tsv(columns, tmp_path / "heart.tsv", ("response",))
    with pytest.raises(ValueError, match=r"no case could be scored out of 3 \(no ground truth\)"):
        evaluate(None, "u2bench-measurement", path=str(path))


def test_cli_eval_of_a_malformed_file_exits_1_with_the_message(tmp_path, capsys):
    folder = pathmmu(tmp_path, [QUESTION])
    code = main(["eval", str(CHECKPOINTS_DIR / "gui-grounding-tiny"), "--entry", "patho-r1-7b", "--data", "pathmmu", "--path", str(folder),
                 "--device", "cpu", "--out", str(tmp_path / "out")])  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err
    assert "must map source -> split" in err and "Traceback" not in err
