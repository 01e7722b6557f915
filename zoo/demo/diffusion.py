"""The text-to-image page: prompt, seed, steps and guidance in; the image (and a grid of seeds) out.

Each image is the pipeline's ``pipe(prompt, seed=...)`` with the entry's sampling settings as the
sliders' starting values, so the first image is what ``zoo run NAME --prompt ... --seed ...`` writes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import gradio as gr

from zoo.demo.errors import InputError, guarded
from zoo.demo.examples import Example
from zoo.visualize import grid

#: Most images one press draws (zoo: a grid for comparing seeds, bounded so a CPU page stays responsive).
MAX_SEEDS = 8


def build(pipe: Any, example: Example) -> None:
    """The text-to-image tab of ``pipe``'s page (inside an open ``gr.Blocks``)."""
    defaults = pipe.settings()
    guided = "guidance_scale" in pipe.call_parameters
    # the entry's guidance, else the diffusers pipeline's own default (what `zoo run` samples with)
    scale_default = defaults.get("guidance_scale", _default_of(pipe.pipe.__call__, "guidance_scale", 0.0))
    with gr.Row():
        with gr.Column():
            prompt = gr.Textbox(label="prompt", value=example.prompt(), lines=2, elem_id="prompt")
            seed = gr.Number(label="seed", value=0, precision=0, elem_id="seed")
            steps = gr.Slider(1, 100, value=defaults.get("num_inference_steps", 28), step=1, label="steps",
                              elem_id="steps")  # fmt: skip
            guidance = gr.Slider(0.0, 20.0, value=scale_default, step=0.5,
                                 label="guidance scale", visible=guided, elem_id="guidance")  # fmt: skip
            seeds = gr.Slider(1, MAX_SEEDS, value=1, step=1, label="seeds in the grid (seed, seed+1, ...)",
                              elem_id="seeds")  # fmt: skip
            run = gr.Button("Generate", variant="primary", elem_id="run")
        with gr.Column():
            status = gr.Markdown(elem_id="status")
            # zoo: a panel of fixed height, so the grid below stays put whatever the image size (a 32-px one included)
            image = gr.Image(label="image (first seed)", type="pil", format="png", interactive=False, height=256,
                             elem_id="image")  # fmt: skip
            sheet = gr.Image(label="grid of seeds", type="pil", format="png", interactive=False, elem_id="grid")

    def generate(text: str, first: float | None, n_steps: float, scale: float, count: float) -> tuple[Any, ...]:
        if not (text or "").strip():
            raise InputError(f"type a prompt: {pipe.entry.name} draws one")
        settings = {"num_inference_steps": int(n_steps)} | ({"guidance_scale": float(scale)} if guided else {})
        start = int(first or 0)
        images = [pipe(text, seed=start + i, **settings).images[0] for i in range(int(count))]
        return images[0], grid(images, columns=min(4, len(images))) if len(images) > 1 else None

    run.click(guarded(generate, 2), [prompt, seed, steps, guidance, seeds], [status, image, sheet])


def _default_of(function: Callable[..., Any], name: str, fallback: float) -> float:
    """The default of ``function``'s parameter ``name`` (``fallback`` when it has none)."""
    parameter = inspect.signature(function).parameters.get(name)
    default = parameter.default if parameter is not None else inspect.Parameter.empty
    return float(default) if isinstance(default, (int, float)) else fallback
