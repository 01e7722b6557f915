"""The files every ``zoo eval`` leaves: ``metrics.json`` and ``predictions.jsonl``, one row per sample.

Domains compute their own metrics and draw their own pictures; where the numbers land is the
same for all of them, so a reader (or a script comparing runs) finds them in one layout.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def write_results(out_dir: str | Path, metrics: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``metrics.json`` (indented) and ``predictions.jsonl`` into ``out_dir`` (created); returns it."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    with (out / "predictions.jsonl").open("w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return out
