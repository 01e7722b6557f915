"""``training.json`` is one typed record (:mod:`zoo.records`), read strictly, and every shipped card is rendered from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import zoo
from zoo.cards import CARDS_DIR, render_card
from zoo.hub import CHECKPOINTS_DIR
from zoo.records import SCHEMA, RecordError, TrainingRecord, read_record

SHIPPED = sorted(p.name for p in CHECKPOINTS_DIR.iterdir() if (p / "training.json").is_file())


def test_every_shipped_checkpoint_has_a_record() -> None:
    assert len(SHIPPED) == 9 and SHIPPED == sorted(p.name for p in CHECKPOINTS_DIR.iterdir() if p.is_dir())


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_record_reads_and_is_written_as_it_is_stored(name: str, tmp_path: Path) -> None:
    path = CHECKPOINTS_DIR / name / "training.json"
    record = read_record(path)
    assert record.entry == name and record.schema == SCHEMA and record.reproduce.startswith(("python", "zoo"))
    assert record.write(tmp_path / "training.json").read_text() == path.read_text()  # canonical: nothing lost
    assert TrainingRecord.from_dict(record.to_dict()) == record


@pytest.mark.parametrize("name", SHIPPED)
def test_the_committed_card_is_the_one_rendered_from_entry_and_record(name: str) -> None:
    """A re-release rewrites the record; `zoo card` must then give the committed card back (no hand edits)."""
    assert str(render_card(zoo.info(name))) == (CARDS_DIR / name / "README.md").read_text()


@pytest.mark.parametrize("name", SHIPPED)
def test_a_record_has_stages_and_the_rl_stage_a_measured_value(name: str) -> None:
    record = read_record(CHECKPOINTS_DIR / name / "training.json")
    assert record.stages and record.summary and record.sections
    measured = record.stage("rl") or record.stage("base")
    assert measured and all(s.value is not None and s.metric for s in measured)


def _shipped(name: str = "gui-grounding-tiny") -> dict:
    return json.loads((CHECKPOINTS_DIR / name / "training.json").read_text())


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(card="lab.gui.card:write_card"), r"unknown field\(s\) \['card'\]"),
    (lambda d: d.pop("reproduce"), r"missing field\(s\) \['reproduce'\]"),
    (lambda d: d["stages"][0].update(seed="zero"), r"stages\[0\]\.seed: expected int, got str 'zero'"),
    (lambda d: d["comparisons"][0].update(difference=True), r"comparisons\[0\]\.difference: expected float, got bool"),
    (lambda d: d["stages"][1].update(curve={"step": 1}), r"stages\[1\]\.curve: expected a list, got dict"),
    (lambda d: d["stages"][1]["curve"][0].update(value=float("nan")), r"stage 'GRPO, seed 0' curve is nan"),
    (lambda d: d.update(schema="zoo.training-record/0"), "this version of the zoo reads 'zoo.training-record/1'"),
])  # fmt: skip
def test_a_malformed_record_is_refused_naming_the_field(tmp_path: Path, edit, message: str) -> None:
    data = _shipped()
    edit(data)
    path = tmp_path / "training.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=message):
        read_record(path)
