"""PDMS (v1) and EPDMS (v2) aggregation against NAVSIM's own code on random sub-metric cases.

``golden/navsim.json`` holds the inputs and what NAVSIM's functions returned for them, cut out of
autonomousvision/navsim at v1.1 (0811876c) and HEAD (0a380a90) and run unchanged by
``golden/make_navsim_golden.py`` (it names every function). The cases were drawn from a seed, not chosen:
proposals 2-6, collisions 0 / 0.5 / 1, progress below and above the 5 m threshold, the human penalty filter
on half the v2 cases, one to three two-stage groups with near and far second-stage start points.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from domains.driving import pdms

GOLDEN = json.loads((Path(__file__).parent / "golden" / "navsim.json").read_text())


@pytest.mark.parametrize("case", GOLDEN["v1"], ids=lambda c: f"v1-{len(c['nc'])}proposals")
def test_v1_matches_navsim_aggregate_scores(case):
    ours = pdms.pdms_v1(case["nc"], case["dac"], case["progress_raw"], case["ttc"], case["comfort"], ddc=case["ddc"])
    np.testing.assert_allclose(ours["ep"], case["ep"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours["score"], case["score"], rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", GOLDEN["v2"], ids=lambda c: f"v2-{'filtered' if c['human'] else 'plain'}")
def test_v2_proposals_filter_and_final_score_match_navsim(case):
    rows = pdms.epdms_proposals(case["nc"], case["dac"], case["ddc"], case["tlc"], case["progress_raw"],
                                case["ttc"], case["lk"], case["hc"])  # fmt: skip
    np.testing.assert_allclose([r.ep for r in rows], case["ep"], rtol=0, atol=1e-12)
    np.testing.assert_allclose([r.proposal_score() for r in rows], case["proposal_score"], rtol=0, atol=1e-12)
    agent = rows[1]  # pdm_score.py scores [PDM-Closed, agent] and keeps index 1
    agent.ec = case["ec"][1]
    if case["human"] is not None:
        h = case["human"]
        [human] = pdms.epdms_proposals(h["nc"], h["dac"], h["ddc"], h["tlc"], h["progress_raw"], h["ttc"], h["lk"], h["hc"])
        agent = pdms.human_penalty_filter(agent, human)
    names = {"no_at_fault_collisions": "nc", "drivable_area_compliance": "dac", "driving_direction_compliance": "ddc",
             "traffic_light_compliance": "tlc", "ego_progress": "ep", "time_to_collision_within_bound": "ttc",
             "lane_keeping": "lk", "history_comfort": "hc"}  # fmt: skip
    assert {k: getattr(agent, v) for k, v in names.items()} == pytest.approx(case["final_agent_metrics"], abs=1e-12)
    assert agent.score() == pytest.approx(case["final_agent_score"], abs=1e-12)


def test_the_golden_cases_cover_what_differs():
    """Guards the draw: both sides of the progress threshold, filters that change something, zero and non-zero scores."""
    v1_small = [max(np.multiply(c["progress_raw"], np.multiply(c["nc"], c["dac"]))) <= 5 for c in GOLDEN["v1"]]
    assert any(v1_small) and not all(v1_small)
    forgiven = [c for c in GOLDEN["v2"] if c["human"] and 0.0 in [c["human"][k][0] for k in ("nc", "dac", "ddc", "tlc")]]
    assert forgiven
    finals = [c["final_agent_score"] for c in GOLDEN["v2"]]
    assert 0.0 in finals and any(0 < f < 1 for f in finals)


@pytest.mark.parametrize("case", GOLDEN["two_stage"], ids=lambda c: f"two-stage-{len(c['groups'])}groups")
def test_two_stage_aggregation_matches_navsim(case):
    groups = []
    for g in case["groups"]:
        now, prev = g["now"], g["prev"]
        for frame in (now, prev):  # the Gaussian kernel weights, frame by frame
            np.testing.assert_allclose(pdms.pseudo_closed_loop_weights(frame["endpoint"], np.array(frame["starts"])),
                                       frame["weights"], rtol=0, atol=1e-12)  # fmt: skip
        groups.append(pdms.TwoStageGroup(
            now=now["first"], prev=prev["first"], now_endpoint=now["endpoint"], prev_endpoint=prev["endpoint"],
            second_now=now["second"], second_prev=prev["second"], second_now_starts=np.array(now["starts"]),
            second_prev_starts=np.array(prev["starts"])))  # fmt: skip
    ours = pdms.two_stage_scores(groups)
    for key in ("combined", "stage_one", "stage_two"):
        assert ours[key] == pytest.approx(case[key], abs=1e-12), key
