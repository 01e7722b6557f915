"""Build the page of a model's kind and serve it (``zoo demo``).

The model is loaded once, as ``zoo run`` loads it (:func:`zoo.load`), before the page is built (zoo: loading
it on a thread while Gradio is imported gave no earlier first page on 2 cores, both being import work under
one interpreter lock; ``bench/demo_first_page.py`` times it); a model that cannot be loaded here gets a page
saying why (:mod:`zoo.demo.errors`). Served on 127.0.0.1 unless asked otherwise, with Gradio's analytics off
and uploads capped.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.demo.card import card_summary
from zoo.demo.errors import UNAVAILABLE, unavailable_reason
from zoo.demo.examples import EXAMPLES_DIR, examples_for

if TYPE_CHECKING:
    import gradio as gr

logger = logging.getLogger(__name__)

#: kind -> (module building its tab, the tab's title).
PAGES = {
    "vlm": ("zoo.demo.vlm", "Ask about an image"),
    "diffusion": ("zoo.demo.diffusion", "Draw a prompt"),
    "policy": ("zoo.demo.policy", "Run episodes"),
    "clip": ("zoo.demo.clip", "Classify an image"),
}
#: Seconds between the looks of an idle Gradio queue for work, and between its looks for progress to send: Gradio's
#: own intervals on Windows (gradio 6.31: gradio/queueing.py:149-152). zoo: its Linux ones, 1 and 10 ms, held an idle
#: page at 9% of a core on the 2-core machine (3% with these); a click waits at most 50 ms more for its turn, next to
#: seconds of inference, and a progress bar moves ten times a second.
IDLE_QUEUE_POLL_S = 0.05
PROGRESS_POLL_S = 0.1
#: Largest upload accepted (zoo: a screenshot is a few MB; larger files are refused before they are read).
MAX_UPLOAD = "20mb"


def build_app(name: str, *, device: str = "auto", trust_remote_code: bool = False) -> gr.Blocks:
    """The page for ``name`` (a registry name, Hub id or model directory): its kind's tab and the reward tab."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # read when gradio is first imported
    import gradio as gr

    from zoo.demo import reward
    from zoo.load import load

    try:
        pipe: Any = load(name, device=device, trust_remote_code=trust_remote_code)
    except UNAVAILABLE as err:
        logger.warning("%s cannot run here: %s", name, err)
        return unavailable_page(name, err)
    entry = pipe.entry
    module, title = PAGES[entry.kind]
    with gr.Blocks(title=f"zoo demo: {entry.name}", analytics_enabled=False) as app:
        gr.Markdown(card_summary(entry, f"{pipe.source} @ {pipe.revision}"), elem_id="card")
        with gr.Tabs():
            with gr.Tab(title, id="model"):
                importlib.import_module(module).build(pipe, examples_for(entry.name))
            with gr.Tab("Score with a reward", id="reward"):
                reward.build(reward.entry_rewards(entry.name, entry.domain))
    return app


def unavailable_page(name: str, err: Exception) -> gr.Blocks:
    """A page that says why ``name`` cannot run and what to do (never a traceback)."""
    import gradio as gr

    from zoo.registry import MODELS

    with gr.Blocks(title=f"zoo demo: {name} cannot run", analytics_enabled=False) as app:
        if name in MODELS:
            gr.Markdown(card_summary(MODELS.get(name)), elem_id="card")
        gr.Markdown(unavailable_reason(name, err), elem_id="unavailable")
    return app


def launch(name: str, *, host: str = "127.0.0.1", port: int | None = None, share: bool = False,
           device: str = "auto", trust_remote_code: bool = False) -> None:  # fmt: skip
    """Serve ``name``'s page until interrupted (Ctrl-C, or SIGTERM: both exit cleanly, so the page's temporary files
    go with the server)."""
    # zoo: a headless server draws MuJoCo scenes through EGL (the default needs a display)
    os.environ.setdefault("MUJOCO_GL", "egl")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if host not in LOCAL_HOSTS:
        logger.warning("serving on %s: anyone who can reach this machine on that address can run %s and see what it "
                       "is given and answers (uploads included); bind 127.0.0.1 to keep the page to this machine",
                       host, name)  # fmt: skip
    with private_outputs():
        app = build_app(name, device=device, trust_remote_code=trust_remote_code)
        app.queue(default_concurrency_limit=1)  # one model, one request at a time: CPU pages stay responsive
        poll_idle_queue_less(app)
        app.launch(server_name=host, server_port=port, share=share, max_file_size=MAX_UPLOAD,
                   allowed_paths=[str(EXAMPLES_DIR)], show_error=False, inbrowser=False)  # fmt: skip


def poll_idle_queue_less(app: gr.Blocks) -> None:
    """Let ``app``'s queue look for work every :data:`IDLE_QUEUE_POLL_S` when it has none, and for progress to send
    every :data:`PROGRESS_POLL_S`. Gradio has no public setting for either; should a Gradio release rename them, the
    page keeps Gradio's own intervals and the log says so."""
    queue = getattr(app, "_queue", None)
    if not all(hasattr(queue, name) for name in ("sleep_when_free", "progress_update_sleep_when_free")):
        logger.info("this Gradio's queue has other attributes: an idle page polls at Gradio's own intervals")
        return
    queue.sleep_when_free = IDLE_QUEUE_POLL_S
    queue.progress_update_sleep_when_free = PROGRESS_POLL_S


#: Addresses that keep the page to this machine.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


@contextlib.contextmanager
def private_outputs() -> Iterator[Path]:
    """This server's own folder for what the page writes (uploads, drawn answers: gradio's ``GRADIO_TEMP_DIR``),
    readable by this user alone (``mkdtemp``: 0700) and removed when the server stops, rather than the shared gradio
    cache under the temporary directory, where outputs stayed world-readable and every running demo served them
    (review-reliability 7.10). Set before gradio is imported: some of its modules read the variable once."""
    folder = Path(tempfile.mkdtemp(prefix="zoo-demo-outputs-"))
    before = os.environ.get("GRADIO_TEMP_DIR")
    os.environ["GRADIO_TEMP_DIR"] = str(folder)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if before is None:
            os.environ.pop("GRADIO_TEMP_DIR", None)
        else:
            os.environ["GRADIO_TEMP_DIR"] = before
