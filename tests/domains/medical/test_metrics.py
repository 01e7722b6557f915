"""U2-Bench metric rules (dolphin-sound/u2-bench-evalkit 782350bc) as pure functions."""

from __future__ import annotations

import pytest

from domains.medical.metrics import (
    box_position_label,
    macro_prf,
    measurement_range,
    min_max_scale,
    position_label,
    regression_metrics,
)


@pytest.mark.parametrize(
    ("cx", "cy", "label"),
    [
        (0.1, 0.1, "upper left"),
        (0.45, 0.1, "upper center"),  # 0.45 is already "center": the test is `< 0.45`
        (0.4499, 0.3, "upper left"),
        (0.55, 0.3, "upper right"),  # 0.55 is "right": the test is `< 0.55`
        (0.5, 0.5, "center"),  # the middle cell is just "center"
        (0.2, 0.5, "middle left"),
        (0.9, 0.54, "middle right"),
        (0.5, 0.55, "lower center"),
        (0.99, 0.99, "lower right"),
        (float("nan"), 0.5, "not visible"),
    ],
)
def test_position_grid_uses_u2bench_thresholds(cx: float, cy: float, label: str) -> None:
    assert position_label(cx, cy) == label


def test_box_position_uses_the_centre_in_original_pixels() -> None:
    assert box_position_label([10, 10, 30, 30], (100, 100)) == "upper left"
    assert box_position_label([40, 40, 60, 60], (100, 100)) == "center"
    assert box_position_label(None, (100, 100)) == "not visible"
    with pytest.raises(ValueError, match="image_size"):
        box_position_label([1, 2, 3, 4], (0, 10))


def test_macro_prf_matches_sklearn() -> None:
    # scikit-learn 1.9.1: precision/recall/f1_score(y_true, y_pred, average="macro")
    y_true = ["benign", "malignant", "normal", "benign", "malignant", "normal", "benign"]
    y_pred = ["benign", "benign", "normal", "benign ", "malignant", "normal", "malignant"]
    got = macro_prf(y_true, y_pred)
    assert got == pytest.approx({"precision": 0.5, "recall": 0.4583333333333333, "f1": 0.475})


def test_measurement_scaling_follows_min_max_dict() -> None:
    assert measurement_range("18") == (10.0, 75.0)
    assert min_max_scale(42.5, measurement_range("18")) == pytest.approx(0.5)
    assert min_max_scale(3.0, (1.0, 1.0)) == 0.0
    with pytest.raises(ValueError, match="known: \\['18', '27', '50', '57'\\]"):
        measurement_range("31")


def test_regression_metrics_on_scaled_values() -> None:
    got = regression_metrics([10.0, 75.0], [16.5, 75.0], (10.0, 75.0))
    assert got.mae == pytest.approx(0.05)
    assert got.rmse == pytest.approx((0.01 / 2) ** 0.5)
    assert got.std == pytest.approx(0.05)
    assert got.pct_within_tolerance == 100.0  # |error| <= 0.1 counts
    assert regression_metrics([], [], (0, 1)).to_dict()["MAE"] is None
