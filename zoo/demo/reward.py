"""The reward tab of every page: a model output and a target in; score, components and error out.

The reward is the registry's (``rewards.get(name)``), called as training calls it
(``reward([output], [RewardSample(target)])``), so model-written code runs only in the sandbox's render
workers. For a render reward (one with a render ``kind``: SVG, matplotlib, CadQuery) the target's
``image`` is the uploaded reference, and the page shows the output as the sandbox renders it beside it.
The tab opens on the reward the zoo's recipes train the page's model with (:func:`entry_rewards`).
"""

from __future__ import annotations

import json
import math
from typing import Any

import gradio as gr
from PIL import Image

import rewards
from rewards import RewardSample
from rewards.rendering.validate import KINDS as RENDER_KINDS
from zoo.demo.errors import InputError, guarded
from zoo.demo.upload import image_upload, read_upload


def render_kind(reward: Any) -> str | None:
    """The sandbox render kind a reward draws model output with, or ``None`` for a text reward."""
    kind = getattr(reward, "kind", None)
    return kind if isinstance(kind, str) and kind in RENDER_KINDS else None


def read_target(text: str) -> dict[str, Any]:
    """The target as a JSON object (``{}`` when empty)."""
    if not (text or "").strip():
        return {}
    try:
        target = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f'the target is not JSON ({err}); write an object, e.g. {{"answer": "B"}}') from None
    if not isinstance(target, dict):
        raise InputError(f"the target must be a JSON object of the reward's fields, got a {type(target).__name__}")
    return target


def score(name: str, output: str, target_text: str, reference: str | None) -> tuple[Any, ...]:
    """``(score, components JSON, error, rendered output, reference)`` of reward ``name`` on one output."""
    if not name:
        raise InputError("pick a reward")
    if not (output or "").strip():
        raise InputError("paste a model output to score")
    reward = rewards.get(name)
    target, kind = read_target(target_text), render_kind(reward)
    picture: Image.Image | None = None
    if kind is not None:
        if not reference:
            raise InputError(f"{name} compares a rendering with a reference: upload the target image")
        picture = read_upload(reference, what="the target image")
        target["image"] = picture
    [result] = reward([output], [RewardSample(target)])
    rendered = _rendered(kind, output, reward) if kind is not None else None
    value = "none (masked: the reward could not be computed)" if result.score is None else f"{result.score:.6g}"
    components = json.dumps({k: (None if isinstance(v, float) and math.isnan(v) else v)
                             for k, v in result.components.items()}, indent=2, default=str)  # fmt: skip
    return value, components, result.error or "", rendered, picture


def _rendered(kind: str, output: str, reward: Any) -> Image.Image | None:
    """The output as the sandbox renders it for ``reward`` (``None`` when the render failed: the error says why)."""
    size = getattr(reward, "size", (256, 256))
    return rewards.render(kind, output, size=tuple(size), timeout=float(getattr(reward, "timeout", 10.0))).image


def entry_rewards(entry: str, domain: str) -> list[str]:
    """The registered rewards of the recipes of ``domain`` that train ``entry`` (naming it as ``model.entry``, in
    ``reproduces`` or as their own name), in recipe order: what the page's model was, or would be, trained with."""
    from zoo.domains import DOMAINS
    from zoo.recipe_file import read_yaml

    known, found = set(rewards.list()), []
    for path in DOMAINS.get(domain).recipe_files() if domain in DOMAINS else []:
        recipe = read_yaml(path)
        if entry not in ((recipe.get("model") or {}).get("entry"), recipe.get("reproduces"), recipe.get("name")):
            continue
        for item in recipe.get("rewards") or []:
            reward = item.get("name") if isinstance(item, dict) else item
            if reward in known and reward not in found:
                found.append(reward)
    return found


def build(own: list[str]) -> None:
    """The reward tab (inside an open ``gr.Blocks``), opening on ``own[0]``, the first of the model's own rewards."""
    with gr.Row():
        with gr.Column():
            label = f"reward (this model's: {', '.join(own)})" if own else "reward"
            name = gr.Dropdown(rewards.list(), value=own[0] if own else None, label=label, elem_id="reward-name")
            output = gr.Textbox(label="model output", lines=6, elem_id="reward-output")
            target = gr.Textbox(label="target (JSON object of the reward's fields)", lines=3, elem_id="reward-target")
            reference = image_upload(label="target image (render rewards)", height=200,
                                    elem_id="reward-reference")  # fmt: skip
            run = gr.Button("Score", variant="primary", elem_id="reward-run")
        with gr.Column():
            status = gr.Markdown(elem_id="reward-status")
            value = gr.Textbox(label="score", interactive=False, elem_id="reward-score")
            components = gr.Textbox(label="components", lines=6, interactive=False, elem_id="reward-components")
            error = gr.Textbox(label="error", interactive=False, elem_id="reward-error")
            with gr.Row():
                rendered = gr.Image(label="output, rendered in the sandbox", type="pil", format="png",
                                    interactive=False, elem_id="reward-rendered")  # fmt: skip
                shown = gr.Image(label="target image", type="pil", format="png", interactive=False,
                                 elem_id="reward-reference-shown")  # fmt: skip

    run.click(guarded(score, 5), [name, output, target, reference],
              [status, value, components, error, rendered, shown])  # fmt: skip
