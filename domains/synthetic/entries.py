"""The synthetic field's one model: the warm start the README's first training run begins from.

No paper stands behind it: the prompt is the dataset's own question (``domains.synthetic.data.QUESTION``)
with no system prompt, and the answer is one colour word, read as plain text.
"""

from __future__ import annotations

import re
from typing import Any

from zoo.kinds import VLMSpec
from zoo.registry import ModelEntry, register


def parse_colour(text: str, question: str = "") -> dict[str, Any]:
    """The answer's first word as the colour it names, or a parse failure saying what the first word was: the
    warm start often keeps writing past its colour word, which is the text after it."""
    from domains.synthetic.data import COLOURS  # here: listing the models imports no dataset code (numpy, PIL)

    words = re.findall(r"[A-Za-z]+", text)
    first = words[0].lower() if words else ""
    if first in COLOURS:
        return {"answer": first, "parse_error": None}
    why = f"the first word {first!r} is not one of {', '.join(COLOURS)}" if first else "no word in the answer"
    return {"answer": None, "parse_error": why}

# Built by python -m lab.synthetic.release from domains/synthetic/recipes/synthetic-colour-sft.yaml.
SYNTHETIC_COLOUR_SFT_TINY = register(
    ModelEntry(
        name="synthetic-colour-sft-tiny",
        repo_id=None,
        architecture="qwen2_5_vl",
        base_model="none (random init, Qwen2.5-VL architecture, tiny: defaults)",
        domain="synthetic",
        task="'what colour is the square?' on 56-px synthetic images (one colour word)",
        # The 56x56 task images stay unresized (the tiny: processor's limits); the answer is a few tokens.
        spec=VLMSpec(min_pixels=56 * 56, max_pixels=112 * 112, max_new_tokens=4, parser=parse_colour),
        license="apache-2.0",
        license_source="this repository's licence (pyproject.toml: Apache-2.0); trained here",
        revision_note="shipped in this repository (checkpoints/synthetic-colour-sft-tiny), not on the Hub",
        rl_methods=("grpo",),
        notes="The warm start of the README's first GRPO run (domains/synthetic/recipes/synthetic-colour-grpo.yaml), "
        "built on CPU by `python -m lab.synthetic.release`: an SFT stopped early, so its greedy answer is mostly "
        "right while its temperature-1 samples often are not. Card: model_cards/synthetic-colour-sft-tiny/README.md.",
    )
)
