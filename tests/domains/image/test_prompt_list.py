"""``prompt-list``: one prompt per line (DanceGRPO's assets/prompts.txt format), blanks skipped, named errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from zoo.data import load_dataset


def test_lines_become_prompts_in_file_order(tmp_path: Path) -> None:
    path = tmp_path / "prompts.txt"
    path.write_text("a cat on a sofa\n\n  a lighthouse at dusk  \nan astronaut riding a horse\n", encoding="utf-8")
    samples = list(load_dataset("prompt-list", path=str(path)))
    assert [s.question for s in samples] == ["a cat on a sofa", "a lighthouse at dusk", "an astronaut riding a horse"]
    assert [s.id for s in samples] == ["line-1", "line-3", "line-4"]
    assert [s.question for s in load_dataset("prompt-list", path=str(path), n=1)] == ["a cat on a sofa"]


def test_missing_or_blank_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="one prompt per line"):
        load_dataset("prompt-list", path=str(tmp_path / "absent.txt"))
    (tmp_path / "blank.txt").write_text("\n  \n")
    with pytest.raises(ValueError, match="holds no prompts"):
        load_dataset("prompt-list", path=str(tmp_path / "blank.txt"))
