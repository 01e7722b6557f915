"""nuPlan's comfort limits and NAVSIM's two-frame extended comfort, on :class:`~.scene.EgoStates`.

Limits, filters and windows as in ``autonomousvision/navsim`` (HEAD 0a380a90)
``navsim/planning/simulation/planner/pdm_planner/scoring/pdm_comfort_metrics.py``:
Savitzky-Golay smoothing of acceleration (window 8, order 2), jerk as its first derivative
(window 15), yaw rate / yaw acceleration as derivatives of the unwrapped heading (the code passes
no window, so scipy's default of that function, 5, applies), strict bounds. One difference: NAVSIM
converts rear-axle states to the vehicle centre before reading the longitudinal/lateral
acceleration; here the accelerations are the rear axle's (finite differences, :func:`.scene.ego_states`).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy.signal import savgol_filter

from domains.driving.scene import DT, EgoStates

MAX_ABS_MAG_JERK = 8.37  # [m/s^3]
MAX_ABS_LAT_ACCEL = 4.89  # [m/s^2]
MAX_LON_ACCEL = 2.40  # [m/s^2]
MIN_LON_ACCEL = -4.05
MAX_ABS_YAW_ACCEL = 1.93  # [rad/s^2]
MAX_ABS_LON_JERK = 4.13  # [m/s^3]
MAX_ABS_YAW_RATE = 0.95  # [rad/s]
# two-frame extended comfort: RMS of the frame-to-frame difference must stay at or below these
EC_ACCELERATION = 0.7
EC_JERK = 0.5
EC_YAW_RATE = 0.1
EC_YAW_ACCEL = 0.1


@functools.lru_cache(maxsize=64)
def _savgol_matrix(n: int, window: int, poly: int, order: int) -> np.ndarray:
    """scipy's ``savgol_filter`` on ``n`` samples (its default ``mode="interp"`` edge fits included) as the
    linear map it is, read off the identity: a filter is then one matrix product instead of scipy's
    per-call least-squares edge fits, which were most of the scorer's time."""
    window = min(window, n)
    return savgol_filter(np.eye(n), polyorder=poly, window_length=window, deriv=order, delta=DT, axis=0)


def _smooth(values: np.ndarray) -> np.ndarray:
    return np.round(_savgol_matrix(len(values), 8, 2, 0) @ values, 8)


def _derivative(values: np.ndarray, window: int = 5, poly: int = 2, order: int = 1) -> np.ndarray:
    return _savgol_matrix(len(values), window, poly, order) @ values


def features(states: EgoStates) -> dict[str, np.ndarray]:
    """Smoothed lon/lat/magnitude acceleration, jerks, yaw rate and yaw acceleration per step."""
    lon = _smooth(states.accel_local[:, 0])
    lat = _smooth(states.accel_local[:, 1])
    mag = _smooth(np.linalg.norm(states.accel_local, axis=1))
    heading = np.unwrap(states.rear_axle[:, 2])
    return {
        "lon_accel": lon,
        "lat_accel": lat,
        "accel": mag,
        "jerk": np.round(_derivative(mag, window=15), 8),
        "lon_jerk": np.round(_derivative(lon, window=15), 8),
        "yaw_rate": np.round(_derivative(heading), 8),
        "yaw_accel": np.round(_derivative(heading, poly=3, order=2), 8),
    }


def _within(values: np.ndarray, low: float, high: float) -> bool:
    return bool(np.all((values > low) & (values < high)))


def comfort_checks(states: EgoStates) -> dict[str, bool]:
    """The six nuPlan comfort checks (``ego_is_comfortable``); comfort is 1 when all hold."""
    f = features(states)
    return {
        "lon_accel": _within(f["lon_accel"], MIN_LON_ACCEL, MAX_LON_ACCEL),
        "lat_accel": _within(f["lat_accel"], -MAX_ABS_LAT_ACCEL, MAX_ABS_LAT_ACCEL),
        "jerk": _within(f["jerk"], -MAX_ABS_MAG_JERK, MAX_ABS_MAG_JERK),
        "lon_jerk": _within(f["lon_jerk"], -MAX_ABS_LON_JERK, MAX_ABS_LON_JERK),
        "yaw_accel": _within(f["yaw_accel"], -MAX_ABS_YAW_ACCEL, MAX_ABS_YAW_ACCEL),
        "yaw_rate": _within(f["yaw_rate"], -MAX_ABS_YAW_RATE, MAX_ABS_YAW_RATE),
    }


def is_comfortable(states: EgoStates) -> float:
    return float(all(comfort_checks(states).values()))


def two_frame_extended_comfort(current: EgoStates, previous: EgoStates, observation_interval: float = 0.5) -> float:
    """EC (``SceneAggregator._compute_two_frame_comfort`` + ``ego_is_two_frame_extended_comfort``):
    the overlapping parts of this frame's and the previous frame's trajectories (shifted by the
    observation interval) must agree: RMS differences of acceleration, jerk, yaw rate and yaw
    acceleration within 0.7, 0.5, 0.1, 0.1."""
    if not 0 < observation_interval < 0.55:
        raise ValueError(f"observation_interval must be in (0, 0.55) s as NAVSIM asserts, got {observation_interval}")
    shift = round(observation_interval / DT)
    cur, prev = features(current.window(0, -shift)), features(previous.window(shift, None))
    rms = {k: float(np.sqrt(np.mean((cur[k] - prev[k]) ** 2))) for k in ("accel", "jerk", "yaw_rate", "yaw_accel")}
    ok = rms["accel"] <= EC_ACCELERATION and rms["jerk"] <= EC_JERK and rms["yaw_rate"] <= EC_YAW_RATE
    return float(ok and rms["yaw_accel"] <= EC_YAW_ACCEL)
