"""`zoo push` of a folder someone handed you: only its own regular files go, and only to a valid Hub id.

Review 3.1 / 3.3 / 6.4: a ``vocab.json -> ~/.cache/huggingface/token`` link (or a symlinked component
folder, or ``..`` in ``model_index.json``) made the push upload files from outside the folder. Here
``HOME`` is a temporary folder holding a fake token, ``huggingface_hub.HfApi`` is a recorder, and an
audit hook records every ``open()`` of the token: the refusal must come before anything reads it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.zoo.opened_files import watch
from tests.zoo.test_push import RecordingApi
from zoo.cli import main
from zoo.hub import CHECKPOINTS_DIR, is_repo_id
from zoo.push import PushError, plan_push, push

SECRET = "hf_SECRETtokenTHATmustNEVERleave"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A HOME with a Hub token and an SSH key in it."""
    home = tmp_path / "home"
    token = home / ".cache" / "huggingface" / "token"
    token.parent.mkdir(parents=True)
    token.write_text(SECRET)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text(f"-----BEGIN OPENSSH PRIVATE KEY----- {SECRET}")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def opened(home):
    """Every opening of the token or the key while the test runs."""
    with watch(home / ".cache" / "huggingface" / "token", home / ".ssh" / "id_ed25519") as seen:
        yield seen


def test_the_spy_sees_a_read_of_the_secret(home, opened):
    assert (home / ".cache" / "huggingface" / "token").read_text() == SECRET
    assert len(opened) == 1


def _copy(name: str, tmp_path: Path) -> Path:
    folder = tmp_path / "handed"
    shutil.copytree(CHECKPOINTS_DIR / name, folder, ignore=shutil.ignore_patterns("README.md"))
    return folder


@pytest.fixture
def recorder(monkeypatch):
    import huggingface_hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingApi)
    RecordingApi.calls = []
    return RecordingApi


@pytest.mark.parametrize(("name", "link"), [
    ("vocab.json", "{home}/.cache/huggingface/token"),  # absolute
    ("merges.txt", "../home/.ssh/id_ed25519"),  # relative, out of the folder
    ("config.json", "{home}/.cache/huggingface/token"),  # replacing a file the push needs
])  # fmt: skip
def test_a_link_out_of_the_folder_refuses_the_push_naming_it_and_nothing_reads_the_target(
    home, opened, tmp_path, recorder, capsys, name, link
):
    folder = _copy("gui-grounding-tiny", tmp_path)
    (folder / name).unlink(missing_ok=True)
    (folder / name).symlink_to(link.format(home=home))
    target = (folder / name).resolve()
    args = ["push", "gui-grounding-tiny", "--repo-id", "me/model", "--source", str(folder)]

    with pytest.raises(PushError, match=rf"{name} -> {target}.*refusing to push"):
        plan_push("gui-grounding-tiny", "me/model", source=str(folder))
    assert main([*args, "--dry-run"]) == 1
    assert main(args) == 1  # the real push: refused before the repository is created
    out, err = capsys.readouterr()
    assert err.count("\n") == 2 and all(f"{name} -> {target}" in line for line in err.splitlines())
    assert SECRET not in out + err
    assert recorder.calls == [] and opened == []


def test_a_symlinked_component_folder_is_refused_before_its_files_are_listed(home, tmp_path, recorder, capsys):
    folder = _copy("flow-grpo-tiny-colour", tmp_path)
    outside = home / ".docker"
    shutil.move(folder / "vae", outside)
    (outside / "config.json").write_text(json.dumps({"auth": SECRET}))
    (folder / "vae").symlink_to(outside)

    args = ["push", "flow-grpo-tiny-colour", "--repo-id", "me/model", "--source", str(folder)]
    with watch(*outside.iterdir()) as opened:
        with pytest.raises(PushError, match=rf"vae -> {outside}"):
            plan_push("flow-grpo-tiny-colour", "me/model", source=str(folder))
        assert main([*args, "--dry-run"]) == 1 and main(args) == 1
    out, err = capsys.readouterr()
    assert err.count(f"vae -> {outside}") == 2 and SECRET not in out + err and "vae/config.json" not in out
    assert recorder.calls == [] and opened == []


def test_a_real_push_checks_the_folder_again_before_sending(home, opened, tmp_path, recorder):
    """A link planted after the plan was made (or a plan built by hand) stops the push before create_repo."""
    folder = _copy("gui-grounding-tiny", tmp_path)
    plan = plan_push("gui-grounding-tiny", "me/model", source=str(folder))
    (folder / "tokenizer.json").unlink()
    (folder / "tokenizer.json").symlink_to(home / ".cache" / "huggingface" / "token")
    with pytest.raises(PushError, match="tokenizer.json -> .*token"):
        push(plan, record_dir=tmp_path / "records")
    assert recorder.calls == [] and opened == [] and not (tmp_path / "records").exists()


def test_links_that_stay_inside_the_folder_are_followed_and_odd_files_stay_behind(home, tmp_path, recorder):
    folder = _copy("gui-grounding-tiny", tmp_path)
    (folder / "tokenizers").mkdir()
    shutil.move(folder / "tokenizer.json", folder / "tokenizers" / "tokenizer.json")
    (folder / "tokenizer.json").symlink_to("tokenizers/tokenizer.json")
    os.mkfifo(folder / "merges.txt")  # copying a FIFO would block the push forever
    (folder / "vocab.json").symlink_to("missing.json")  # dangling, inside

    plan = plan_push("gui-grounding-tiny", "me/model", source=str(folder))
    assert "tokenizer.json" in plan.files and not {"merges.txt", "vocab.json"} & set(plan.files)
    assert {"merges.txt (not a regular file)", "vocab.json (not a regular file)"} <= set(plan.skipped)
    push(plan, record_dir=tmp_path / "records")
    staged = recorder.calls[1][-1]
    assert staged["tokenizer.json"] == (folder / "tokenizers" / "tokenizer.json").read_bytes()
    assert all(SECRET.encode() not in data for data in staged.values())


@pytest.mark.parametrize("component", ["../outside_dir", "/etc", "vae/../../outside_dir", "..", ""])
def test_pipeline_components_must_be_plain_sub_folder_names(tmp_path, component):
    folder = _copy("flow-grpo-tiny-colour", tmp_path)
    (tmp_path / "outside_dir").mkdir()
    (tmp_path / "outside_dir" / "config.json").write_text("{}")
    index = json.loads((folder / "model_index.json").read_text())
    (folder / "model_index.json").write_text(json.dumps({**index, component: ["diffusers", "AutoencoderKL"]}))
    with pytest.raises(PushError, match="not plain sub-folder names"):
        plan_push("flow-grpo-tiny-colour", "me/model", source=str(folder))


BAD_IDS = ["../..", "./x", "me/" + "a" * 200, "me/a--b", "me/-x", "me/x.", ".me/x", "a/b/c", "org/na me", "bad",
           "https://huggingface.co/me/x"]  # fmt: skip


@pytest.mark.parametrize("repo_id", BAD_IDS)
def test_repo_ids_the_hub_rejects_are_refused_in_the_dry_run_too(repo_id, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert not is_repo_id(repo_id)
    with pytest.raises(PushError, match="not a Hub repository id"):
        plan_push("gui-grounding-tiny", repo_id)
    assert main(["push", "gui-grounding-tiny", "--repo-id", repo_id, "--dry-run"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1


@pytest.mark.parametrize("repo_id", ["me/model", "My-Org/Qwen2.5-VL-7B_instruct", "a/" + "b" * 96])
def test_valid_repo_ids_pass(repo_id):
    assert is_repo_id(repo_id)
