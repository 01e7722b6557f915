"""Each shipped record's typed view is what its release measured: rebuilt from ``measurements`` and the card, it is equal."""

from __future__ import annotations

import pytest

import zoo
from lab.records import SHAPES, build_record
from zoo.cards import PYTHON_BLOCK, render_card
from zoo.hub import CHECKPOINTS_DIR
from zoo.records import read_record

SHIPPED = sorted(p.name for p in CHECKPOINTS_DIR.iterdir() if (p / "training.json").is_file())


def test_every_shipped_checkpoint_has_a_shape() -> None:
    assert sorted(SHAPES) == SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_stages_and_comparisons_are_read_off_the_measurements(name: str) -> None:
    """No number of the typed view is typed in: the release's own numbers give every stage and comparison."""
    record = read_record(CHECKPOINTS_DIR / name / "training.json")
    stages, comparisons = SHAPES[name](record.measurements)
    assert tuple(stages) == record.stages and tuple(comparisons) == record.comparisons
    assert build_record({"entry": name, **record.to_dict()["measurements"]}, "", "").measurements == record.measurements


@pytest.mark.parametrize("name", SHIPPED)
def test_publishing_the_rendered_card_again_gives_the_same_record(name: str) -> None:
    """card -> record -> card is a fixed point, so a re-release that changes no number changes no card; the record's
    own words come back, its first Python block being where the card shows the kind's usage (zoo.cards)."""
    record = read_record(CHECKPOINTS_DIR / name / "training.json")
    card = str(render_card(zoo.info(name), record))
    again = build_record({"entry": name, **record.to_dict()["measurements"]}, card, record.reproduce)
    assert again.summary == record.summary and again.evaluation == record.evaluation and again.tags == record.tags
    assert str(render_card(zoo.info(name), again)) == card
    added_use = not any("```python" in section.markdown for section in record.sections)  # the library's Use section
    kept = [s for s in again.sections if not (added_use and s.title == "Use")]
    assert [(s.title, PYTHON_BLOCK.sub("", s.markdown)) for s in kept] == [
        (s.title, PYTHON_BLOCK.sub("", s.markdown)) for s in record.sections]
