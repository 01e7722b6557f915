"""NAVSIM's PDM Score aggregation, v1 (PDMS) and v2 (EPDMS), as pure functions on metric arrays.

Reproduced from ``autonomousvision/navsim`` (Apache-2.0):

* v1 — tag ``v1.1`` (commit 0811876c), ``navsim/planning/simulation/planner/pdm_planner/scoring/
  pdm_scorer.py: PDMScorer._aggregate_scores`` and ``PDMScorerConfig`` (weights EP 5, TTC 5,
  comfort 2, driving direction 0; multiplicative NC, DAC).
* v2 — HEAD (commit 0a380a90), the same file's ``_aggregate_pdm_scores`` (multiplicative NC, DAC,
  DDC, TLC; weighted EP 5, TTC 5, LK 2, HC 2, EC 2 where the per-proposal score masks EC out),
  ``navsim/evaluate/pdm_score.py: pdm_score_from_interpolated_trajectory`` (human penalty
  filter), ``navsim/planning/script/run_pdm_score.py: compute_final_scores`` (EC injected, score
  recomputed over all five weights) and ``calculate_individual_mapping_scores`` (two-stage
  aggregation), ``.../scoring/scene_aggregator.py: calculate_pseudo_closed_loop_weights``.

Arrays are per proposal, shape ``(P,)``; NAVSIM scores the PDM-Closed reference and the agent
together (``pdm_score.py`` stacks ``[pdm_states, pred_states]``, agent at index 1), so EP is
relative to the best *passing* proposal of that pair. Every function here is the formula only;
:mod:`domains.driving.metrics` computes the sub-metrics on synthetic scenes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

PROGRESS_DISTANCE_THRESHOLD = 5.0  # [m] PDMScorerConfig.progress_distance_threshold (v1 and v2)
V1_WEIGHTS = {"ep": 5.0, "ttc": 5.0, "c": 2.0, "ddc": 0.0}  # v1.1 PDMScorerConfig (DDC weighted, weight 0)
V2_WEIGHTS = {"ep": 5.0, "ttc": 5.0, "lk": 2.0, "hc": 2.0, "ec": 2.0}  # HEAD pdm_scorer.yaml
V2_MULTIPLICATIVE = ("nc", "dac", "ddc", "tlc")
SIGMA_SQUARED = 0.1  # SceneAggregator.sigma_squared (Gaussian kernel of the pseudo-closed-loop weights)


def _arr(values: Sequence[float] | np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).reshape(-1)


def ego_progress_v1(progress_raw: np.ndarray, multiplicative: np.ndarray,
                    threshold: float = PROGRESS_DISTANCE_THRESHOLD) -> np.ndarray:  # fmt: skip
    """v1 EP: the *masked* progress over the best masked progress when that exceeds ``threshold``
    metres; otherwise 1 for passing proposals and 0 for failing ones (``_aggregate_scores``)."""
    progress_raw, multiplicative = _arr(progress_raw), _arr(multiplicative)
    raw = progress_raw * multiplicative
    best = raw.max()
    if best > threshold:
        return raw / best
    out = np.ones_like(raw)
    out[multiplicative == 0.0] = 0.0
    return out


def ego_progress_v2(progress_raw: np.ndarray, multiplicative: np.ndarray,
                    threshold: float = PROGRESS_DISTANCE_THRESHOLD) -> np.ndarray:  # fmt: skip
    """v2 EP: the *unmasked* progress over the best masked progress, clipped to [0, 1], when that
    best exceeds ``threshold``; otherwise 1 for every proposal (``_aggregate_pdm_scores``).

    The differences from v1 are NAVSIM's: a failing proposal keeps its own progress ratio (it is
    zeroed by the multiplicative product anyway) and the below-threshold case is all ones.
    """
    progress_raw, multiplicative = _arr(progress_raw), _arr(multiplicative)
    best = (progress_raw * multiplicative).max()
    if best > threshold:
        return np.clip(progress_raw / best, 0.0, 1.0)
    return np.ones_like(progress_raw)


def pdms_v1(nc, dac, progress_raw, ttc, comfort, ddc=None) -> dict[str, np.ndarray]:
    """v1 PDMS per proposal: ``NC · DAC · (5·EP + 5·TTC + 2·C + 0·DDC) / 12``.

    Args:
        nc: no at-fault collision, in {0, 0.5, 1} (0.5: a static object was hit).
        dac: drivable-area compliance, in {0, 1}.
        progress_raw: metres of progress along the route centreline, clipped at 0.
        ttc: time-to-collision within bound, in {0, 1}.
        comfort: comfort limits kept, in {0, 1}.
        ddc: driving-direction compliance; weighted with weight 0 in v1.1, so it never changes the
            score (kept so a v1 row is complete).
    Returns:
        ``{"ep": ..., "score": ...}``, arrays of shape ``(P,)``.
    """
    nc, dac, ttc, comfort = _arr(nc), _arr(dac), _arr(ttc), _arr(comfort)
    ddc = np.ones_like(nc) if ddc is None else _arr(ddc)
    multiplicative = nc * dac
    ep = ego_progress_v1(progress_raw, multiplicative)
    w = V1_WEIGHTS
    weighted = (w["ep"] * ep + w["ttc"] * ttc + w["c"] * comfort + w["ddc"] * ddc) / sum(w.values())
    return {"ep": ep, "score": multiplicative * weighted}


@dataclass
class EPDMSRow:
    """One scored frame of v2, the columns NAVSIM's ``PDMResults`` carries (plus EC once known)."""

    nc: float
    dac: float
    ddc: float
    tlc: float
    ep: float
    ttc: float
    lk: float
    hc: float
    ec: float = 1.0

    @property
    def multiplicative(self) -> float:
        return self.nc * self.dac * self.ddc * self.tlc

    def proposal_score(self) -> float:
        """Per-proposal score with EC masked out: ``prod · (5EP + 5TTC + 2LK + 2HC) / 14``."""
        w = V2_WEIGHTS
        weighted = w["ep"] * self.ep + w["ttc"] * self.ttc + w["lk"] * self.lk + w["hc"] * self.hc
        return self.multiplicative * weighted / (sum(w.values()) - w["ec"])

    def score(self) -> float:
        """Final frame score after EC is injected (``compute_final_scores``): ``prod · Σw·m / 16``."""
        w = V2_WEIGHTS
        weighted = sum(w[k] * getattr(self, k) for k in w)
        return self.multiplicative * weighted / sum(w.values())

    def as_dict(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in ("nc", "dac", "ddc", "tlc", "ep", "ttc", "lk", "hc", "ec")}


def epdms_proposals(nc, dac, ddc, tlc, progress_raw, ttc, lk, hc) -> list[EPDMSRow]:
    """v2 rows for proposals scored together (EP normalised over them, :func:`ego_progress_v2`)."""
    nc, dac, ddc, tlc = _arr(nc), _arr(dac), _arr(ddc), _arr(tlc)
    ep = ego_progress_v2(progress_raw, nc * dac * ddc * tlc)
    ttc, lk, hc = _arr(ttc), _arr(lk), _arr(hc)
    return [EPDMSRow(nc[i], dac[i], ddc[i], tlc[i], ep[i], ttc[i], lk[i], hc[i]) for i in range(len(nc))]


def human_penalty_filter(agent: EPDMSRow, human: EPDMSRow) -> EPDMSRow:
    """Forgive the agent every sub-metric the logged human driver also fails (``pdm_score.py``).

    NAVSIM sets each agent column to 1 where the human's (scored alone) is 0, for original
    (stage-one) frames only, then recomputes the product. The config comment says "now only for
    driving_direction_compliance", but the code loops over every metric column; this follows the code.
    """
    forgiven = {k: (1.0 if getattr(human, k) == 0 else v) for k, v in agent.as_dict().items() if k != "ec"}
    return EPDMSRow(**forgiven, ec=agent.ec)


def pseudo_closed_loop_weights(endpoint: Sequence[float], start_points: np.ndarray,
                               sigma_squared: float = SIGMA_SQUARED) -> np.ndarray:  # fmt: skip
    """Weights of the second-stage frames for one first-stage frame (``SceneAggregator``):
    ``exp(-‖endpoint − start‖² / (2σ²))`` normalised to sum 1; uniform when the sum is ~0 or NaN."""
    start_points = np.asarray(start_points, dtype=np.float64).reshape(-1, 2)
    squared = ((start_points - np.asarray(endpoint, dtype=np.float64)) ** 2).sum(axis=1)
    weights = np.exp(-squared / (2 * sigma_squared))
    total = weights.sum()
    if np.isclose(total, 0.0) or np.isnan(total):
        return np.full(len(weights), 1.0 / len(weights))
    return weights / total


def weighted_average(values: Sequence[Mapping[str, float]], weights: Sequence[float]) -> dict[str, float]:
    """Column-wise weighted mean (``calculate_weighted_average_score``); NaN when empty or weightless."""
    keys = list(values[0]) if values else []
    w = np.asarray(weights, dtype=np.float64)
    if not values or w.sum() == 0:
        return dict.fromkeys(keys, float("nan"))
    table = np.array([[row[k] for k in keys] for row in values], dtype=np.float64)
    return dict(zip(keys, (table * w[:, None]).sum(axis=0) / w.sum(), strict=True))


@dataclass
class TwoStageGroup:
    """One ``all_mappings`` item of NAVSIM's two-stage evaluation.

    Attributes:
        now / prev: the stage-one rows of the original frame and the frame 0.5 s before it.
        now_endpoint / prev_endpoint: where each stage-one trajectory ends (global x, y).
        second_now / second_prev: the stage-two rows paired with ``now`` and ``prev``.
        second_now_starts / second_prev_starts: start points (x, y) of those stage-two frames.
    """

    now: Mapping[str, float]
    prev: Mapping[str, float]
    now_endpoint: Sequence[float]
    prev_endpoint: Sequence[float]
    second_now: Sequence[Mapping[str, float]]
    second_prev: Sequence[Mapping[str, float]]
    second_now_starts: np.ndarray
    second_prev_starts: np.ndarray


def two_stage_scores(groups: Sequence[TwoStageGroup]) -> dict[str, dict[str, float]]:
    """``calculate_individual_mapping_scores``: per group, (stage-one row × Gaussian-weighted mean of its
    stage-two rows) for ``now`` and for ``prev``, averaged; then the mean over groups. Each column
    (every sub-metric and ``score``) is multiplied this way, as NAVSIM does.

    Returns ``{"combined": ..., "stage_one": ..., "stage_two": ...}`` column means.
    """
    combined, stage_one, stage_two = [], [], []
    for g in groups:
        pairs = ((g.now, g.now_endpoint, g.second_now, g.second_now_starts),
                 (g.prev, g.prev_endpoint, g.second_prev, g.second_prev_starts))  # fmt: skip
        products = []
        for first, endpoint, second, starts in pairs:
            s1 = weighted_average([first], [1.0])
            s2 = weighted_average(list(second), pseudo_closed_loop_weights(endpoint, starts))
            stage_one.append(s1)
            stage_two.append(s2)
            products.append({k: s1[k] * s2[k] for k in s1})
        combined.append({k: (products[0][k] + products[1][k]) / 2 for k in products[0]})
    return {name: _column_mean(rows) for name, rows in
            (("combined", combined), ("stage_one", stage_one), ("stage_two", stage_two))}  # fmt: skip


def _column_mean(rows: list[dict[str, float]]) -> dict[str, float]:
    """Mean per column skipping NaN, as ``pd.DataFrame(rows).mean()`` does."""
    if not rows:
        return {}
    return {k: float(np.nanmean([r[k] for r in rows])) for k in rows[0]}
