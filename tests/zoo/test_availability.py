"""One decision says how ready an entry's weights are: shipped, cached, downloadable, gated or not released."""

from __future__ import annotations

from pathlib import Path

import pytest

from zoo.availability import AVAILABILITIES, availability
from zoo.registry import info, list_models


def _repository(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return folder


def test_every_entry_gets_one_of_the_four_answers_and_the_docs_answer_ignores_the_cache(hf_cache: Path) -> None:
    answers = {name: availability(info(name), look_in_cache=False) for name in list_models()}
    assert set(answers.values()) == set(AVAILABILITIES)
    assert answers["gui-grounding-tiny"] == "runs offline here"  # shipped in checkpoints/
    assert answers["carl"] == "not released"
    assert answers["gui-g1-3b"] == "needs download"
    assert answers["patho-r1-7b"] == "gated"


def test_a_cached_repository_runs_offline_only_when_its_gated_base_is_cached_too(
    hf_cache: Path, install, tmp_path: Path
) -> None:
    install(_repository(tmp_path, "gui"), "Yuqi-Zhou/GUI-G1-3B-v1", hf_cache)
    assert availability(info("gui-g1-3b")) == "runs offline here"
    assert availability(info("gui-g1-3b"), look_in_cache=False) == "needs download"

    adapter = info("flow-grpo-sd35m-geneval")  # a LoRA on the gated SD3.5 Medium
    install(_repository(tmp_path, "lora"), adapter.repo_id, hf_cache)
    assert availability(adapter) == "gated"
    install(_repository(tmp_path, "base"), info("stable-diffusion-3.5-medium").repo_id, hf_cache)
    assert availability(adapter) == "runs offline here"


def test_a_shipped_checkpoint_missing_from_the_installation_is_not_released(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import zoo.hub

    monkeypatch.setattr(zoo.hub, "CHECKPOINTS_DIR", tmp_path)
    assert availability(info("gui-grounding-tiny")) == "not released"
