"""Success-rate statistics of the policy engine's evaluation."""

from __future__ import annotations

import pytest

from zoo.engines.policy.evaluate import SuccessRate, wilson_interval


@pytest.mark.parametrize(("k", "n"), [(46, 100), (0, 10), (7, 7), (67, 100)])
def test_wilson_interval_matches_scipy(k, n):
    stats = pytest.importorskip("scipy.stats")
    expected = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson_interval(k, n) == pytest.approx((expected.low, expected.high), abs=1e-12)


def test_success_rate_report_and_empty_input():
    report = SuccessRate((True, False, True, True), (1.0, 0.0, 1.0, 1.0)).to_json()
    assert report["success_rate"] == 0.75 and report["episodes"] == 4 and report["mean_return"] == 0.75
    with pytest.raises(ValueError, match="at least one episode"):
        wilson_interval(0, 0)
