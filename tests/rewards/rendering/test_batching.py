"""Batch jobs of SVG: same images as one job per sample, and a failing sample is judged alone."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

from rewards.rendering import RenderPool
from rewards.rendering.batching import ERROR, OK, RETRY_ALONE, chunks, frame, read_frames, split

HEAD = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10">'
COLORS = ("#ff0000", "#00ff00", "#0000ff", "#808080", "#000000")
#: skia spends seconds on each blurred rectangle at this size: far past the test's timeout.
SLOW = (HEAD + '<defs><filter id="f"><feGaussianBlur stdDeviation="3"/></filter></defs>'
        + "".join(f'<rect x="{i % 9}" y="{i % 8}" width="5" height="5" filter="url(#f)"/>' for i in range(200))
        + "</svg>")


def solid(color: str) -> str:
    return HEAD + f'<rect width="10" height="10" fill="{color}"/><circle cx="5" cy="5" r="2" fill="#fff"/></svg>'


def test_chunks_cover_every_index_once_and_use_every_worker() -> None:
    parts = chunks(37, workers=2, max_batch=16)
    assert [i for part in parts for i in part] == list(range(37))
    assert max(len(p) for p in parts) <= 16 and len(parts) >= 2
    assert chunks(3, workers=4, max_batch=16) == [range(1), range(1, 2), range(2, 3)]
    assert chunks(0, workers=2, max_batch=16) == []


def test_split_refuses_lengths_that_do_not_add_up() -> None:
    assert split(b"abcdef", [1, 2, 3]) == [b"a", b"bc", b"def"]
    with pytest.raises(ValueError, match="do not add up"):
        split(b"abc", [1, 1])


def _frames_from(data: bytes, count: int, image_bytes: int = 3, timeout: float = 2.0):
    read_fd, write_fd = os.pipe()
    os.write(write_fd, data)
    os.close(write_fd)
    try:
        return read_frames(read_fd, count, timeout, image_bytes, time.monotonic)
    finally:
        os.close(read_fd)


def test_read_frames_settles_a_prefix_and_names_the_first_unsettled_sample() -> None:
    good = frame(OK, b"rgb") + frame(ERROR, b"ValueError: bad path")
    assert _frames_from(good, 2) == ([(OK, b"rgb"), (ERROR, b"ValueError: bad path")], None)
    settled, why = _frames_from(good + frame(RETRY_ALONE, b"out of memory"), 4)
    assert len(settled) == 2 and why.startswith("sample 2: out of memory")
    settled, why = _frames_from(good, 3)  # the job died before its third answer
    assert len(settled) == 2 and why.startswith("sample 2: no complete answer")
    settled, why = _frames_from(frame(OK, b"toolong"), 1)  # an image of the wrong size
    assert settled == [] and "malformed" in why
    settled, why = _frames_from(b"I" + b"sandbox setup failed", 1)
    assert settled == [] and "malformed" in why


@pytest.fixture(scope="module")
def pool():
    with RenderPool(1, kinds=("svg-skia",)) as p:
        yield p


def test_a_batch_gives_the_images_of_single_renders_in_order(pool: RenderPool) -> None:
    sources = [solid(c) for c in COLORS] + [HEAD + '<image href="/etc/hostname"/></svg>', "", solid("#123456")]
    batch = pool.render_batch("svg-skia", sources, size=(24, 24))
    single = [pool.render("svg-skia", s, size=(24, 24)) for s in sources]
    assert [r.status for r in batch] == [r.status for r in single] == ["ok"] * 5 + ["invalid", "invalid", "ok"]
    for b, s in zip(batch, single):
        assert (b.ok and np.array_equal(np.asarray(b.image), np.asarray(s.image))) or b.error == s.error
    assert "external resource" in batch[5].error


def test_render_many_batches_svg_kinds_only(pool: RenderPool) -> None:
    with pytest.raises(ValueError, match="runs code"):
        RenderPool(1, kinds=("matplotlib",)).render_batch("matplotlib", ["x"])
    results = pool.render_many("svg-skia", [solid(c) for c in COLORS * 8], size=(8, 8))
    assert [r.image.getpixel((0, 0)) for r in results[:3]] == [(255, 0, 0), (0, 255, 0), (0, 0, 255)]
    assert all(r.ok for r in results) and len(results) == 40


def test_a_hanging_sample_is_judged_alone_and_no_other_sample_pays() -> None:
    with RenderPool(1, kinds=("svg-skia",)) as own:
        sources = [solid("#ff0000"), solid("#00ff00"), SLOW, solid("#0000ff"), solid("#808080")]
        results = own.render_batch("svg-skia", sources, size=(256, 256), timeout=1.0)
        counts = own.failure_counts
    assert [r.status for r in results] == ["ok", "ok", "timeout", "ok", "ok"]
    assert results[3].image.getpixel((0, 0)) == (0, 0, 255)
    assert counts["timeout"] == 1 and counts["ok"] == 4  # the batch attempt at the slow sample is not counted


def test_a_worker_lost_mid_batch_costs_no_sample_its_score() -> None:
    with RenderPool(1, kinds=("svg-skia",)) as own:
        os.killpg(own.worker_pids[0], signal.SIGKILL)
        results = own.render_batch("svg-skia", [solid(c) for c in COLORS], size=(8, 8))
    assert [r.status for r in results] == ["ok"] * 5  # re-rendered on the restarted worker
