"""The SCS loader on files written in the format GenuineWWD/SCS@7014027 reads (README.md:36-65)."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from domains.perception.scs_data import load_scs
from zoo.data import load_dataset


def _row(image: str, text: str, answer: str) -> dict:
    chat = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": text}]}]
    return {"message": json.dumps(chat), "answer": answer}  # the message is a stringified list (README.md:57-58)


def test_scs_rows_become_raw_questions_with_stripped_answers(tmp_path):
    Image.new("RGB", (20, 10)).save(tmp_path / "cats.jpg")
    question = "<image>\nHow many cats in the image?\nA. 1\nB. 3"
    (tmp_path / "train_scs_qwen.jsonl").write_text("\n".join(json.dumps(r) for r in (
        _row(f"file://{tmp_path / 'cats.jpg'}", question, " B "),
        _row("file:///somewhere/else/cats.jpg", "Which one?", "A"),
    )))  # fmt: skip
    first, moved = load_dataset("scs-data", path=str(tmp_path / "train_scs_qwen.jsonl"))
    assert first.prompt == question and first.target == {"answer": "B"}  # option_verifier.py:164 strips it
    assert first.images == (str(tmp_path / "cats.jpg"),)  # the file:// URI's path
    assert moved.images == (str(tmp_path / "cats.jpg"),)  # found by file name beside the data file
    assert len(load_scs(str(tmp_path / "train_scs_qwen.jsonl"), limit=1)) == 1


def test_scs_rows_the_zoo_cannot_read_are_refused_by_name(tmp_path):
    Image.new("RGB", (20, 10)).save(tmp_path / "x.jpg")
    chat = [{"role": "system", "content": "be brief"}, {"role": "user", "content": [{"type": "image", "image": "x.jpg"}]}]
    (tmp_path / "sys.jsonl").write_text(json.dumps({"message": json.dumps(chat), "answer": "A"}))
    with pytest.raises(ValueError, match="system turns"):
        load_scs(str(tmp_path / "sys.jsonl"))
    (tmp_path / "noanswer.jsonl").write_text(json.dumps({"message": json.dumps(chat[1:])}))
    with pytest.raises(ValueError, match="missing field 'answer'|no text part"):
        load_scs(str(tmp_path / "noanswer.jsonl"))
    (tmp_path / "noimage.jsonl").write_text(json.dumps(_row("missing.jpg", "Q?", "A")))
    with pytest.raises(FileNotFoundError, match="image_root"):
        load_scs(str(tmp_path / "noimage.jsonl"))
