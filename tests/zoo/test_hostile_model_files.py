"""Model folders with malformed weights or huge JSON files end in one line naming the file (review 3.8, 3.16).

Malformed safetensors used to escape from ``zoo run`` as a 33-line ``SafetensorError`` traceback naming
no file; an 8 GiB sparse ``config.json`` (nothing on disk, what a tarball can carry) was read whole.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import pytest

import zoo
from tests.zoo.opened_files import watch
from zoo.cli import main
from zoo.hub import CHECKPOINTS_DIR
from zoo.model_files import MAX_JSON_BYTES, FileTooLargeError, ModelFileError, read_json
from zoo.push import plan_push

HUGE = 8 << 30
SCREEN = str(Path(__file__).resolve().parents[2] / "examples" / "screen.png")


def _copy(name: str, tmp_path: Path) -> Path:
    folder = tmp_path / name
    shutil.copytree(CHECKPOINTS_DIR / name, folder, ignore=shutil.ignore_patterns("README.md"))
    return folder


def _header_2_62(data: bytes) -> bytes:
    return struct.pack("<Q", 1 << 62) + data[8:]


MALFORMED = {
    "header length 2^62": _header_2_62,
    "truncated": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
    "header not UTF-8": lambda data: struct.pack("<Q", 4) + b"\xff\xfe\xfd\xfc",
}


@pytest.mark.parametrize("damage", MALFORMED, ids=list(MALFORMED))
def test_malformed_vlm_weights_are_one_error_naming_the_file(damage, tmp_path, capsys):
    folder = _copy("gui-grounding-tiny", tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(MALFORMED[damage](weights.read_bytes()))
    with pytest.raises(ModelFileError, match=rf"{weights} is not a valid safetensors file"):
        zoo.load(str(folder), device="cpu")
    assert main(["run", str(folder), "--image", SCREEN, "--prompt", "x", "--device", "cpu"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"error: {weights} is not a valid safetensors file") and err.count("\n") == 1


def test_malformed_policy_weights_are_one_error_naming_the_file(tmp_path):
    folder = _copy("fetch-push-bc-tiny", tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(_header_2_62(weights.read_bytes()))
    with pytest.raises(ModelFileError, match=rf"{weights} is not a valid safetensors file"):
        zoo.load(str(folder), device="cpu")


def _sparse(file: Path) -> Path:
    with open(file, "r+b" if file.exists() else "wb") as handle:
        handle.truncate(HUGE)  # 8 GiB that take no disk
    return file


@pytest.mark.parametrize(("name", "file"), [
    ("gui-grounding-tiny", "config.json"),
    ("gui-grounding-tiny", "training.json"),
    ("gui-grounding-tiny", "tokenizer_config.json"),  # read by transformers: refused before it gets there
    ("flow-grpo-tiny-colour", "model_index.json"),
    ("fetch-push-bc-tiny", "policy_config.json"),
])  # fmt: skip
def test_a_huge_json_file_is_refused_by_size_without_being_read(name, file, tmp_path, capsys):
    folder = _copy(name, tmp_path)
    huge = _sparse(folder / file)
    with watch(huge) as opened:
        with pytest.raises(ValueError, match=rf"{huge} is {HUGE:,} bytes.*at most {MAX_JSON_BYTES:,}"):
            zoo.load(str(folder), device="cpu")
        assert main(["run", str(folder), "--prompt", "x", "--device", "cpu"]) == 1
    assert opened == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{huge} is {HUGE:,} bytes" in err


def test_push_dry_run_refuses_a_huge_model_index(tmp_path):
    folder = _copy("flow-grpo-tiny-colour", tmp_path)
    _sparse(folder / "model_index.json")
    with pytest.raises(FileTooLargeError, match="model_index.json"):
        plan_push("flow-grpo-tiny-colour", "me/model", source=str(folder))


def test_read_json_refuses_what_is_not_a_small_regular_json_file(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)  # opening it would block until someone writes
    with pytest.raises(ModelFileError, match="not a regular file"):
        read_json(fifo)
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xe2\x28\xa1 {")
    with pytest.raises(ModelFileError, match=rf"{bad} is not valid JSON"):
        read_json(bad)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ModelFileError, match="not valid JSON"):
        read_json(deep)
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"model_type": "qwen2_5_vl"}))
    assert read_json(small) == {"model_type": "qwen2_5_vl"}
    with pytest.raises(FileTooLargeError, match="at most 10 bytes"):
        read_json(small, limit=10)
