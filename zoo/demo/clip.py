"""The CLIP page: an image and class names in; zero-shot probabilities out (``zoo run`` with ``--prompt 'a, b'``)."""

from __future__ import annotations

import json
from typing import Any

import gradio as gr

from zoo.demo.errors import InputError, guarded
from zoo.demo.examples import Example
from zoo.demo.upload import image_upload, read_upload


def class_names(text: str) -> list[str]:
    """The comma-separated class names of ``text`` (two or more, as ``zoo run`` asks)."""
    names = [name.strip() for name in (text or "").split(",") if name.strip()]
    if len(names) < 2:
        raise InputError("type two or more class names, separated by commas (e.g. 'a cat, a dog')")
    return names


def build(pipe: Any, examples: tuple[Example, ...]) -> None:
    """The zero-shot classification tab of ``pipe``'s page (inside an open ``gr.Blocks``), opening on examples[0]."""
    path = examples[0].image_path()
    with gr.Row():
        with gr.Column():
            image = image_upload(label="image", value=str(path) if path else None,
                                height=320, elem_id="image")  # fmt: skip
            labels = gr.Textbox(label="class names, comma-separated", value=examples[0].prompt(), elem_id="labels")
            run = gr.Button("Classify", variant="primary", elem_id="run")
        with gr.Column():
            status = gr.Markdown(elem_id="status")
            chart = gr.Label(label="probabilities", elem_id="chart")
            exact = gr.Textbox(label="probabilities (JSON)", lines=6, interactive=False, elem_id="probabilities")

    def classify(upload: str | None, text: str) -> tuple[Any, ...]:
        names = class_names(text)
        probabilities = pipe(read_upload(upload), names)
        return probabilities, json.dumps(probabilities, indent=2)

    run.click(guarded(classify, 2), [image, labels], [status, chart, exact])
