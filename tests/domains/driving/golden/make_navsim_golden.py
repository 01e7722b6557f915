"""Generate ``navsim.json``: PDMS / EPDMS aggregation numbers from NAVSIM's own code, on random sub-metric cases.

``tests/domains/driving/test_pdms_navsim.py`` compares :mod:`domains.driving.pdms` against them. The cases are
drawn here from a fixed seed (inputs stored beside outputs), so nothing in them was picked by hand. Sources,
autonomousvision/navsim (Apache-2.0):

- v1, tag v1.1 @ 0811876c274e8b058ab2be9b3dcd4d37bd23f177: ``PDMScorer._aggregate_scores``, ``PDMScorerConfig``
  (pdm_scorer.py) and the ``MultiMetricIndex`` / ``WeightedMetricIndex`` enums (pdm_enums.py);
- v2, HEAD @ 0a380a9063d7162ec93d0f51e9990ebac585f720: ``PDMScorer._aggregate_pdm_scores`` and
  ``PDMScorerConfig``; the human penalty filter, the statements of ``pdm_score_from_interpolated_trajectory``
  (navsim/evaluate/pdm_score.py) from ``skip_columns = ...`` to the end of its ``if`` block;
  ``compute_final_scores``, ``calculate_weighted_average_score`` and ``calculate_individual_mapping_scores``
  (navsim/planning/script/run_pdm_score.py); ``SceneAggregator.calculate_pseudo_closed_loop_weights``
  (scene_aggregator.py).

NAVSIM's modules import nuPlan, which is not installed here, so each function (or statement block) is cut out
of its file with ``ast`` at the pinned commit and executed unchanged in a namespace holding what it uses
(``np``, ``pd``, the enums, ``dataclass``). Run from the repository root with the project venv::

    git clone https://github.com/autonomousvision/navsim /tmp/scratch/navsim
    .venv/bin/python tests/domains/driving/golden/make_navsim_golden.py /tmp/scratch/navsim

Deterministic: rerunning writes an identical file.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Optional

import numpy as np
import numpy.typing as npt
import pandas as pd

V1, V2 = "0811876c274e8b058ab2be9b3dcd4d37bd23f177", "0a380a9063d7162ec93d0f51e9990ebac585f720"
SCORER = "navsim/planning/simulation/planner/pdm_planner/scoring/pdm_scorer.py"
ENUMS = "navsim/planning/simulation/planner/pdm_planner/utils/pdm_enums.py"
OUT = Path(__file__).with_name("navsim.json")
METRICS = ["no_at_fault_collisions", "drivable_area_compliance", "driving_direction_compliance",
           "traffic_light_compliance", "ego_progress", "time_to_collision_within_bound", "lane_keeping",
           "history_comfort"]  # fmt: skip


def source(repo: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


def cut(text: str, *names: str, inside: str | None = None) -> list[ast.stmt]:
    """The top-level definitions ``names`` of ``text`` (or the methods ``names`` of its class ``inside``)."""
    body = ast.parse(text).body
    if inside is not None:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == inside).body
    found = [n for n in body if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name in names]
    assert {n.name for n in found} == set(names), f"missing {set(names) - {n.name for n in found}}"
    return found


def run(nodes: list[ast.stmt], namespace: dict[str, Any], label: str) -> dict[str, Any]:
    exec(compile(ast.Module(nodes, []), label, "exec"), namespace)  # noqa: S102
    return namespace


def navsim_v1(repo: Path) -> dict[str, Any]:
    ns: dict[str, Any] = {"np": np, "npt": npt, "IntEnum": IntEnum, "dataclass": dataclass}
    run(cut(source(repo, V1, ENUMS), "MultiMetricIndex", "WeightedMetricIndex"), ns, "v1.1/pdm_enums.py")
    scorer = source(repo, V1, SCORER)
    run(cut(scorer, "PDMScorerConfig"), ns, "v1.1/pdm_scorer.py")
    run(cut(scorer, "_aggregate_scores", inside="PDMScorer"), ns, "v1.1/pdm_scorer.py")
    return ns


def navsim_v2(repo: Path) -> dict[str, Any]:
    ns: dict[str, Any] = {"np": np, "npt": npt, "pd": pd, "IntEnum": IntEnum, "dataclass": dataclass,
                          "Optional": Optional, "Dict": dict, "List": list, "Tuple": tuple}  # fmt: skip
    run(cut(source(repo, V2, ENUMS), "MultiMetricIndex", "WeightedMetricIndex"), ns, "HEAD/pdm_enums.py")
    scorer = source(repo, V2, SCORER)
    run(cut(scorer, "PDMScorerConfig"), ns, "HEAD/pdm_scorer.py")
    run(cut(scorer, "_aggregate_pdm_scores", inside="PDMScorer"), ns, "HEAD/pdm_scorer.py")
    script = source(repo, V2, "navsim/planning/script/run_pdm_score.py")
    names = ("compute_final_scores", "calculate_weighted_average_score", "calculate_individual_mapping_scores")
    run(cut(script, *names), ns, "HEAD/run_pdm_score.py")
    aggregator = source(repo, V2, "navsim/planning/simulation/planner/pdm_planner/scoring/scene_aggregator.py")
    run(cut(aggregator, "calculate_pseudo_closed_loop_weights", inside="SceneAggregator"), ns, "HEAD/scene_aggregator.py")
    # the human penalty filter is inline in pdm_score_from_interpolated_trajectory: its statements from skip_columns on
    evaluate = cut(source(repo, V2, "navsim/evaluate/pdm_score.py"), "pdm_score_from_interpolated_trajectory")[0]
    block = next(n for n in ast.walk(evaluate) if isinstance(n, ast.If) and "human_penalty_filter" in ast.unparse(n.test))
    start = next(i for i, s in enumerate(block.body) if "skip_columns" in ast.unparse(s).split("=")[0])
    ns["human_filter_block"] = compile(ast.Module(block.body[start:], []), "HEAD/pdm_score.py", "exec")
    return ns


def random_proposals(rng: np.random.Generator, n: int) -> dict[str, list[float]]:
    """Sub-metrics of ``n`` proposals: multiplicative ones from their value sets, progress in metres with some
    cases below the 5 m threshold."""
    scale = rng.choice([4.0, 40.0])
    return {"nc": rng.choice([0.0, 0.5, 1.0], n, p=[0.15, 0.15, 0.7]).tolist(),
            "dac": rng.choice([0.0, 1.0], n, p=[0.2, 0.8]).tolist(),
            "ddc": rng.choice([0.0, 0.5, 1.0], n, p=[0.15, 0.15, 0.7]).tolist(),
            "tlc": rng.choice([0.0, 1.0], n, p=[0.15, 0.85]).tolist(),
            "progress_raw": (rng.random(n) * scale).round(3).tolist(),
            "ttc": rng.choice([0.0, 1.0], n).tolist(), "comfort": rng.choice([0.0, 1.0], n).tolist(),
            "lk": rng.choice([0.0, 1.0], n).tolist(), "hc": rng.choice([0.0, 1.0], n).tolist(),
            "ec": rng.choice([0.0, 1.0], n).tolist()}  # fmt: skip


def v1_cases(ns: dict[str, Any], rng: np.random.Generator) -> list[dict[str, Any]]:
    out = []
    for _ in range(40):
        case = random_proposals(rng, int(rng.integers(2, 7)))
        n = len(case["nc"])
        multi = np.zeros((len(ns["MultiMetricIndex"]), n))
        multi[ns["MultiMetricIndex"].NO_COLLISION], multi[ns["MultiMetricIndex"].DRIVABLE_AREA] = case["nc"], case["dac"]
        weighted = np.zeros((len(ns["WeightedMetricIndex"]), n))
        weighted[ns["WeightedMetricIndex"].TTC] = case["ttc"]
        weighted[ns["WeightedMetricIndex"].COMFORTABLE] = case["comfort"]
        weighted[ns["WeightedMetricIndex"].DRIVING_DIRECTION] = case["ddc"]
        me = SimpleNamespace(_multi_metrics=multi, _weighted_metrics=weighted,
                             _progress_raw=np.asarray(case["progress_raw"]), _config=ns["PDMScorerConfig"]())  # fmt: skip
        scores = ns["_aggregate_scores"](me)
        out.append({**case, "score": scores.tolist(), "ep": me._weighted_metrics[ns["WeightedMetricIndex"].PROGRESS].tolist()})
    return out


def v2_rows(ns: dict[str, Any], case: dict[str, list[float]]) -> tuple[np.ndarray, SimpleNamespace]:
    """NAVSIM's per-proposal scores (EC excluded) and the scorer state they leave."""
    multi_index, weighted_index = ns["MultiMetricIndex"], ns["WeightedMetricIndex"]
    n = len(case["nc"])
    multi = np.zeros((len(multi_index), n))
    for key, index in (("nc", multi_index.NO_COLLISION), ("dac", multi_index.DRIVABLE_AREA),
                       ("tlc", multi_index.TRAFFIC_LIGHT_COMPLIANCE), ("ddc", multi_index.DRIVING_DIRECTION)):  # fmt: skip
        multi[index] = case[key]
    weighted = np.zeros((len(weighted_index), n))
    for key, index in (("ttc", weighted_index.TTC), ("lk", weighted_index.LANE_KEEPING),
                       ("hc", weighted_index.HISTORY_COMFORT)):  # fmt: skip
        weighted[index] = case[key]
    me = SimpleNamespace(_multi_metrics=multi, _weighted_metrics=weighted,
                         _progress_raw=np.asarray(case["progress_raw"]), _config=ns["PDMScorerConfig"]())  # fmt: skip
    return ns["_aggregate_pdm_scores"](me), me


def result_frame(ns: dict[str, Any], me: SimpleNamespace, i: int, score: float) -> pd.DataFrame:
    """Proposal ``i`` as ``PDMScorer.score_proposals`` returns it (one ``PDMResults`` row)."""
    multi_index, weighted_index = ns["MultiMetricIndex"], ns["WeightedMetricIndex"]
    values = [me._multi_metrics[multi_index.NO_COLLISION, i], me._multi_metrics[multi_index.DRIVABLE_AREA, i],
              me._multi_metrics[multi_index.DRIVING_DIRECTION, i], me._multi_metrics[multi_index.TRAFFIC_LIGHT_COMPLIANCE, i],
              me._weighted_metrics[weighted_index.PROGRESS, i], me._weighted_metrics[weighted_index.TTC, i],
              me._weighted_metrics[weighted_index.LANE_KEEPING, i], me._weighted_metrics[weighted_index.HISTORY_COMFORT, i]]  # fmt: skip
    row = dict(zip(METRICS, map(float, values), strict=True))
    row.update(multiplicative_metrics_prod=float(me._multi_metrics.prod(axis=0)[i]),
               weighted_metrics=me._weighted_metrics[:, i].copy(),
               weighted_metrics_array=me._config.weighted_metrics_array, pdm_score=float(score))  # fmt: skip
    return pd.DataFrame([row])


def v2_cases(ns: dict[str, Any], rng: np.random.Generator) -> list[dict[str, Any]]:
    """Proposal scores, then the agent (index 1, as pdm_score.py reads it) through the human penalty filter
    (half the cases) against a random human row, then ``compute_final_scores`` with its EC injected."""
    out = []
    for k in range(40):
        case = random_proposals(rng, int(rng.integers(2, 7)))
        scores, me = v2_rows(ns, case)
        pdm_result = result_frame(ns, me, 1, scores[1])
        human = {key: [float(rng.choice([0.0, 1.0], p=[0.3, 0.7]))] for key in ("nc", "dac", "ddc", "tlc", "ttc", "lk", "hc")}
        human["progress_raw"] = [float(rng.random() * 30)]
        filtered = k % 2 == 0
        if filtered:
            human_scores, human_me = v2_rows(ns, human)
            scope = {**ns, "pdm_result": pdm_result, "human_pdm_result": result_frame(ns, human_me, 0, human_scores[0])}
            exec(ns["human_filter_block"], scope)  # noqa: S102
        frame = pdm_result.assign(token="t", two_frame_extended_comfort=case["ec"][1])
        final = ns["compute_final_scores"](frame)
        out.append({**case, "proposal_score": scores.tolist(), "ep": me._weighted_metrics[0].tolist(),
                    "human": human if filtered else None, "final_agent_score": float(final["score"].iloc[0]),
                    "final_agent_metrics": {m: float(final[m].iloc[0]) for m in METRICS}})  # fmt: skip
    return out


def two_stage_cases(ns: dict[str, Any], rng: np.random.Generator) -> list[dict[str, Any]]:
    """Groups of stage-one rows and their stage-two rows, weighted by ``calculate_pseudo_closed_loop_weights``
    and combined by ``calculate_individual_mapping_scores``."""
    out = []
    for _ in range(10):
        groups, rows, mappings = [], [], {}
        for g in range(int(rng.integers(1, 4))):
            group: dict[str, Any] = {}
            second_pairs = []
            m = int(rng.integers(1, 4))  # stage-two frames come in (now, prev) pairs: as many for each
            for frame in ("now", "prev"):
                token = f"g{g}-{frame}"
                end = (rng.normal(size=2) * 0.5).round(3).tolist()
                first = {"score": float(rng.random()), "ego_progress": float(rng.random())}
                starts = (np.asarray(end) + rng.normal(size=(m, 2)) * rng.choice([0.2, 0.5, 30.0])).round(3)
                second = [{"score": float(rng.random()), "ego_progress": float(rng.random())} for _ in range(m)]
                first_row = pd.Series({"endpoint_x": end[0], "endpoint_y": end[1]})
                table = pd.DataFrame({"token": [f"{token}-s{j}" for j in range(m)],
                                      "start_point_x": starts[:, 0], "start_point_y": starts[:, 1]})  # fmt: skip
                weights = ns["calculate_pseudo_closed_loop_weights"](SimpleNamespace(sigma_squared=0.1), first_row, table)
                rows.append({"token": token, "weight": 1.0, **first})
                rows += [{"token": t, "weight": float(w), **s}
                         for t, w, s in zip(table["token"], weights["weight"], second, strict=True)]  # fmt: skip
                group[frame] = {"first": first, "endpoint": end, "second": second, "starts": starts.tolist(),
                                "weights": weights["weight"].tolist()}  # fmt: skip
                second_pairs.append([f"{token}-s{j}" for j in range(m)])
            mappings[(f"g{g}-now", f"g{g}-prev")] = list(zip(*second_pairs, strict=True))
            groups.append(group)
        combined, stage_one, stage_two = ns["calculate_individual_mapping_scores"](pd.DataFrame(rows), mappings)
        out.append({"groups": groups, "combined": combined.to_dict(), "stage_one": stage_one.to_dict(),
                    "stage_two": stage_two.to_dict()})  # fmt: skip
    return out


def main(repo: Path) -> None:
    for commit in (V1, V2):
        subprocess.run(["git", "-C", str(repo), "cat-file", "-e", commit], check=True)
    rng = np.random.default_rng(20261124)
    golden = {"sources": {"v1": f"autonomousvision/navsim@{V1}", "v2": f"autonomousvision/navsim@{V2}",
                          "numpy": np.__version__, "pandas": pd.__version__},
              "v1": v1_cases(navsim_v1(repo), rng)}  # fmt: skip
    v2 = navsim_v2(repo)
    golden["v2"] = v2_cases(v2, rng)
    golden["two_stage"] = two_stage_cases(v2, rng)
    OUT.write_text(json.dumps(golden, indent=1) + "\n")
    print(f"wrote {OUT}: {len(golden['v1'])} v1, {len(golden['v2'])} v2, {len(golden['two_stage'])} two-stage cases")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
