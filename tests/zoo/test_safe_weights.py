"""Pickled ``.pt`` weights: a malicious file is refused without running its payload; a clean state dict loads."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from zoo.safe_weights import UnsafeCheckpointError, convert_pickled


class _Payload:
    """Unpickling this calls ``os.mkdir(marker)``: the classic ``__reduce__`` code-execution trick."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (str(self.marker),))


def _malicious_pt(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "payload-ran"
    path = tmp_path / "PathoCLIP-B.pt"
    # looks like a state dict: real tensors, plus one entry that executes code when unpickled
    torch.save({"visual.proj": torch.zeros(2, 2), "logit_scale": _Payload(marker)}, path)
    return path, marker


def test_the_payload_is_live_under_plain_unpickling(tmp_path: Path) -> None:
    """Control: the fixture really is malicious, so the refusal below is not vacuous."""
    path, marker = _malicious_pt(tmp_path)
    torch.load(path, weights_only=False)
    assert marker.is_dir()


def test_malicious_pickle_is_refused_and_never_executed(tmp_path: Path) -> None:
    path, marker = _malicious_pt(tmp_path)
    with pytest.raises(UnsafeCheckpointError, match="Nothing in it was executed"):
        convert_pickled(path, cache=tmp_path / "cache")
    assert not marker.exists()
    assert not list((tmp_path / "cache").rglob("*.safetensors"))


@pytest.mark.parametrize(
    "obj",
    [torch.zeros(3), {"a": torch.zeros(1), "epoch": 3}, {}, [torch.zeros(1)]],
    ids=["bare-tensor", "mixed-dict", "empty", "list"],
)
def test_loadable_but_not_a_state_dict_is_refused(tmp_path: Path, obj: object) -> None:
    path = tmp_path / "x.pt"
    torch.save(obj, path)
    with pytest.raises(UnsafeCheckpointError, match="state dict"):
        convert_pickled(path, cache=tmp_path / "cache")


def test_clean_state_dict_converts_once_and_round_trips(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    state = {"module.w": torch.arange(6.0).view(2, 3), "module.b": torch.ones(3)}
    path = tmp_path / "PathoCLIP-B.pt"
    torch.save({"epoch": 10, "name": "run", "state_dict": state}, path)  # open_clip's training layout
    first = convert_pickled(path, cache=tmp_path / "cache")
    assert first.suffix == ".safetensors" and first.parent.name != "cache"
    loaded = load_file(first)
    assert set(loaded) == {"w", "b"} and torch.equal(loaded["w"], state["module.w"])
    mtime = first.stat().st_mtime_ns
    assert convert_pickled(path, cache=tmp_path / "cache") == first and first.stat().st_mtime_ns == mtime


def test_patho_clip_pt_loads_through_the_pipeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The authors' layout (one pickled ``.pt`` of an open_clip architecture) loads with no hand conversion."""
    import dataclasses

    import open_clip

    from tests.pipelines.test_clip import TINY_CFG, _tiny_clip
    from zoo.hub import ResolvedModel
    from zoo.pipelines.clip import load_clip_pipeline
    from zoo.registry import info

    monkeypatch.setattr("zoo.safe_weights.CONVERTED_CACHE", tmp_path / "cache")
    cfg = tmp_path / "zoo-test-tiny-clip.json"
    cfg.write_text(json.dumps(TINY_CFG))
    open_clip.add_model_config(cfg)
    model = _tiny_clip(seed=2)
    weights = tmp_path / "snapshot"
    weights.mkdir()
    torch.save(model.state_dict(), weights / "PathoCLIP-B.pt")
    entry = dataclasses.replace(info("patho-clip-b"), architecture="zoo-test-tiny-clip")
    pipe = load_clip_pipeline(entry, ResolvedModel(weights, "local", "local"), "cpu", torch.float32)
    got = pipe.model.state_dict()
    assert all(torch.equal(got[k], v) for k, v in model.state_dict().items())
    assert list(weights.iterdir()) == [weights / "PathoCLIP-B.pt"]  # the converted copy lives in the cache


def test_malicious_patho_clip_pt_is_refused_by_the_pipeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from zoo.hub import ResolvedModel
    from zoo.pipelines.clip import load_clip_pipeline
    from zoo.registry import info

    monkeypatch.setattr("zoo.safe_weights.CONVERTED_CACHE", tmp_path / "cache")
    _, marker = _malicious_pt(tmp_path)
    with pytest.raises(UnsafeCheckpointError):
        load_clip_pipeline(info("patho-clip-b"), ResolvedModel(tmp_path, "local", "local"), "cpu", torch.float32)
    assert not marker.exists()
