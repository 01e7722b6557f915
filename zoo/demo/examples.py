"""The examples each shipped checkpoint is demonstrated with: data the page offers, nothing to run.

The images are the ones the checkpoints' cards use (``examples/``, written by the releases in
``lab/``); where the release wrote the question next to the image (``examples/<name>.json``), it
is read from there so the page and the card cannot disagree. The first example of an entry is the
one its page opens with (and the docs' "Load" snippet uses); the others are a click away.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

#: ``examples/`` of the repository checkout (absent from an installed wheel: then no example is offered).
EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"


@dataclass(frozen=True)
class Example:
    """What the page fills in for one example of an entry.

    Attributes:
        image: file name in :data:`EXAMPLES_DIR` of the example input image, or ``None``.
        text: the question, prompt or comma-separated class names; ``None`` reads it from the
            image's ``.json`` (its ``question`` or ``instruction``).
        seed: the first seed (a text-to-image grid, a policy's first episode).
    """

    image: str | None = None
    text: str | None = None
    seed: int = 0

    def image_path(self) -> Path | None:
        """The example image, when this checkout has it."""
        path = EXAMPLES_DIR / self.image if self.image else None
        return path if path is not None and path.is_file() else None

    def prompt(self) -> str:
        """The example's text: given, or the one its release wrote beside the image."""
        if self.text is not None:
            return self.text
        path = self.image_path()
        meta = path.with_suffix(".json") if path is not None else None
        if meta is None or not meta.is_file():
            return ""
        data = json.loads(meta.read_text())
        return str(data.get("question") or data.get("instruction") or "")


#: The goal of held-out episode 0 of the GUI agent's card (lab/gui/agent_card.py), whose first screen is phone-step.png.
AGENT_GOAL = "type taxi, then type blue, then go back, then finish"

#: entry name -> its examples, the one its page opens with first (zoo: the first texts are the ones the checkpoints'
#: cards show; the others are inputs of the same form: another goal phrased as the agent's episodes phrase theirs
#: (domains/gui/episodes.py), another of domains/driving/navsim_agent.py: COMMANDS, the other held-out prompts of
#: zoo/engines/diffusion/synthetic.py: HELD_OUT; seeds: the robot's held-out evaluation seeds from 1000
#: (lab/robot/release.py), the CaRL card's seed 0 and its evaluation's 1000 (checkpoints/carl-highway-tiny)).
EXAMPLES: dict[str, tuple[Example, ...]] = {
    "gui-grounding-tiny": (Example("screen.png"), Example("phone-step.png", "click the text field")),
    "gui-agent-tiny": (Example("phone-step.png", AGENT_GOAL), Example("phone-step.png", "type milk, then finish")),
    "driving-vla-tiny": (
        Example("driving-scene.png"),
        Example("driving-scene.png", Example("driving-scene.png").prompt().replace("go straight", "turn left")),
    ),
    "flow-grpo-tiny-colour": (Example(text="a green circle"), Example(text="a blue square"),
                              Example(text="a orange circle", seed=7)),  # fmt: skip
    "fetch-push-bc-tiny": (Example(seed=1000), Example(seed=1010)),
    "fetch-push-resip-tiny": (Example(seed=1000), Example(seed=1010)),
    "carl-highway-tiny": (Example(seed=0), Example(seed=1000)),
    # domains.synthetic.data.make_image("red", numpy.random.default_rng(0)), "blue" with seed 1; questions: data.QUESTION
    "synthetic-colour-sft-tiny": (Example("colour-square-red.png"),
                                  Example("colour-square-blue.png")),  # fmt: skip
    # held-out scenes 0 and 3 of lab/visual_code/release.py (synthetic_svgs, seed EVAL_SEED); no question: the
    # picture is the task
    "svg-scenes-tiny": (Example("svg-scene-circle.png", ""), Example("svg-scene-rect.png", "")),
}


def examples_for(name: str) -> tuple[Example, ...]:
    """The entry's examples, the opening one first; one empty example for an entry without (its page starts blank)."""
    return EXAMPLES.get(name, (Example(),))


def example_for(name: str) -> Example:
    """The example the entry's page opens with."""
    return examples_for(name)[0]
