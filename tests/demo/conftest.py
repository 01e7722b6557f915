"""Real browser, real servers: ``zoo demo`` subprocesses driven by Debian's chromium through Playwright.

Every page under test is started once for the package, all at the same time (startup is mostly imports, so
the servers overlap), and each test module drives its own. The servers and the browser stop when the package's last
test is done, not when its worker ends: an idle page still polls (a Gradio queue, a uvicorn tick), and the five
servers, kept alive to the end of a 2-core ``make test``, used 360 CPU-seconds of it (measured), mostly polling.
Screenshots go to pytest's temporary directory; their paths are printed (``-s`` shows them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.demo.browsing import DemoServer, chromium_path, gated_entry, tiny_clip_dir


@pytest.fixture(scope="package")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, DemoServer]]:
    """Every page the tests drive, started together: one shipped checkpoint per kind, a tiny CLIP, a gated entry."""
    if chromium_path() is None:
        pytest.skip("chromium is not installed (apt-get install chromium); .ci/run installs it in CI")
    pytest.importorskip("gradio", reason="the demo extra is not installed (pip install -e '.[demo]')")
    pytest.importorskip("playwright", reason="the demo extra is not installed (pip install -e '.[demo]')")
    logs = tmp_path_factory.mktemp("demo-logs")
    empty_cache = tmp_path_factory.mktemp("empty-hf-home")
    clip = tiny_clip_dir(tmp_path_factory.mktemp("clip") / "tiny-clip")
    offline = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(empty_cache), "HF_HUB_CACHE": str(empty_cache / "hub")}
    pages = {"vlm": DemoServer("gui-grounding-tiny", logs / "vlm.log"),
             "diffusion": DemoServer("flow-grpo-tiny-colour", logs / "diffusion.log"),
             "policy": DemoServer("fetch-push-bc-tiny", logs / "policy.log"),
             "clip": DemoServer(str(clip), logs / "clip.log"),
             "gated": DemoServer(gated_entry(), logs / "gated.log", env=offline)}  # fmt: skip
    try:
        for server in pages.values():
            server.start()
        for server in pages.values():
            server.wait()
        yield pages
    finally:
        for server in pages.values():
            server.stop()


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    if path is None:
        pytest.skip("chromium is not installed (apt-get install chromium); .ci/run installs it in CI")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="package")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo-screenshots")
