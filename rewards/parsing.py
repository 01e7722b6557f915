"""Extracting structure from model text: tags, JSON blocks, boxes, option letters.

Every function returns the parsed value or raises :class:`ParseError` with a reason a
human can read in a log ("no <answer> tag", "bbox_2d has 3 numbers"). Parsers of the
domains compose these, rewards turn a :class:`ParseError` into a 0 with that reason.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any


class ParseError(ValueError):
    """The model's text does not follow the expected format; ``str(err)`` says how."""


_FENCE = re.compile(r"```(?:[a-zA-Z0-9_+-]*)\s*\n?(.*?)```", re.DOTALL)
_NUMBER = r"[-+]?\d+(?:\.\d+)?"


def extract_tag(text: str, tag: str, *, required: bool = True) -> str | None:
    """Content of the first ``<tag>...</tag>`` pair, stripped.

    An opened but never closed tag is a parse failure (the generation was cut off).
    """
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    if match:
        return match.group(1).strip()
    if not required:
        return None
    if f"<{tag}>" in text:
        raise ParseError(f"<{tag}> is opened but never closed")
    raise ParseError(f"no <{tag}>...</{tag}> in the output")


def strip_code_fence(text: str) -> str:
    """The body of the first fenced block (```json ... ```), or the text itself when unfenced."""
    match = _FENCE.search(text)
    return match.group(1).strip() if match else text.strip()


def parse_json_value(text: str) -> Any:
    """A JSON (or Python-literal, as Qwen sometimes writes) value from text, fence or not.

    Tries the whole (unfenced) text, then the outermost ``[...]`` or ``{...}`` span.
    """
    body = strip_code_fence(text)
    candidates = [body]
    for open_, close in (("[", "]"), ("{", "}")):
        start, end = body.find(open_), body.rfind(close)
        if 0 <= start < end:
            candidates.append(body[start : end + 1])
    for cand in candidates:
        for loader in (json.loads, ast.literal_eval):
            try:
                return loader(cand)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
    raise ParseError(f"no JSON value found in {_clip(body)!r}")


def _numbers(value: Any, n: int, what: str) -> list[float]:
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise ParseError(f"{what} must be a list of {n} numbers, got {_clip(repr(value))}")
    try:
        return [float(v) for v in value]
    except (TypeError, ValueError) as err:
        raise ParseError(f"{what} has a non-numeric value: {value!r}") from err


def parse_qwen_box(text: str, key: str = "bbox_2d") -> list[float]:
    """``[x1, y1, x2, y2]`` from Qwen-VL grounding output.

    Accepts, in this order: the native JSON (``[{"bbox_2d": [...]}]`` or a bare dict, fenced or
    not; the first item wins, as GUI-G1 reads ``[0]['bbox_2d']``), a bare ``[x1, y1, x2, y2]``,
    ``(x1,y1),(x2,y2)`` and Qwen2-VL's ``<|box_start|>(x1,y1),(x2,y2)<|box_end|>``.
    """
    try:
        value = parse_json_value(text)
    except ParseError:
        value = None
    if isinstance(value, list) and value and isinstance(value[0], dict):
        value = value[0]
    if isinstance(value, dict):
        if key not in value:
            raise ParseError(f"JSON has no {key!r} key (keys: {sorted(value)})")
        return _numbers(value[key], 4, key)
    if isinstance(value, list) and len(value) == 4:
        return _numbers(value, 4, "box")
    pair = re.search(rf"\(\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)\s*,?\s*\(\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)", text)
    if pair:
        return [float(g) for g in pair.groups()]
    raise ParseError(f"no box found in {_clip(text)!r}")


def parse_qwen_point(text: str, key: str = "point_2d") -> list[float]:
    """``[x, y]`` from ``{"point_2d": [x, y]}`` (Qwen-VL pointing) or a bare ``[x, y]``."""
    value = parse_json_value(text)
    if isinstance(value, list) and value and isinstance(value[0], dict):
        value = value[0]
    if isinstance(value, dict):
        if key not in value:
            raise ParseError(f"JSON has no {key!r} key (keys: {sorted(value)})")
        value = value[key]
    return _numbers(value, 2, "point")


_LETTER_PATTERNS = (
    r"^\s*\(?([A-Z])\)?\s*$",  # "B", "(B)"
    r"^\s*\(?([A-Z])[\).:]",  # "B. text", "B) text", "B: text"
    r"(?:answer|option|choice)\s*(?:is|:)?\s*\(?([A-Z])\b",  # "the answer is B"
)


def parse_choice_letter(answer: str, options: dict[str, str] | None = None) -> str:
    """The option letter a free-text answer picks.

    ``options`` maps letters to option texts; an answer that repeats exactly one option's text
    (case and punctuation aside) picks that option even without a letter.
    """
    text = answer.strip()
    letters = set(options) if options else None
    for pattern in _LETTER_PATTERNS:
        match = re.search(pattern, text, re.IGNORECASE if "answer" in pattern else 0)
        if match:
            letter = match.group(1).upper()
            if letters is None or letter in letters:
                return letter
    if options:
        norm = _normalise(text)
        hits = [k for k, v in options.items() if _normalise(v) and _normalise(v) in norm]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise ParseError(f"answer names several options ({', '.join(sorted(hits))})")
    raise ParseError(f"no option letter in {_clip(text)!r}")


def _normalise(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def _clip(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def answer_span(text: str, tag: str = "answer") -> str:
    """The ``<tag>`` content when the text has one, else the whole text (stripped).

    Rewards that grade the answer use this so that both tagged (R1-style) and bare outputs work;
    a *format* reward is where a missing tag costs points.
    """
    inner = extract_tag(text, tag, required=False)
    return inner if inner is not None else text.strip()


_NUM_TOKEN = re.compile(
    r"(?<![\w.])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?"
)


def parse_number(text: str, *, which: str = "last") -> float:
    """A number from free text: units, currency, ``%``, thousands commas and LaTeX stripped.

    ``"$1,234.50"`` -> 1234.5, ``"45 %"`` -> 45.0, ``"3/4"`` -> 0.75, ``"\\boxed{12}"`` -> 12,
    ``"2.5e-3 m/s"`` -> 0.0025. ``which`` picks the ``"first"`` or ``"last"`` number (answers
    usually end with the result). Percent signs are not divided by 100: the references of
    chart and VQA sets write "45%" and "45" for the same answer.
    """
    boxed = re.search(r"\\boxed\{([^{}]*)\}", text)
    body = (boxed.group(1) if boxed else text).replace("−", "-").replace("\\frac{", "").replace("}{", "/")
    values = []
    for match in _NUM_TOKEN.finditer(body):
        token = match.group(0).replace(",", "").replace(" ", "")
        if not re.search(r"\d", token):
            continue
        try:
            if "/" in token:
                num, den = token.split("/")
                values.append(float(num) / float(den))
            else:
                values.append(float(token))
        except (ValueError, ZeroDivisionError):
            continue
    if not values:
        raise ParseError(f"no number in {_clip(text)!r}")
    return values[0] if which == "first" else values[-1]
