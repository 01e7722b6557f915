"""NAVSIM's result files read back with the score named: PDMS (v1) or EPDMS (v2).

NAVSIM is not installed here (it pins torch 2.0 and nuplan-devkit), so the files are written by
:func:`navsim_v1_csv` and :func:`navsim_v2_csv`, copies of the layout ``run_pdm_score`` writes, written
from ``autonomousvision/navsim`` at tag v1.1 (0811876c, ``navsim/planning/script/run_pdm_score.py:139-151``:
one row per token with the ``PDMResults`` columns, then the ``average`` row of column means, saved by
pandas with its index) and at 0a380a9 (the same file, lines 394-462: ``_stage_one``/``_stage_two`` columns,
the summary rows ``extended_pdm_score_stage_one``, ``..._stage_two``, ``..._combined``).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from domains.driving.evaluate import run
from domains.driving.navsim_scores import read_navsim_scores

V1_COLUMNS = ("no_at_fault_collisions", "drivable_area_compliance", "ego_progress", "time_to_collision_within_bound",
              "comfort", "driving_direction_compliance", "score")  # fmt: skip  (PDMResults at 0811876c)


def _write(path: Path, header: list[str], rows: list[dict]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["", *header])  # pandas' to_csv writes the index first, its column unnamed
        for index, row in enumerate(rows):
            writer.writerow([index, *(row.get(k, "") for k in header)])
    return path


def navsim_v1_csv(path: Path, scenes: list[dict]) -> Path:
    """v1.1's file: the scene rows (an invalid scene has no metric values), then ``average`` (means, NaN skipped)."""
    average = {k: float(np.nanmean([s.get(k, np.nan) for s in scenes])) for k in V1_COLUMNS}
    average |= {"token": "average", "valid": all(s["valid"] for s in scenes)}
    return _write(path, ["token", "valid", *V1_COLUMNS], [*scenes, average])


def navsim_v2_csv(path: Path, scenes: list[dict], stage_one: float, stage_two: float, combined: float) -> Path:
    """0a380a9's file: scene rows with stage columns, then the three summary rows (their scores given)."""
    columns = ["ego_progress_stage_one", "lane_keeping_stage_one", "ego_progress_stage_two", "score"]
    summary = [{"token": "extended_pdm_score_stage_one", "valid": True, "score": stage_one,
                "ego_progress_stage_one": 0.8},
               {"token": "extended_pdm_score_stage_two", "valid": True, "score": stage_two,
                "ego_progress_stage_two": 0.7},
               {"token": "extended_pdm_score_combined", "valid": True, "score": combined,
                "ego_progress_stage_one": 0.8, "ego_progress_stage_two": 0.7}]  # fmt: skip
    return _write(path, ["token", "valid", *columns], [*scenes, *summary])


def _v1_scene(token: str, score: float, valid: bool = True) -> dict:
    metrics = dict(zip(V1_COLUMNS, (1.0, 1.0, 0.9, 1.0, 1.0, 1.0, score), strict=True)) if valid else {}
    return {"token": token, "valid": valid, **metrics}


def test_a_v1_file_holds_pdms_the_mean_over_valid_scenes(tmp_path):
    scenes = [_v1_scene("a", 0.8), _v1_scene("b", 0.6), _v1_scene("c", 0.0, valid=False)]
    result = read_navsim_scores(navsim_v1_csv(tmp_path / "v1.csv", scenes))
    assert (result.metric, result.navsim_version, result.valid_scenes, len(result.scenes)) == ("pdms", "v1", 2, 3)
    assert result.score == pytest.approx(0.7) and result.sub_metrics["ego_progress"] == pytest.approx(0.9)


def test_a_v2_file_holds_the_combined_two_stage_epdms(tmp_path):
    scenes = [{"token": "a", "valid": True, "ego_progress_stage_one": 0.9, "score": 0.85},
              {"token": "b", "valid": True, "ego_progress_stage_two": 0.7, "score": 0.5}]  # fmt: skip
    result = read_navsim_scores(navsim_v2_csv(tmp_path / "v2.csv", scenes, 0.9, 0.6, 0.55))
    assert (result.metric, result.navsim_version, result.score) == ("epdms", "v2", pytest.approx(0.55))
    assert [s["token"] for s in result.scenes] == ["a", "b"] and result.sub_metrics["ego_progress_stage_two"] == 0.7


def test_zoo_eval_names_the_score_it_read(tmp_path):
    pipe = SimpleNamespace(entry=SimpleNamespace(name="driving-vla-tiny"))
    v1 = navsim_v1_csv(tmp_path / "v1.csv", [_v1_scene("a", 0.4)])
    metrics = run(pipe, "navsim", str(v1), tmp_path / "out1")
    saved = json.loads((tmp_path / "out1" / "metrics.json").read_text())
    assert saved == metrics and list(saved["scores"]) == ["pdms"] and saved["overall"]["pdms"] == pytest.approx(0.4)
    assert "epdms" not in saved["overall"] and saved["scorer"].startswith("NAVSIM v1 run_pdm_score")
    v2 = navsim_v2_csv(tmp_path / "v2.csv", [], 0.9, 0.6, 0.55)
    assert list(run(pipe, "navsim", str(v2), tmp_path / "out2")["scores"]) == ["epdms"]


@pytest.mark.parametrize(("content", "message"), [
    ("token,score\nscene,0.5\n", "no summary row 'average' \\(NAVSIM v1\\) or 'extended_pdm_score_combined'"),
    ("a,b\n1,2\n", "not a NAVSIM run_pdm_score CSV"),
])  # fmt: skip
def test_a_file_of_neither_layout_is_refused_in_one_line(tmp_path, content, message):
    (tmp_path / "bad.csv").write_text(content)
    with pytest.raises(ValueError, match=message):
        read_navsim_scores(tmp_path / "bad.csv")
    with pytest.raises(ValueError, match="pass --path RESULT.csv"):
        run(SimpleNamespace(), "navsim", None, tmp_path / "out")
