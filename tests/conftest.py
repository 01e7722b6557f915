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
#: The costliest units of ``--dist loadfile``, costliest first (CPU-seconds of each within a whole 2-core run, its
#: own and its subprocesses', measured): files whose tests launch jobs of their own (torchrun ranks, the GPU suite's
#: reduced mode, verl's venv, demo servers, a site build) or train in-process for long. They are handed out first, so
#: the many short files keep the other worker busy meanwhile and the run does not end on one of them with a worker
#: idle (it did: the GPU suite's two serial minutes, handed out late, were the last 20 s of a run with one core idle);
#: pytest-xdist's own order (most tests first) would hand these few-test files out last.
FIRST_UNITS = (
    "tests/engines/test_vlm_sharded.py",  # ~234 (9 two-rank launches)
    "tests/engines/test_diffusion_sharded.py",  # ~145 (6 two-rank launches)
    "tests/bench/test_gpu_suite.py",  # 118
    "tests/demo/",  # 90
    "tests/engines/test_sft_multiprocess.py",  # 62
    "tests/engines/test_trl_multiprocess.py",  # 61
    "tests/docs/test_site.py",  # 59
    "tests/verl/test_verl_reads_export.py",  # 50
    "tests/contract/test_domains.py",  # 34
    "tests/zoo/test_memory_plan_tensors.py",  # 31
    "tests/engines/test_master_weights.py",  # 31
    "tests/contract/test_readme_examples.py",  # 29
    "tests/zoo/test_card_snippets.py",  # 28
    "tests/contract/test_import_order.py",  # 28
    "tests/zoo/test_load.py",  # 27
    "tests/rewards/adversarial/test_unprivileged.py",  # 16
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadfile`` with :data:`ONE_WORKER_FOLDERS` each sent to one worker as a whole and
    :data:`FIRST_UNITS` handed out first; any other distribution mode keeps pytest-xdist's own scheduler. Optional:
    without pytest-xdist the hook is unknown."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FolderAwareLoadFile(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return next((folder for folder in ONE_WORKER_FOLDERS if scope.startswith(folder)), scope)

        def next_unit(self) -> str:
            """The unit to hand out next: the first of :data:`FIRST_UNITS` still waiting, else xdist's next."""
            return next((unit for unit in FIRST_UNITS if unit in self.workqueue), next(iter(self.workqueue)))

        def _assign_work_unit(self, node: object) -> None:
            self.workqueue.move_to_end(self.next_unit(), last=False)
            super()._assign_work_unit(node)

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
