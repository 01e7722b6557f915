"""The VLM page: an image and a question in; the raw answer, its parsed fields and the drawing out.

It calls the pipeline as ``zoo run NAME --image --prompt [--system] [--template]`` does, so the page
and the command give the same text and fields for the same input; the drawing is
:func:`zoo.visualize.draw_prediction` (what ``zoo run --draw`` writes) plus every detected object and
a GUI action's points, all in original pixels.
"""

from __future__ import annotations

import json
from typing import Any

import gradio as gr
from PIL import Image

from zoo.demo.errors import InputError, guarded
from zoo.demo.examples import Example
from zoo.images import load_image
from zoo.outputs import Prediction
from zoo.visualize import draw_prediction

#: The choice that keeps the authors' default system prompt or user template.
DEFAULT = "(authors' default)"


def draw(image: Image.Image, pred: Prediction, label: str) -> Image.Image:
    """``image`` with the predicted box/point, each detected object's box and a GUI action's points drawn."""
    out = draw_prediction(image, bbox=pred.bbox, point=pred.point, label=label)
    for obj in pred.objects or []:
        out = draw_prediction(out, bbox=obj.get("bbox"))
    action = pred.action or {}
    for key in ("coordinate", "coordinate2"):  # UI-S1's click/swipe points, mapped to original pixels
        if isinstance(action.get(key), (list, tuple)) and len(action[key]) == 2 and action[key] != pred.point:
            out = draw_prediction(out, point=action[key])
    return out


def parsed_fields(pred: Prediction) -> str:
    """The prediction as ``zoo run --json`` prints it, without the raw text (shown beside it)."""
    fields = {k: v for k, v in pred.to_dict().items() if k != "text"}
    return json.dumps(fields, indent=2)


def build(pipe: Any, example: Example) -> None:
    """The question-about-an-image tab of ``pipe``'s page (inside an open ``gr.Blocks``)."""
    spec = pipe.entry.spec
    with gr.Row():
        with gr.Column():
            image = gr.File(label="image", file_types=["image"], type="filepath", value=_path(example),
                            elem_id="image")  # fmt: skip
            question = gr.Textbox(label="question", value=example.prompt(), lines=2, elem_id="question")
            system = gr.Dropdown([DEFAULT, *spec.variants], value=DEFAULT, label="system prompt (published variants)",
                                 visible=bool(spec.variants), elem_id="system")  # fmt: skip
            template = gr.Dropdown([DEFAULT, *spec.templates], value=DEFAULT, label="user template",
                                   visible=bool(spec.templates), elem_id="template")  # fmt: skip
            run = gr.Button("Run", variant="primary", elem_id="run")
        with gr.Column():
            status = gr.Markdown(elem_id="status")
            drawn = gr.Image(label="prediction (original pixels)", type="pil", format="png", interactive=False,
                             elem_id="drawn")  # fmt: skip
            action = gr.Textbox(label="action", interactive=False, elem_id="action")
            text = gr.Textbox(label="raw text", lines=4, interactive=False, elem_id="raw-text")
            fields = gr.Textbox(label="parsed fields (JSON, original pixels)", lines=8, interactive=False,
                                elem_id="parsed")  # fmt: skip

    def answer(path: str | None, q: str, variant: str, user_template: str) -> tuple[Any, ...]:
        if not path:
            raise InputError("upload an image first")
        if not (q or "").strip() and spec.asks_a_question(None if user_template == DEFAULT else user_template):
            raise InputError(f"type a question: {pipe.entry.name} answers one about the image")
        picture = load_image(path)  # a broken, non-image or oversized upload is refused here, by name
        pred = pipe(picture, q, system=None if variant == DEFAULT else variant,
                    template=None if user_template == DEFAULT else user_template, seed=0)  # fmt: skip
        acted = json.dumps(pred.action) if pred.action else ""
        return draw(picture, pred, q), acted, pred.text, parsed_fields(pred)

    run.click(guarded(answer, 4), [image, question, system, template], [status, drawn, action, text, fields])


def _path(example: Example) -> str | None:
    path = example.image_path()
    return str(path) if path is not None else None
