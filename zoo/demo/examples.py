"""The example each shipped checkpoint is demonstrated with: data the page pre-fills, nothing to run.

The images are the ones the checkpoints' cards use (``examples/``, written by the releases in
``lab/``); where the release wrote the question next to the image (``examples/<name>.json``), it
is read from there so the page and the card cannot disagree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

#: ``examples/`` of the repository checkout (absent from an installed wheel: then no example is offered).
EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"


@dataclass(frozen=True)
class Example:
    """What the page pre-fills for one entry.

    Attributes:
        image: file name in :data:`EXAMPLES_DIR` of the example input image, or ``None``.
        text: the question, prompt or comma-separated class names; ``None`` reads it from the
            image's ``.json`` (its ``question`` or ``instruction``).
    """

    image: str | None = None
    text: str | None = None

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


#: entry name -> its example (zoo: the texts are the ones the checkpoints' cards show).
EXAMPLES: dict[str, Example] = {
    "gui-grounding-tiny": Example("screen.png"),
    "gui-agent-tiny": Example("phone-step.png", "type taxi, then type blue, then go back, then finish"),
    "driving-vla-tiny": Example("driving-scene.png"),
    "flow-grpo-tiny-colour": Example(text="a green circle"),
}


def example_for(name: str) -> Example:
    """The entry's example, or an empty one (the page then starts blank)."""
    return EXAMPLES.get(name, Example())
