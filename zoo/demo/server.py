"""Build the page of a model's kind and serve it (``zoo demo``).

The model is loaded once, as ``zoo run`` loads it (:func:`zoo.load`); a model that cannot be loaded
here gets a page saying why (:mod:`zoo.demo.errors`). Served on 127.0.0.1 unless asked otherwise,
with Gradio's analytics off and uploads capped.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from zoo.demo.card import card_summary
from zoo.demo.errors import UNAVAILABLE, unavailable_reason
from zoo.demo.examples import EXAMPLES_DIR, example_for

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
                importlib.import_module(module).build(pipe, example_for(entry.name))
            with gr.Tab("Score with a reward", id="reward"):
                reward.build()
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
    app = build_app(name, device=device, trust_remote_code=trust_remote_code)
    app.queue(default_concurrency_limit=1)  # one model, one request at a time: CPU pages stay responsive
    app.launch(server_name=host, server_port=port, share=share, max_file_size=MAX_UPLOAD,
               allowed_paths=[str(EXAMPLES_DIR)], show_error=False, inbrowser=False)  # fmt: skip
