"""NAVSIM's own result file read back, naming the score it holds: PDMS (NAVSIM v1) or EPDMS (NAVSIM v2).

NAVSIM's ``run_pdm_score`` (run with :class:`domains.driving.navsim_agent.ZooAgent` as the agent) writes one
CSV whose score column is called ``score`` in both versions, so the file alone does not say which score it is.
The summary rows do (``autonomousvision/navsim``, Apache-2.0):

* **v1** (tag ``v1.1``, commit 0811876c, ``navsim/planning/script/run_pdm_score.py:139-151``): a row per scene
  token with the ``PDMResults`` columns (``no_at_fault_collisions``, ``drivable_area_compliance``,
  ``ego_progress``, ``time_to_collision_within_bound``, ``comfort``, ``driving_direction_compliance``,
  ``score``) and a last row ``average``, the column means over valid scenes: **PDMS**, what ReflectDrive reports.
* **v2** (commit 0a380a9, the same file, lines 394-462): per-token columns suffixed ``_stage_one`` /
  ``_stage_two`` and three summary rows, ``extended_pdm_score_stage_one``, ``..._stage_two`` and
  ``extended_pdm_score_combined``, whose ``score`` is the two-stage **EPDMS** NAVSIM logs as final.

:func:`read_navsim_scores` finds which layout a file has and returns the score under its own name;
``zoo eval MODEL --data navsim --path RESULT.csv`` writes it to ``metrics.json``
(:func:`domains.driving.evaluate.run`).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

V1_SUMMARY = "average"
V2_SUMMARY = "extended_pdm_score_combined"
V2_STAGES = ("extended_pdm_score_stage_one", "extended_pdm_score_stage_two")


@dataclass(frozen=True)
class NavsimScores:
    """One NAVSIM result file: which score it holds, the score, the summary's sub-metrics and the scene rows."""

    metric: str
    """``pdms`` (NAVSIM v1) or ``epdms`` (NAVSIM v2)."""
    navsim_version: str
    """``v1`` or ``v2``, read from the summary rows."""
    score: float
    """The summary row's ``score``."""
    sub_metrics: dict[str, float]
    """The summary row's other numeric columns (v2: suffixed ``_stage_one`` / ``_stage_two``)."""
    scenes: list[dict[str, str]]
    """The per-token rows as NAVSIM wrote them."""

    @property
    def valid_scenes(self) -> int:
        return sum(row.get("valid") == "True" for row in self.scenes)


def _number(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return None if math.isnan(number) else number


def read_navsim_scores(path: str | Path) -> NavsimScores:
    """Read the CSV NAVSIM's ``run_pdm_score`` wrote (module docstring); a file of neither layout is an error."""
    path = Path(path)
    try:
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as err:
        raise ValueError(f"{path}: cannot read NAVSIM's result file ({err.strerror})") from err
    if not rows or "token" not in rows[0] or "score" not in rows[0]:
        raise ValueError(f"{path}: not a NAVSIM run_pdm_score CSV (it needs the columns token and score)")
    by_token = {row["token"]: row for row in rows}
    summaries = (V2_SUMMARY, *V2_STAGES) if V2_SUMMARY in by_token else (V1_SUMMARY,)
    if summaries[0] not in by_token:
        raise ValueError(f"{path}: no summary row {V1_SUMMARY!r} (NAVSIM v1) or {V2_SUMMARY!r} (NAVSIM v2)")
    summary = by_token[summaries[0]]
    score = _number(summary["score"])
    if score is None:
        raise ValueError(f"{path}: the {summaries[0]!r} row has no numeric score")
    skip = {"", "token", "valid", "score"}
    sub_metrics = {k: v for k, v in ((k, _number(v)) for k, v in summary.items() if k not in skip) if v is not None}
    version = "v2" if summaries[0] == V2_SUMMARY else "v1"
    return NavsimScores("epdms" if version == "v2" else "pdms", version, score, sub_metrics,
                        [row for row in rows if row["token"] not in summaries])  # fmt: skip
