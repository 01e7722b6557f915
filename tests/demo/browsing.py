"""Driving ``zoo demo`` in a real browser: the server subprocess, Debian's chromium, and page helpers."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 240


def chromium_path() -> str | None:
    """Debian's chromium (``ZOO_CHROMIUM`` overrides); Playwright's own browser download is never used."""
    return os.environ.get("ZOO_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class DemoServer:
    """One ``zoo demo NAME --port P`` subprocess and its log."""

    name: str
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> DemoServer:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "zoo.cli", "demo", self.name, "--port", str(self.port), "--device", "cpu"],
            cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1", **self.env},
            stdout=self.log.open("w"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        return self

    def wait(self) -> str:
        """The URL once the page answers; a server that exits or never answers fails with its log."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"zoo demo {self.name} exited ({self.process.returncode}):\n{self.log.read_text()}")
            try:
                with urllib.request.urlopen(self.url, timeout=2) as response:
                    if response.status == 200:
                        return self.url
            except OSError:
                time.sleep(1)
        raise RuntimeError(f"zoo demo {self.name} did not answer in {START_TIMEOUT_S} s:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()


def tiny_clip_dir(folder: Path) -> Path:
    """A random tiny open_clip model in the layout ``open_clip.push_to_hf_hub`` writes (built as the CLIP tests do)."""
    from tests.pipelines.test_clip import _save_hub_layout, _tiny_clip

    return _save_hub_layout(_tiny_clip(), folder)


def gated_entry() -> str:
    """A gated entry whose weights are on the Hub (so, offline with an empty cache, its page must say what to do)."""
    import zoo

    return next(n for n in zoo.list_models() if zoo.info(n).gated and zoo.info(n).repo_id)


def open_page(browser: object, server: DemoServer) -> object:
    """A fresh page on ``server``'s URL, once its run button (or its unavailable notice) is shown."""
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(server.url)
    page.wait_for_selector("#run, #unavailable", timeout=60_000)
    return page


def shoot(page: object, folder: Path, name: str) -> Path:
    path = folder / f"demo-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path


def textbox(page: object, elem_id: str) -> str:
    return page.locator(f"#{elem_id} textarea, #{elem_id} input").first.input_value()


def fill(page: object, elem_id: str, text: str) -> None:
    """Type ``text`` into textbox ``elem_id`` (a one-line box is an ``input``, a taller one a ``textarea``)."""
    page.locator(f"#{elem_id} textarea, #{elem_id} input").first.fill(text)


def wait_for_text(page: object, elem_id: str, before: str = "", timeout: float = 120_000) -> str:
    """The value of textbox ``elem_id`` once it is neither empty nor ``before`` (the value before the press)."""
    page.wait_for_function(
        "([id, old]) => { const el = document.querySelector(`#${id} textarea, #${id} input`);"
        " return el && el.value.length > 0 && el.value !== old }",
        arg=[elem_id, before], timeout=timeout,
    )  # fmt: skip
    return textbox(page, elem_id)


def wait_for_status(page: object, fragment: str, elem_id: str = "status", timeout: float = 60_000) -> str:
    """The page's status line once it contains ``fragment`` (name the expected message: an earlier one may linger)."""
    page.wait_for_function(
        "([id, part]) => (document.querySelector(`#${id}`)?.innerText || '').includes(part)",
        arg=[elem_id, fragment], timeout=timeout,
    )  # fmt: skip
    return page.locator(f"#{elem_id}").inner_text()


def upload(page: object, elem_id: str, path: Path) -> None:
    """Replace the image of upload component ``elem_id`` with ``path``, once the page previews it (a broken file too:
    its preview is a broken image, with the uploaded file's address)."""
    page.locator(f"#{elem_id} input[type=file]").set_input_files(str(path))
    page.wait_for_function(
        "([id, name]) => [...document.querySelectorAll(`#${id} img`)]"
        ".some(img => decodeURIComponent(img.src).endsWith('/' + name))",
        arg=[elem_id, path.name], timeout=30_000,
    )  # fmt: skip


def image_bytes(page: object, elem_id: str) -> bytes:
    """The bytes of the image component ``elem_id`` shows, fetched from the server as the browser does."""
    src = page.locator(f"#{elem_id} img").first.get_attribute("src")
    return page.request.get(src).body()
