"""PDMS (v1) and EPDMS (v2) aggregation against numbers hand-computed from NAVSIM's formulas.

Reference: autonomousvision/navsim (Apache-2.0)
* v1: tag v1.1 (0811876c), navsim/planning/simulation/planner/pdm_planner/scoring/pdm_scorer.py
  ``_aggregate_scores`` + ``PDMScorerConfig`` (EP 5, TTC 5, C 2, DDC 0); navsim/evaluate/pdm_score.py
  scores [PDM-Closed, agent] together and returns index 1.
* v2: HEAD (0a380a90), the same file's ``_aggregate_pdm_scores``; navsim/evaluate/pdm_score.py (human
  penalty filter); navsim/planning/script/run_pdm_score.py ``compute_final_scores`` and
  ``calculate_individual_mapping_scores``; scoring/scene_aggregator.py ``calculate_pseudo_closed_loop_weights``.

Each expected number below is worked out by hand in the comment beside it; ``test_pdms_navsim.py`` checks the
same functions against NAVSIM's own code on random cases.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from domains.driving import pdms


def test_v1_progress_normalised_by_best_passing_proposal():
    # proposals [PDM-Closed, agent]: progress 20 m and 15 m, both pass; max 20 > 5 -> EP = [1, 0.75]
    # agent: 1 * (5*0.75 + 5*TTC 0 + 2*C 1) / 12 = 5.75 / 12
    out = pdms.pdms_v1(nc=[1, 1], dac=[1, 1], progress_raw=[20, 15], ttc=[1, 0], comfort=[1, 1])
    assert out["ep"] == pytest.approx([1.0, 0.75])
    assert out["score"][1] == pytest.approx(5.75 / 12)


def test_v1_static_collision_halves_and_masks_progress():
    # agent hits a static object (NC 0.5) after 30 m; masked progress [10, 15] -> EP = [10/15, 1]
    # agent: 0.5 * (5*1 + 5*1 + 2*0) / 12 = 5/12 ; reference: (5*2/3 + 5 + 2) / 12 = 31/36
    out = pdms.pdms_v1(nc=[1, 0.5], dac=[1, 1], progress_raw=[10, 30], ttc=[1, 1], comfort=[1, 0])
    assert out["ep"] == pytest.approx([2 / 3, 1.0])
    assert out["score"] == pytest.approx([31 / 36, 5 / 12])


def test_v1_below_threshold_gives_one_to_passing_zero_to_failing():
    # best masked progress 3 m <= 5 m -> EP 1 where the product is > 0 and 0 where it is 0
    out = pdms.pdms_v1(nc=[1, 0], dac=[1, 1], progress_raw=[3, 4], ttc=[1, 1], comfort=[1, 1])
    assert out["ep"] == pytest.approx([1.0, 0.0])
    assert out["score"] == pytest.approx([1.0, 0.0])


def test_v1_driving_direction_has_weight_zero():
    a = pdms.pdms_v1([1, 1], [1, 1], [20, 10], [1, 1], [1, 1], ddc=[1, 0])
    b = pdms.pdms_v1([1, 1], [1, 1], [20, 10], [1, 1], [1, 1], ddc=[1, 1])
    assert a["score"] == pytest.approx(b["score"])  # (5*0.5 + 5 + 2)/12 either way
    assert a["score"][1] == pytest.approx(9.5 / 12)


def test_v2_progress_differs_from_v1_where_navsim_differs():
    # below threshold: v2 gives EP 1 to every proposal, failing or not
    assert pdms.ego_progress_v2([3, 4], [1, 0]) == pytest.approx([1, 1])
    # failing agent with more progress: v1 masks its progress (0), v2 divides its raw progress and clips
    assert pdms.ego_progress_v1([10, 30], [1, 0]) == pytest.approx([1, 0])
    assert pdms.ego_progress_v2([10, 30], [1, 0]) == pytest.approx([1, 1])


def test_v2_proposal_and_final_score():
    row = pdms.EPDMSRow(nc=1, dac=1, ddc=0.5, tlc=1, ep=0.8, ttc=1, lk=0, hc=1, ec=0)
    # per proposal, EC masked out: 0.5 * (5*0.8 + 5 + 2*0 + 2*1) / 14 = 0.5 * 11/14
    assert row.proposal_score() == pytest.approx(0.5 * 11 / 14)
    # after EC is injected: 0.5 * (4 + 5 + 0 + 2 + 2*0) / 16
    assert row.score() == pytest.approx(0.5 * 11 / 16)


def test_v2_epdms_proposals_multiplies_all_four():
    rows = pdms.epdms_proposals(nc=[1, 1], dac=[1, 1], ddc=[1, 1], tlc=[1, 0], progress_raw=[12, 6],
                                ttc=[1, 1], lk=[1, 1], hc=[1, 1])  # fmt: skip
    # masked best = 12 (agent's TLC 0 masks its 6 m); agent EP = 6/12; product 0 -> score 0
    assert rows[1].ep == pytest.approx(0.5) and rows[1].score() == 0.0
    assert rows[0].score() == pytest.approx(1.0)


def test_human_penalty_filter_forgives_what_the_human_also_fails():
    agent = pdms.EPDMSRow(nc=1, dac=1, ddc=0.5, tlc=1, ep=0.8, ttc=1, lk=0, hc=1, ec=0)
    human = pdms.EPDMSRow(nc=1, dac=1, ddc=0.0, tlc=1, ep=1.0, ttc=1, lk=0, hc=1)
    forgiven = pdms.human_penalty_filter(agent, human)
    # DDC and LK become 1: 1 * (4 + 5 + 2 + 2 + 0) / 16 = 13/16; EC is not a filtered column
    assert (forgiven.ddc, forgiven.lk, forgiven.ec) == (1.0, 1.0, 0.0)
    assert forgiven.score() == pytest.approx(13 / 16)


def test_pseudo_closed_loop_weights():
    # squared distances [0, 0.2], sigma^2 0.1 -> exp([0, -1]) normalised
    w = pdms.pseudo_closed_loop_weights([0, 0], [[0, 0], [math.sqrt(0.2), 0]])
    e = math.exp(-1)
    assert w == pytest.approx([1 / (1 + e), e / (1 + e)])
    # every start far away: the kernel underflows to 0 -> uniform
    assert pdms.pseudo_closed_loop_weights([0, 0], [[100, 100], [200, 0]]) == pytest.approx([0.5, 0.5])


def test_two_stage_aggregation():
    e = math.exp(-1)
    group = pdms.TwoStageGroup(
        now={"score": 0.9}, prev={"score": 0.8}, now_endpoint=[0, 0], prev_endpoint=[0, 0],
        second_now=[{"score": 1.0}, {"score": 0.5}], second_prev=[{"score": 0.6}, {"score": 0.2}],
        second_now_starts=np.array([[0, 0], [math.sqrt(0.2), 0]]), second_prev_starts=np.array([[50, 0], [0, 60]]),
    )  # fmt: skip
    out = pdms.two_stage_scores([group])
    s2_now = (1.0 * 1 + 0.5 * e) / (1 + e)  # Gaussian weights
    s2_prev = (0.6 + 0.2) / 2  # uniform fallback
    assert out["combined"]["score"] == pytest.approx((0.9 * s2_now + 0.8 * s2_prev) / 2)
    assert out["stage_one"]["score"] == pytest.approx(0.85)
    assert out["stage_two"]["score"] == pytest.approx((s2_now + s2_prev) / 2)
