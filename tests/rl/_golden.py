"""Loader for the golden numbers written by ``tests/rl/golden/make_rl_golden.py``.

Each JSON file records, under ``sources``, the library versions that produced it
(verl 0.9.1, TRL 1.16.0, torch 2.14.1; GUI-G1 by transcription at a named commit).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import torch

GOLDEN = Path(__file__).parent / "golden"


@cache
def load(name: str) -> dict[str, Any]:
    """The parsed ``tests/rl/golden/<name>.json``."""
    return json.loads((GOLDEN / f"{name}.json").read_text())


def t(values: Any) -> torch.Tensor:
    """A float32 tensor from stored (float64) numbers, rounding back to what was computed."""
    return torch.tensor(values, dtype=torch.float32)


def case_id(case: dict[str, Any], *keys: str) -> str:
    return "-".join(f"{k}={case[k]}" for k in keys if k in case)
