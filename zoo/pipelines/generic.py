"""The parser used for local model directories that name no registered entry."""

from __future__ import annotations

from typing import Any

from rewards.parsing import ParseError, extract_tag, parse_qwen_box


def parse_generic(text: str, question: str = "") -> dict[str, Any]:
    """Whatever common structure the text has: ``<think>``/``<answer>`` tags and a Qwen box.

    Never sets ``parse_error``: a generic model has no required format.
    """
    out: dict[str, Any] = {"think": extract_tag(text, "think", required=False)}
    answer = extract_tag(text, "answer", required=False)
    out["answer"] = answer if answer is not None else text.strip()
    try:
        out["bbox"] = parse_qwen_box(answer if answer is not None else text)
    except ParseError:
        pass
    return out
