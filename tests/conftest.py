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
