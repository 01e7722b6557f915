"""Shared fixtures: offline Hub, a temporary Hugging Face cache, tiny taught Qwen-VL models."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
torch.set_num_threads(1)


def _skip_without_renderer():
    """A test (or its fixture) that needs a renderer this machine cannot load (cairosvg without the cairo C library,
    as on some GPU images) is skipped with the pool's own sentence, not failed: it is the machine's setup, not the
    code. Machines with the library never reach the skip."""
    from rewards.rendering import RendererUnavailableError

    try:
        return (yield)
    except RendererUnavailableError as err:
        pytest.skip(f"renderer unavailable on this machine: {err}")


pytest_runtest_setup = pytest.hookimpl(wrapper=True)(_skip_without_renderer)
pytest_runtest_call = pytest.hookimpl(wrapper=True)(_skip_without_renderer)
pytest_runtest_teardown = pytest.hookimpl(wrapper=True)(_skip_without_renderer)

#: Folders whose tests share a session fixture that is costly to build on a worker: every file under one is one
#: unit of ``--dist loadfile``, so the fixture is built on one worker only. ``tests/demo``: five ``zoo demo``
#: servers and a chromium (measured on 2 cores: 145 CPU-s when its files were spread over both workers, 74 on one).
ONE_WORKER_FOLDERS = ("tests/demo/",)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadfile`` with :data:`ONE_WORKER_FOLDERS` each sent to one worker as a whole; any other
    distribution mode keeps pytest-xdist's own scheduler. Optional: without pytest-xdist the hook is unknown."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FolderAwareLoadFile(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return next((folder for folder in ONE_WORKER_FOLDERS if scope.startswith(folder)), scope)

    return FolderAwareLoadFile(config, log)


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face hub cache used by huggingface_hub for this test, with the Hub offline."""
    from huggingface_hub import constants

    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


@pytest.fixture
def install() -> Callable[..., Path]:
    """``install(model_dir, repo_id, cache)``: put a model directory into a cache as the Hub would."""
    from tests.hub_layout import install_in_cache

    return install_in_cache
