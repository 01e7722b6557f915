"""The scorer's batched geometry against plain references written out here, one pair or point at a time.

The batched forms (every ego step against every agent, every box corner against every lane) are
what makes the reward cheap enough for GRPO; these checks hold them to the textbook definitions.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import savgol_filter

from domains.driving import comfort, metrics
from domains.driving.scene import DT, Lane, Scene, box_corners, convex_intersects_many, in_lane, project_many


def _cross(o: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    return float((a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]))


def _inside(point: np.ndarray, poly: np.ndarray) -> bool:
    signs = [_cross(poly[i], poly[(i + 1) % len(poly)], point) for i in range(len(poly))]
    return all(s >= 0 for s in signs) or all(s <= 0 for s in signs)


def _segments_cross(p1, p2, q1, q2) -> bool:
    d1, d2 = _cross(q1, q2, p1), _cross(q1, q2, p2)
    d3, d4 = _cross(p1, p2, q1), _cross(p1, p2, q2)
    return d1 * d2 <= 0 and d3 * d4 <= 0


def _touch(a: np.ndarray, b: np.ndarray) -> bool:
    """Two convex polygons touch when a vertex of one lies in the other or two edges cross."""
    if any(_inside(p, b) for p in a) or any(_inside(p, a) for p in b):
        return True
    return any(_segments_cross(a[i], a[(i + 1) % 4], b[j], b[(j + 1) % 4]) for i in range(4) for j in range(4))


def test_box_intersection_matches_the_vertex_and_edge_definition():
    rng = np.random.default_rng(0)
    n = 2000
    a = box_corners(rng.uniform(-4, 4, n), rng.uniform(-4, 4, n), rng.uniform(-np.pi, np.pi, n), 4.5, 2.0)
    b = box_corners(rng.uniform(-4, 4, n), rng.uniform(-4, 4, n), rng.uniform(-np.pi, np.pi, n), 3.0, 1.0)
    batched = convex_intersects_many(a, b)
    reference = np.array([_touch(a[i], b[i]) for i in range(n)])
    assert 0.2 < reference.mean() < 0.8  # both outcomes are well represented
    assert np.array_equal(batched, reference)
    # leading shapes broadcast: one ego box against a stack of agents' boxes
    assert np.array_equal(convex_intersects_many(a[0], b[:50]), [_touch(a[0], b[i]) for i in range(50)])


def test_box_corners_are_in_navsims_order_and_rotate_about_the_centre():
    corners = box_corners(1.0, 2.0, np.pi / 2, 4.0, 2.0)
    # heading +90 deg: the front points along +y; front-left is then at -x
    assert corners == pytest.approx(np.array([[0.0, 4.0], [0.0, 0.0], [2.0, 0.0], [2.0, 4.0]]))
    stacked = box_corners(np.array([1.0, 0.0]), np.array([2.0, 0.0]), np.array([np.pi / 2, 0.0]), 4.0, 2.0)
    assert stacked.shape == (2, 4, 2) and stacked[0] == pytest.approx(corners)


def test_projection_matches_a_dense_walk_along_the_polyline():
    polyline = np.array([[0.0, 0.0], [10.0, 0.0], [15.0, 5.0], [15.0, 20.0]])
    lengths = np.linalg.norm(np.diff(polyline, axis=0), axis=1)
    dense_s = np.linspace(0.0, lengths.sum(), 200_001)
    dense = np.stack([np.interp(dense_s, np.r_[0, np.cumsum(lengths)], polyline[:, k]) for k in (0, 1)], axis=1)
    points = np.random.default_rng(1).uniform([-3, -3], [18, 22], (300, 2))
    s, dist, within = project_many(polyline, points)
    for p, s_i, d_i, w_i in zip(points, s, dist, within, strict=True):
        gaps = np.linalg.norm(dense - p, axis=1)
        j = int(np.argmin(gaps))
        assert d_i == pytest.approx(gaps[j], abs=1e-3)
        if np.sum(gaps < gaps[j] + 1e-3) < 50:  # a unique nearest point (not equidistant from two legs)
            assert s_i == pytest.approx(dense_s[j], abs=2e-3)
        assert w_i == (0 < j < len(dense) - 1)


def test_in_lane_is_within_half_the_width_between_the_ends():
    lane = Lane("l", np.array([[0.0, 0.0], [20.0, 0.0]]), width=4.0)
    points = np.array([[5.0, 1.9], [5.0, 2.1], [-0.5, 0.0], [20.5, 0.0], [10.0, -2.0]])
    assert in_lane(lane, points).tolist() == [True, False, False, False, True]


def test_savgol_as_a_matrix_is_scipys_filter():
    """Reference: scipy.signal.savgol_filter (mode "interp"), which NAVSIM's pdm_comfort_metrics.py calls."""
    x = np.random.default_rng(2).normal(size=41)
    assert comfort._smooth(x) == pytest.approx(np.round(savgol_filter(x, 8, 2), 8), abs=1e-12)
    for window, poly, order in ((5, 2, 1), (15, 2, 1), (5, 3, 2)):
        expected = savgol_filter(x, window, poly, deriv=order, delta=DT)
        assert comfort._derivative(x, window, poly, order) == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_sub_metrics_are_remembered_per_scene_and_trajectory_and_handed_out_as_copies():
    from domains.driving.data import synthetic_driving

    [sample] = synthetic_driving(n=1, seed=77, size=56)
    waypoints = np.asarray(sample.target["waypoints"])
    first = metrics.sub_metrics(Scene.from_dict(sample.target["scene"]), waypoints)
    first["nc"] = -1.0  # the caller's copy; the memo keeps its own
    again = Scene.from_dict(sample.target["scene"])  # an equal scene read again shares the key
    key = (again.key, waypoints.astype(float).tobytes())
    assert key in metrics._MEMO
    assert metrics.sub_metrics(again, waypoints)["nc"] == 1.0
    moved = Scene.from_dict({**sample.target["scene"], "ego_speed": sample.target["scene"]["ego_speed"] + 0.1})
    assert moved.key != again.key


def test_sub_metrics_from_several_threads_agree_with_one():
    from concurrent.futures import ThreadPoolExecutor

    from domains.driving.data import synthetic_driving

    samples = synthetic_driving(n=6, seed=78, size=56)
    jobs = [(Scene.from_dict(s.target["scene"]), np.asarray(s.target["waypoints"]) + k * 0.3)
            for s in samples for k in range(4)]  # fmt: skip
    metrics._MEMO.clear()
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(lambda job: metrics.sub_metrics(*job), jobs * 3))
    metrics._MEMO.clear()
    assert threaded == [metrics.sub_metrics(*job) for job in jobs] * 3
