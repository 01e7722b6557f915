"""What pipelines return, one typed output per model kind.

A VLM answers with text (:class:`Prediction`: the raw text and the task's parsed fields), a
diffusion model with images (:class:`ImageOutput`), a policy with actions (:class:`ActionOutput`),
as diffusers' pipelines return typed outputs rather than bare tuples.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

#: fields a parser may fill; anything else it returns goes to ``Prediction.extra``.
PARSED_FIELDS = ("think", "answer", "letter", "bbox", "point", "action", "code", "trajectory", "objects")


@dataclass
class Prediction:
    """A model's answer to one input.

    Boxes (``[x1, y1, x2, y2]``) and points (``[x, y]``) are in **original image pixels**,
    whatever frame the model emitted; so are the boxes of ``objects`` (detections: one dict per
    object with ``bbox`` and, when the model wrote them, ``label`` and ``score``). ``parse_error`` is set (and the fields that could not be
    parsed are ``None``) when the text does not follow the task's format: a bad answer is data,
    not an exception.
    """

    text: str
    think: str | None = None
    answer: str | None = None
    letter: str | None = None
    bbox: list[float] | None = None
    point: list[float] | None = None
    action: dict[str, Any] | None = None
    code: str | None = None
    trajectory: list[list[float]] | None = None
    objects: list[dict[str, Any]] | None = None
    parse_error: str | None = None
    geometry_warning: str | None = None
    """Set when a parsed box or point cannot be where the model looked (outside the image, inverted, empty): the
    parse stays the authors' (the model did answer that), and this says why it points nowhere."""
    extra: dict[str, Any] = field(default_factory=dict)

    def check_geometry(self, width: int, height: int) -> None:
        """Set :attr:`geometry_warning` from the box, point and detected boxes against a ``width`` x ``height``
        image (original pixels)."""
        boxes = [("box", self.bbox), *((f"object {i} box", o.get("bbox")) for i, o in enumerate(self.objects or []))]
        problems = [f"{label} {problem}" for label, box in boxes if (problem := _box_problem(box, width, height))]
        point = self.point
        if point is not None and len(point) == 2 and not (0 <= point[0] <= width and 0 <= point[1] <= height):
            problems.append("point outside the image")
        self.geometry_warning = f"{'; '.join(problems)} ({width}x{height} image)" if problems else None

    @classmethod
    def from_parsed(cls, text: str, parsed: dict[str, Any]) -> Prediction:
        """Build from a parser's output dict (unknown keys land in ``extra``)."""
        known = {k: parsed[k] for k in PARSED_FIELDS if k in parsed}
        extra = {k: v for k, v in parsed.items() if k not in PARSED_FIELDS and k != "parse_error"}
        return cls(text=text, parse_error=parsed.get("parse_error"), extra=extra, **known)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict without empty fields."""
        return {k: v for k, v in asdict(self).items() if v not in (None, {}, [])}


def _box_problem(box: list[float] | None, width: int, height: int) -> str | None:
    """What is wrong with ``[x1, y1, x2, y2]`` on a ``width`` x ``height`` image, or ``None`` (no box: nothing)."""
    if box is None or len(box) != 4:
        return None
    x1, y1, x2, y2 = box
    if x2 <= x1 or y2 <= y1:
        return "inverted or empty"
    if x2 <= 0 or y2 <= 0 or x1 >= width or y1 >= height:
        return "wholly outside the image"
    if x1 < 0 or y1 < 0 or x2 > width or y2 > height:
        return "reaches outside the image"
    return None


@dataclass
class ImageOutput:
    """Images from a diffusion pipeline, with the settings that made them (for reproducibility).

    Attributes:
        images: PIL images, one per prompt x ``num_images_per_prompt``.
        prompts: the prompt of each image (``None`` for unconditional models).
        settings: steps, guidance, resolution and seed used.
    """

    images: list[Image.Image]
    prompts: list[str | None]
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass
class ActionOutput:
    """Actions from a policy for a batch of observations.

    Attributes:
        actions: ``(B, action_chunk, action_dim)`` array in the environment's units (de-normalised).
        chunk: actions per call; a chunked policy executes them in order before observing again.
    """

    actions: np.ndarray
    chunk: int = 1

    def first(self) -> np.ndarray:
        """``(B, action_dim)``: the action to execute now."""
        return self.actions[:, 0]
