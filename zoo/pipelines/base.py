"""What a pipeline returns: the raw text and the task's parsed fields."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: fields a parser may fill; anything else it returns goes to ``Prediction.extra``.
PARSED_FIELDS = ("think", "answer", "letter", "bbox", "point", "action", "code", "trajectory")


@dataclass
class Prediction:
    """A model's answer to one input.

    Boxes (``[x1, y1, x2, y2]``) and points (``[x, y]``) are in **original image pixels**,
    whatever frame the model emitted. ``parse_error`` is set (and the fields that could not be
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
    parse_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_parsed(cls, text: str, parsed: dict[str, Any]) -> Prediction:
        """Build from a parser's output dict (unknown keys land in ``extra``)."""
        known = {k: parsed[k] for k in PARSED_FIELDS if k in parsed}
        extra = {k: v for k, v in parsed.items() if k not in PARSED_FIELDS and k != "parse_error"}
        return cls(text=text, parse_error=parsed.get("parse_error"), extra=extra, **known)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict without empty fields."""
        return {k: v for k, v in asdict(self).items() if v not in (None, {}, [])}
