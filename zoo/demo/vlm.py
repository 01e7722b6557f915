"""The VLM page: an image and a question in; the raw answer, its parsed fields and the drawing out.

It calls the pipeline as ``zoo run NAME --image --prompt [--system] [--template]`` does, so the page
and the command give the same text and fields for the same input; the drawing is
:func:`zoo.visualize.draw_prediction` (what ``zoo run --draw`` writes) plus every detected object and
a GUI action's points, all in original pixels.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import gradio as gr
from PIL import Image

from zoo.demo.errors import InputError, Noted, guarded
from zoo.demo.examples import Example
from zoo.demo.upload import image_upload, read_upload
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


def geometry_note(pred: Prediction) -> str | None:
    """The status line's note for an answer that points nowhere (the parse itself stays the authors')."""
    if pred.geometry_warning is None:
        return None
    return f"the model's answer points nowhere on this image: {pred.geometry_warning}; what lies outside is not drawn"


def build(pipe: Any, examples: tuple[Example, ...]) -> None:
    """The question-about-an-image tab of ``pipe``'s page (inside an open ``gr.Blocks``), opening on ``examples[0]``."""
    spec = pipe.entry.spec
    first = examples[0]
    with gr.Row():
        with gr.Column():
            image = image_upload(label="image", value=_path(first), height=320,
                                elem_id="image")  # fmt: skip
            question = gr.Textbox(label="question", value=first.prompt(), lines=2, elem_id="question")
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

    if len(examples) > 1:
        gr.Examples([[_path(e), e.prompt()] for e in examples], [image, question], label="examples")

    run.click(guarded(functools.partial(answer, pipe), 4), [image, question, system, template],
              [status, drawn, action, text, fields])  # fmt: skip


def answer(pipe: Any, path: str | None, q: str, variant: str, user_template: str) -> tuple[Any, ...] | Noted:
    """The Run button: ``(drawing, action, raw text, parsed fields)``, with a note when the answer points nowhere."""
    template = None if user_template == DEFAULT else user_template
    if not (q or "").strip() and pipe.entry.spec.asks_a_question(template):
        raise InputError(f"type a question: {pipe.entry.name} answers one about the image")
    picture = read_upload(path)  # a missing, broken, non-image or oversized upload is refused here, by name
    pred = pipe(picture, q, system=None if variant == DEFAULT else variant, template=template, seed=0)
    acted = json.dumps(pred.action) if pred.action else ""
    outputs = (draw(picture, pred, q), acted, pred.text, parsed_fields(pred))
    note = geometry_note(pred)
    return Noted(note, outputs) if note else outputs


def _path(example: Example) -> str | None:
    path = example.image_path()
    return str(path) if path is not None else None
