"""``training.json`` is one typed record (:mod:`zoo.records`), read strictly, and every shipped card is rendered from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import zoo
from zoo import measurements as m
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


#: each shipped checkpoint -> the release row its measurements read as
RELEASE_ROWS = {
    "carl-highway-tiny": m.CarlMeasurements, "driving-vla-tiny": m.DrivingLadderMeasurements,
    "fetch-push-bc-tiny": m.FetchPushBCMeasurements, "fetch-push-resip-tiny": m.ResipMeasurements,
    "flow-grpo-tiny-colour": m.FlowGrpoMeasurements, "gui-agent-tiny": m.GuiAgentMeasurements,
    "gui-grounding-tiny": m.GuiGroundingMeasurements, "svg-scenes-tiny": m.SvgLadderMeasurements,
    "synthetic-colour-sft-tiny": m.SyntheticColourMeasurements,
}  # fmt: skip


@pytest.mark.parametrize("name", SHIPPED)
def test_measurements_are_typed_rows_with_the_shipped_numbers(name: str) -> None:
    """The release's row, written back as the very JSON the file holds: every number the same value and the same
    JSON type (an int stays an int)."""
    path = CHECKPOINTS_DIR / name / "training.json"
    record = read_record(path)
    assert type(record.measurements) is RELEASE_ROWS[name]
    stored = json.loads(path.read_text())["measurements"]
    written = record.to_dict()["measurements"]
    assert json.dumps(written, sort_keys=True) == json.dumps(stored, sort_keys=True)


def test_only_recipe_snapshots_are_left_as_untyped_maps() -> None:
    """Typed all the way down: every field of every release row has a type, nested rows included, except the
    recipes as they ran (their schema is the recipe's; :data:`zoo.measurements.common.RecipeSnapshot`)."""
    snapshots = [f"{row.__name__}.{name}" for row in m.MEASUREMENTS for name in row.__dataclass_fields__
                 if name.startswith("recipe") and row not in (m.CarlMeasurements, m.ResipMeasurements)]  # fmt: skip
    assert sorted(_loose_fields(m.MEASUREMENTS)) == sorted(snapshots)  # CaRL's and ResiP's recipe: the file's text


def _loose_fields(rows: tuple[type, ...]) -> set[str]:
    """``Class.field`` of every field typed ``Any`` somewhere inside, walking the nested rows' own fields."""
    import dataclasses
    import typing

    loose, seen, todo = set(), set(), list(rows)
    while todo:
        row = todo.pop()
        if row in seen:
            continue
        seen.add(row)
        for name, hint in typing.get_type_hints(row).items():
            parts = [hint]
            while parts:
                part = parts.pop()
                if part is typing.Any:
                    loose.add(f"{row.__name__}.{name}")
                elif dataclasses.is_dataclass(part):
                    todo.append(part)
                parts += typing.get_args(part)
    return loose


def test_no_two_release_rows_have_the_same_fields() -> None:
    """The rows are told apart by their keys: two with one key set would make a record's row a guess."""
    import dataclasses

    keys = [frozenset(f.name for f in dataclasses.fields(row)) for row in m.MEASUREMENTS]
    assert len(set(keys)) == len(keys) == len(RELEASE_ROWS)


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
    (lambda d: d["measurements"]["sft"]["curve"][2].update(hit="0.5"),
     r"measurements\.sft\.curve\[2\]\.hit: expected float, got str '0\.5'"),
    (lambda d: d["measurements"]["grpo"][1].pop("final_hit"),
     r"measurements\.grpo\[1\]: missing field\(s\) \['final_hit'\] of GroundingRun"),
    (lambda d: d["measurements"].update(notes="by hand"),
     r"measurements: unknown field\(s\) \['notes'\]; a GuiGroundingMeasurements has"),
    (lambda d: d["measurements"]["summary"]["hit_after_grpo"].update(seed0=None),
     r"measurements\.summary\.hit_after_grpo\.seed0: expected float, got NoneType"),
])  # fmt: skip
def test_a_malformed_record_is_refused_naming_the_field(tmp_path: Path, edit, message: str) -> None:
    data = _shipped()
    edit(data)
    path = tmp_path / "training.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=message):
        read_record(path)
