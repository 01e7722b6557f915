"""The text-to-image page: prompt, seed, steps and guidance in; the image (and a grid of seeds) out.

Each image is the pipeline's ``pipe(prompt, seed=...)`` with the entry's sampling settings as the
sliders' starting values, so the first image is what ``zoo run NAME --prompt ... --seed ...`` writes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import gradio as gr

from zoo.demo import inputs
from zoo.demo.errors import InputError, guarded
from zoo.demo.examples import Example
from zoo.visualize import grid

#: Most images one press draws (zoo: a grid for comparing seeds, bounded so a CPU page stays responsive).
MAX_SEEDS = 8
#: Most denoising steps one image takes (zoo: the entries sample with 6 to 50; the page's former slider's end).
MAX_STEPS = 100
#: Largest classifier-free guidance scale the page takes (zoo: the entries sample at 3.5 to 5; the page's former
#: slider's end).
MAX_GUIDANCE = 20.0


def build(pipe: Any, examples: tuple[Example, ...]) -> None:
    """The text-to-image tab of ``pipe``'s page (inside an open ``gr.Blocks``), opening on ``examples[0]``."""
    defaults = pipe.settings()
    guided = "guidance_scale" in pipe.call_parameters
    # the entry's guidance, else the diffusers pipeline's own default (what `zoo run` samples with)
    scale_default = defaults.get("guidance_scale", _default_of(pipe.pipe.__call__, "guidance_scale", 0.0))
    with gr.Row():
        with gr.Column():
            prompt = gr.Textbox(label="prompt", value=examples[0].prompt(), lines=2, elem_id="prompt")
            seed = gr.Number(label=f"seed (0 to {inputs.SEED_MAX})", value=examples[0].seed, precision=0,
                             elem_id="seed")  # fmt: skip
            # number boxes, not sliders: a slider clamps a typed 100000 to its end silently; the handler says the range
            steps = gr.Number(label=f"steps (1 to {MAX_STEPS})", value=defaults.get("num_inference_steps", 28),
                              precision=0, elem_id="steps")  # fmt: skip
            guidance = gr.Number(label=f"guidance scale (0 to {MAX_GUIDANCE:g})", value=scale_default, step=0.5,
                                 visible=guided, elem_id="guidance")  # fmt: skip
            seeds = gr.Number(label=f"seeds in the grid (seed, seed+1, ...; 1 to {MAX_SEEDS})", value=1, precision=0,
                              elem_id="seeds")  # fmt: skip
            run = gr.Button("Generate", variant="primary", elem_id="run")
        with gr.Column():
            status = gr.Markdown(elem_id="status")
            # zoo: a panel of fixed height, so the grid below stays put whatever the image size (a 32-px one included)
            image = gr.Image(label="image (first seed)", type="pil", format="png", interactive=False, height=256,
                             elem_id="image")  # fmt: skip
            sheet = gr.Image(label="grid of seeds", type="pil", format="png", interactive=False, elem_id="grid")

    if len(examples) > 1:
        gr.Examples([[e.prompt(), e.seed] for e in examples], [prompt, seed], label="examples")

    def generate(text: str, first: float | None, n_steps: float | None, scale: float | None,
                 count: float | None) -> tuple[Any, ...]:  # fmt: skip
        if not (text or "").strip():
            raise InputError(f"type a prompt: {pipe.entry.name} draws one")
        start = inputs.seed(first)
        settings = {"num_inference_steps": inputs.whole_number(n_steps, "steps", 1, MAX_STEPS)}
        settings |= {"guidance_scale": inputs.number(scale, "guidance scale", 0.0, MAX_GUIDANCE)} if guided else {}
        images = [pipe(text, seed=start + i, **settings).images[0]
                  for i in range(inputs.whole_number(count, "seeds in the grid", 1, MAX_SEEDS))]  # fmt: skip
        return images[0], grid(images, columns=min(4, len(images))) if len(images) > 1 else None

    run.click(guarded(generate, 2), [prompt, seed, steps, guidance, seeds], [status, image, sheet])


def _default_of(function: Callable[..., Any], name: str, fallback: float) -> float:
    """The default of ``function``'s parameter ``name`` (``fallback`` when it has none)."""
    parameter = inspect.signature(function).parameters.get(name)
    default = parameter.default if parameter is not None else inspect.Parameter.empty
    return float(default) if isinstance(default, (int, float)) else fallback
