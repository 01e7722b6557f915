"""The "Load" snippet of a model page: Python that runs as written from the repository root, one shape per kind.

Each snippet feeds the entry a file shipped in ``examples/`` (the one its demo page pre-fills, else its field's, else
the GUI screenshot), names what the pipeline returns as what it is (a :class:`zoo.outputs.Prediction`, an
:class:`zoo.outputs.ImageOutput`, an :class:`zoo.outputs.ActionOutput`, a dict of probabilities) and uses it. A
policy steps the environment its field registers. ``tests/docs/test_site.py`` runs the snippet of every shipped
checkpoint and of one Hub entry per kind (on a tiny stand-in) as the built page shows it.
"""

from __future__ import annotations

import json
from typing import Any

#: Field -> the example that fits its models, where the field ships one (``examples/``; its ``.json`` holds the text).
FIELD_EXAMPLES = {"gui": ("screen.png", None), "driving": ("driving-scene.png", None)}

#: What any other image model is shown with: the GUI screenshot, and a question that fits any image.
ANY_IMAGE = ("screen.png", "What is shown in this image?")

#: The prompt of a text-to-image entry without an example of its own.
ANY_PROMPT = "a photo of a red apple on a wooden table"


def load_snippet(entry: Any) -> str:
    """The snippet for a released ``entry`` (an entry without weights has none: ``zoo.load`` would raise)."""
    from zoo.card_kinds import card_kind, load_line

    kind = card_kind(entry)
    if kind.pipeline is None:  # loaded by the authors' code, not by zoo.load: the card says how
        return kind.usage(entry)
    head = ["import zoo", "", load_line(entry)]
    if entry.kind == "policy":
        return "\n".join(_policy(entry, load_line(entry)))
    image, text = _example(entry)
    body = {
        "vlm": [f"question = {json.dumps(text)}",
                f'prediction = pipe("examples/{image}", question)  # a zoo.outputs.Prediction',
                "print(prediction.to_dict())  # raw text, parsed fields; boxes and points in the image's pixels"],
        "clip": [f'probabilities = pipe("examples/{image}", ["a screenshot", "a photograph", "a drawing"])',
                 "print(max(probabilities, key=probabilities.get), probabilities)  # zero-shot: {label: probability}"],
        "diffusion": [f"image_output = pipe({json.dumps(text)}, seed=0)  # a zoo.outputs.ImageOutput",
                      'image_output.images[0].save("out.png")  # a PIL image; image_output.settings: steps, seed...'],
    }[entry.kind]
    return "\n".join([*head, *body])


def _example(entry: Any) -> tuple[str, str]:
    """``(image file in examples/, text)`` for a VLM, CLIP or diffusion entry."""
    from zoo.demo.examples import example_for

    own = example_for(entry.name)
    if entry.kind == "diffusion":
        return "", own.text or ANY_PROMPT
    if own.image_path() is not None:
        return str(own.image), own.prompt()
    image, text = FIELD_EXAMPLES.get(entry.domain, ANY_IMAGE)
    if text is None:
        from zoo.demo.examples import Example

        text = Example(image).prompt()
    if entry.kind == "vlm" and _template_is_the_task(entry.spec.user):
        text = ""  # the picture is the question (image to SVG): any text would be read as part of the task
    return image, text


def _template_is_the_task(user: str) -> bool:
    """A user template that states the whole task and only then leaves room for more (``"Convert ... {question}"``)."""
    return user.endswith("{question}") and bool(user.removesuffix("{question}").strip())


def _policy(entry: Any, load: str) -> list[str]:
    """A policy steps the environment its field registers (a zero observation where the field registers none)."""
    from zoo.domains import DOMAINS

    environments = list(DOMAINS.get(entry.domain).environments) if entry.domain in DOMAINS else []
    if len(environments) != 1:
        return ["import numpy as np", "", "import zoo", "", load,
                f"action_output = pipe(np.zeros({entry.spec.observation_dim}))  # a zoo.outputs.ActionOutput",
                "print(action_output.first())  # (1, action_dim): the action to execute now"]  # fmt: skip
    return [
        "import zoo",
        "from zoo.engines.policy.envs import make_environment",
        "",
        load,
        f'env = make_environment("{environments[0]}")  # the environment the {entry.domain} field registers',
        "observation, info = env.reset(seed=0)",
        "pipe.reset()  # a new episode: forget queued actions",
        "for _ in range(20):",
        "    action = pipe.act(observation)  # the next action, in the environment's units",
        "    observation, reward, terminated, truncated, info = env.step(action)",
        "    if terminated or truncated:",
        "        break",
        "action_output = pipe(observation)  # a zoo.outputs.ActionOutput: .actions is (1, chunk, action_dim)",
        "print(action_output.first())",
    ]
