"""The training curve a run ends with: read from ``metrics.csv`` without pandas, smoothed as pandas smooths."""

from __future__ import annotations

from pathlib import Path

import pytest

from zoo.run_logging import plot_curve, rolling_mean


def test_rolling_mean_equals_pandas() -> None:
    pd = pytest.importorskip("pandas")
    values = [0.1, 0.5, -0.2, 0.9, 0.3, 0.0, 1.2, 0.7, 0.4, 0.8, 0.6]
    for window in (2, 3, 5):
        expected = pd.Series(values).rolling(window, min_periods=1).mean().tolist()
        assert rolling_mean(values, window) == pytest.approx(expected)


def test_plot_skips_steps_that_did_not_log_a_column(tmp_path: Path) -> None:
    rows = ["step,reward,rewards/format/mean,loss"]
    rows += [f"{step},{step / 20},{'' if step % 2 else 0.5},{'nan' if step == 3 else 0.1}" for step in range(1, 13)]
    csv = tmp_path / "metrics.csv"
    csv.write_text("\n".join(rows) + "\n")
    out = plot_curve(csv, tmp_path / "curve.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot_curve(csv, tmp_path / "loss.png", metric="loss").is_file()
    with pytest.raises(ValueError, match="no kl column"):
        plot_curve(csv, tmp_path / "kl.png", metric="kl")
