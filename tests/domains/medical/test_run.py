"""``zoo eval``'s entry point with real (tiny, random) zoo pipelines, and the medical catalog rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import zoo
from domains.medical import data as mdata
from domains.medical.evaluate import run
from zoo.hub import ModelNotAvailableError, ResolvedModel


@pytest.fixture(scope="module")
def tiny_patho_pipe():
    from zoo.pipelines.vlm import VLMPipeline
    from zoo.tiny import build_tiny_vlm

    model, processor = build_tiny_vlm("qwen2_5_vl", seed=0)
    processor.tokenizer.padding_side = "left"
    return VLMPipeline(model, processor, zoo.info("patho-r1-3b"), ResolvedModel(Path("."), "local", "local"))


def test_run_scores_what_the_pipeline_answers(tiny_patho_pipe, tmp_path: Path) -> None:
    got = run(tiny_patho_pipe, "synthetic-us-localization", out_dir=tmp_path, limit=3, max_new_tokens=6)
    assert got["n"] == 3 and got["data"] == "synthetic-us-localization"
    record = json.loads((tmp_path / "metrics.json").read_text())
    samples = mdata.synthetic_ultrasound(3, task="localization")
    direct = tiny_patho_pipe([s.images[0] for s in samples], [s.question for s in samples], max_new_tokens=6)
    expected = [p.answer if p.answer is not None else p.text for p in direct]
    assert [row["response"] for row in record["samples"]] == expected


def test_run_with_a_clip_model_answers_multiple_choice(tiny_clip_pipe) -> None:
    got = run(tiny_clip_pipe, "synthetic-pathology-mcq", limit=4)
    assert got["n"] == 4 and 0.0 <= got["acc"] <= 1.0


def test_medical_entries_carry_licence_and_release_state() -> None:
    for name in ("patho-r1-3b", "patho-r1-7b", "patho-clip-b", "patho-clip-l"):
        entry = zoo.info(name)
        assert entry.gated and entry.license == "cc-by-nc-nd-4.0" and "no derivatives" in entry.notes
    assert zoo.info("patho-clip-b").kind == "clip" and zoo.info("patho-clip-b").architecture == "ViT-B-16"
    assert not zoo.info("dolphin-r1").released


def test_unreleased_dolphin_says_what_the_zoo_offers_instead() -> None:
    with pytest.raises(ModelNotAvailableError, match="no public weights") as err:
        zoo.load("dolphin-r1")
    assert "dolphin-r1-ultrasound.yaml" in str(err.value)


def test_gated_patho_clip_offline_says_how_to_get_access(hf_cache: Path) -> None:
    with pytest.raises(ModelNotAvailableError) as err:
        zoo.load("patho-clip-b")
    message = str(err.value)
    assert "hf download WenchuanZhang/Patho-CLIP-B" in message and "request access" in message
