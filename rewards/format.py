"""Format rewards: did the model answer in the shape the prompt asked for?

R1-style VLM recipes (Vision-R1, VLM-R1, GUI-R1, Med-R1) add a 0/1 format term for
``<think>...</think><answer>...</answer>``; structured tasks ask for a JSON block or a fenced
code block. Each reward here is 1.0 when the shape is right and 0.0 with the reason otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rewards.base import RewardResult, SampleReward, text_of
from rewards.parsing import ParseError, answer_span, extract_tag, parse_json_value


class TagFormat(SampleReward):
    """1.0 when the text is exactly the given tags in order (whitespace between them allowed).

    ``strict=False`` only requires each tag pair to be present once, in order, anywhere.
    Components: ``has_<tag>`` per tag.
    """

    def __init__(self, tags: Sequence[str] = ("think", "answer"), strict: bool = True,
                 name: str = "format-think-answer") -> None:
        if not tags or not all(re.fullmatch(r"[A-Za-z_][\w-]*", t) for t in tags):
            raise ValueError(f"tags must be non-empty XML names, got {tags!r}")
        self.tags, self.strict, self.name = tuple(tags), strict, name
        self.component_names = tuple(f"has_{t}" for t in self.tags)
        body = r"\s*".join(rf"<{t}>(?:(?!<{t}>).)*?</{t}>" for t in self.tags)
        self._pattern = re.compile(rf"^\s*{body}\s*$" if strict else body, re.DOTALL)

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        text = text_of(prediction)
        components = {f"has_{t}": float(extract_tag(text, t, required=False) is not None) for t in self.tags}
        if self._pattern.search(text):
            return RewardResult(1.0, components)
        missing = [t for t in self.tags if not components[f"has_{t}"]]
        why = f"missing <{missing[0]}>...</{missing[0]}>" if missing else (
            "tags out of order or text outside them" if self.strict else "tags out of order")
        return RewardResult(0.0, components, why)


class JsonFormat(SampleReward):
    """1.0 when the answer (``<tag>`` content, else the text) parses as JSON with the keys.

    Args:
        required_keys: keys the object (or the first object of a list) must have.
        tag: read inside this tag when present (``None``: the whole text).
    """

    component_names = ("parsed", "has_keys")

    def __init__(self, required_keys: Sequence[str] = (), tag: str | None = "answer",
                 name: str = "format-json") -> None:
        self.required_keys, self.tag, self.name = tuple(required_keys), tag, name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        text = text_of(prediction)
        if self.tag:  # an empty <tag></tag> is an empty answer, not a reason to parse outside the tag
            text = answer_span(text, self.tag)
        value = parse_json_value(text)
        obj = value[0] if isinstance(value, list) and value and isinstance(value[0], Mapping) else value
        missing = [k for k in self.required_keys if not (isinstance(obj, Mapping) and k in obj)]
        if missing:
            return RewardResult(0.0, {"parsed": 1.0, "has_keys": 0.0}, f"JSON lacks keys {missing}")
        return RewardResult(1.0, {"parsed": 1.0, "has_keys": 1.0})


class CodeFenceFormat(SampleReward):
    """1.0 when the text holds a fenced code block (of ``language``, when given) that is not empty."""

    component_names = ("has_fence",)

    def __init__(self, language: str | None = None, name: str = "format-code-fence") -> None:
        self.language, self.name = language, name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        text = text_of(prediction)
        blocks = re.findall(r"```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", text, re.DOTALL)
        if not blocks:
            raise ParseError("no ``` fenced code block")
        wanted = [b for lang, b in blocks if self.language is None or lang.lower() == self.language.lower()]
        if not wanted:
            raise ParseError(f"no ```{self.language} block (found: {[lang or 'plain' for lang, _ in blocks]})")
        if not any(b.strip() for b in wanted):
            raise ParseError("the code block is empty")
        return RewardResult(1.0, {"has_fence": 1.0})
