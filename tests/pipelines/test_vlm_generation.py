"""A VLM entry's published sampling settings reach ``model.generate``; without them decoding is greedy,
and a caller's keyword always wins (MSRL samples at T 0.1, top_p 1: DocTron-hub/MSRL@203465d:README.md:268)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import zoo
from zoo.registry import info


@pytest.fixture(scope="module")
def pipe() -> Any:
    return zoo.load("gui-grounding-tiny", device="cpu", dtype="float32")


def generate_kwargs(pipe: Any, generation: dict[str, Any], **call: Any) -> dict[str, Any]:
    pipe.entry = dataclasses.replace(pipe.entry, spec=dataclasses.replace(pipe.entry.spec, generation=generation))
    seen: dict[str, Any] = {}
    real = pipe.model.generate

    def spy(**kwargs: Any) -> Any:
        seen.update({k: v for k, v in kwargs.items() if k in ("do_sample", "temperature", "top_p", "max_new_tokens")})
        return real(**{**kwargs, "max_new_tokens": 2})

    pipe.model.generate = spy
    try:
        pipe("examples/screen.png", "click the Go button", seed=0, **call)
    finally:
        pipe.model.generate = real
    return seen


def test_the_authors_sampling_is_the_default_and_the_caller_wins(pipe: Any) -> None:
    authors = {"do_sample": True, "temperature": 0.1, "top_p": 1.0}
    assert generate_kwargs(pipe, authors) == {**authors, "max_new_tokens": pipe.entry.spec.max_new_tokens}
    assert generate_kwargs(pipe, authors, do_sample=False)["do_sample"] is False
    assert generate_kwargs(pipe, {})["do_sample"] is False  # no published sampling: greedy


def test_msrl_carries_its_readme_sampling() -> None:
    assert info("msrl").spec.generation == {"do_sample": True, "temperature": 0.1, "top_p": 1.0}
