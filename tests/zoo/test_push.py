"""`zoo push`: what a push would send (dry run, offline) and the upload path (HfApi stood in for).

The Hub cannot be reached from the test machines, so the one test of the upload itself replaces
``huggingface_hub.HfApi`` with a recorder; everything before the network call is the real code.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import pytest
import torch
from huggingface_hub import ModelCard
from safetensors.torch import save_file

from zoo.card_kinds import SnippetOrigin
from zoo.cards import CARDS_DIR, downloaded_files, render_card, usage_code, validate_card
from zoo.cli import main
from zoo.hub import CHECKPOINTS_DIR
from zoo.push import PushError, plan_push, push
from zoo.registry import info

SHIPPED = sorted(p.name for p in CHECKPOINTS_DIR.iterdir() if p.is_dir())


@pytest.mark.parametrize("name", SHIPPED)
def test_dry_run_prints_exactly_the_files_and_the_card(name, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["push", name, "--repo-id", f"my-org/{name}", "--dry-run"]) == 0
    out = capsys.readouterr().out
    listing, card = out.split("\n--- README.md ---\n")
    listed = [line.split()[0] for line in listing.splitlines() if line.startswith("  ")]
    folder = CHECKPOINTS_DIR / name
    model_files = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != "README.md")
    if (folder / "model_index.json").is_file():  # a diffusers pipeline: its component folders go up too
        model_files += sorted(str(p.relative_to(folder)) for p in folder.glob("*/*") if p.is_file())
    expected_card = str(render_card(info(name), origin=SnippetOrigin(f"my-org/{name}")))  # loads what was pushed
    assets = sorted(p.name for p in (CARDS_DIR / name).iterdir() if p.name != "README.md")  # the card's figures
    examples = sorted({f for _, f in downloaded_files(usage_code(card, name), name)})  # what the card's usage fetches
    assert listed == [*model_files, "README.md", *assets, *examples]
    assert any(n.split("/")[-1].endswith("model.safetensors") for n in listed) and "training.json" in listed
    assert card.rstrip("\n") == expected_card.rstrip("\n")
    validate_card(ModelCard(card))
    subfolders = [p.name for p in folder.iterdir() if p.is_dir() and not any(n.startswith(f"{p.name}/") for n in listed)]
    assert all(f"left behind: {d}/" in listing for d in subfolders)


def _folder(tmp_path: Path, weights: str) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    if weights.endswith(".safetensors"):
        save_file({"w": torch.zeros(2)}, str(folder / weights))
    else:
        torch.save({"w": torch.zeros(2)}, folder / weights)
    return folder


def test_refuses_pickled_weights(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = _folder(tmp_path, "pytorch_model.bin")
    with pytest.raises(PushError, match=r"pickled weights \['pytorch_model.bin'\].*safe_serialization"):
        plan_push("gui-grounding-tiny", "my-org/x", source=str(folder))
    assert main(["push", "gui-grounding-tiny", "--repo-id", "my-org/x", "--source", str(folder), "--dry-run"]) == 1
    assert "refusing to publish" in capsys.readouterr().err


def test_refuses_folders_without_safetensors_or_config(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    with pytest.raises(PushError, match="no \\*.safetensors"):
        plan_push("gui-grounding-tiny", "my-org/x", source=str(folder))
    folder = _folder(tmp_path, "model.safetensors")
    (folder / "config.json").unlink()
    with pytest.raises(PushError, match="has none of model_index.json, open_clip_config.json, policy_config.json, config.json"):
        plan_push("gui-grounding-tiny", "my-org/x", source=str(folder))


def test_refuses_gated_entries_missing_folders_and_bad_repo_ids():
    with pytest.raises(PushError, match="gated"):
        plan_push("patho-r1-7b", "my-org/patho")
    with pytest.raises(PushError, match="--source"):
        plan_push("vlm-r1-rec-3b", "my-org/rec")
    with pytest.raises(PushError, match="org/name"):
        plan_push("gui-grounding-tiny", "not a repo id")


def test_offline_push_without_dry_run_says_so(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    plan = plan_push("gui-grounding-tiny", "my-org/gui-grounding-tiny")
    with pytest.raises(PushError, match="--dry-run"):
        push(plan)


class RecordingApi:
    """Stands in for huggingface_hub.HfApi (no network here): records calls, returns Hub-shaped answers."""

    calls: ClassVar[list] = []

    def create_repo(self, repo_id, repo_type, private, exist_ok):
        self.calls.append(("create_repo", repo_id, repo_type, private, exist_ok))
        return f"https://huggingface.co/{repo_id}"

    def upload_folder(self, repo_id, folder_path, repo_type, commit_message):
        staged = {p.relative_to(folder_path).as_posix(): p.read_bytes() for p in Path(folder_path).rglob("*")
                  if p.is_file()}  # fmt: skip
        self.calls.append(("upload_folder", repo_id, repo_type, commit_message, staged))
        return SimpleNamespace(oid="0123456789abcdef0123456789abcdef01234567",
                               commit_url=f"https://huggingface.co/{repo_id}/commit/0123456")


def test_upload_creates_the_repo_sends_the_plan_in_one_commit_and_records_the_revision(tmp_path, monkeypatch):
    import huggingface_hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingApi)
    RecordingApi.calls = []
    plan = plan_push("gui-grounding-tiny", "my-org/gui-grounding-tiny", private=True)
    record = push(plan, record_dir=tmp_path)
    (create, repo_id, repo_type, private, exist_ok), (upload, *_, message, staged) = RecordingApi.calls
    assert (create, repo_id, repo_type, private, exist_ok) == ("create_repo", "my-org/gui-grounding-tiny", "model",
                                                               True, True)
    assert upload == "upload_folder" and message == "zoo push gui-grounding-tiny"
    assert sorted(staged) == sorted([*plan.files, "README.md", *(a for a, _ in plan.card_assets), *plan.examples])
    assert plan.examples == ("examples/screen.png",) and sorted(record["files"]) == sorted(staged)
    assert staged["README.md"].decode() == plan.card
    assert staged["model.safetensors"] == (plan.source / "model.safetensors").read_bytes()
    history = json.loads((tmp_path / "gui-grounding-tiny" / "hub_revisions.json").read_text())
    assert history == [record] and record["revision"] == "0123456789abcdef0123456789abcdef01234567"
    push(plan, record_dir=tmp_path)  # a second push appends, keeping the first revision
    assert len(json.loads((tmp_path / "gui-grounding-tiny" / "hub_revisions.json").read_text())) == 2


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_tokenizer_configs_carry_no_loading_context(name):
    """What transformers saves about how this machine read the files (offline, from a folder) would
    travel to the Hub with a push; the release drivers drop it (lab.ladder.drop_loading_context)."""
    from lab.ladder import LOADING_CONTEXT_KEYS

    for path in (CHECKPOINTS_DIR / name).rglob("tokenizer_config.json"):
        assert not set(json.loads(path.read_text())) & set(LOADING_CONTEXT_KEYS), path
