"""Batch jobs: the SVGs of one reward call rendered in one sandboxed job, each sample still judged alone.

A job's fixed cost (fork, walls, exit, reap: 10-20 ms on a loaded 2-core machine) is larger than
a skia render of a 224-px SVG (about 10 ms), so one job per SVG caps a core near 20 renders/s
(``bench/render_throughput.py`` prints both rates). SVG is data: no model code runs, so the samples
of one call may share a job (:data:`BATCHED_KINDS`). The job's walls are those of a single job;
what needs care is who is blamed for a failure:

* the job renders the samples in order and writes one frame per sample as soon as it is done
  (``K`` + RGB, or ``E`` + the renderer's error on that input); the worker waits for each frame at
  most the per-sample timeout, counted from the previous frame;
* an ``E`` frame is that sample's own verdict (its input was refused or could not be parsed);
* anything else (a late frame, a crash, a malformed frame, an ``R`` frame for a ``MemoryError``,
  which an earlier sample may have caused) settles nothing from that sample on: the pool renders
  that sample again alone in a fresh job, whose verdict is the one that counts, and goes on with
  the rest in a new batch.

So a sample that crashes or hangs the renderer is scored exactly as when rendered alone, and no
other sample is scored, or masked, because of it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from rewards.rendering.protocol import ChannelClosed, read_exact

#: Kinds whose source is data and run no model code: many samples of them may share one job.
BATCHED_KINDS = frozenset({"svg", "svg-skia"})
#: Samples per batch job by default: the fixed cost shrinks to about 1 ms a sample, and a batch
#: that stops partway re-renders at most this many.
DEFAULT_MAX_BATCH = 16
ERROR_BYTES = 2000
_FRAME = struct.Struct(">cI")  # code, body length
OK, ERROR, RETRY_ALONE = b"K", b"E", b"R"


def frame(code: bytes, body: bytes) -> bytes:
    """One sample's answer as the job writes it."""
    return _FRAME.pack(code, len(body)) + body


def split(payload: bytes, lengths: Sequence[int]) -> list[bytes]:
    """The sources of a batch request (their byte lengths travel in the header)."""
    if sum(lengths) != len(payload) or any(n < 0 for n in lengths):
        raise ValueError(f"batch lengths {list(lengths)[:8]} do not add up to the {len(payload)}-byte payload")
    out, start = [], 0
    for n in lengths:
        out.append(payload[start:start + n])
        start += n
    return out


def read_frames(fd: int, count: int, timeout: float, image_bytes: int,
                clock: Any) -> tuple[list[tuple[bytes, bytes]], str | None]:
    """The job's frames, each awaited at most ``timeout`` s after the previous one.

    Returns the settled ``(code, body)`` frames in order and ``None``, or the frames before the
    first sample the job did not settle and the reason (that sample is then rendered alone).
    """
    frames: list[tuple[bytes, bytes]] = []
    for index in range(count):
        deadline = clock() + timeout
        try:
            code, length = _FRAME.unpack(read_exact(fd, _FRAME.size, deadline))
            if code not in (OK, ERROR, RETRY_ALONE) or length > (image_bytes if code == OK else ERROR_BYTES):
                return frames, f"sample {index}: malformed answer (code {code!r}, {length} bytes)"
            if code == OK and length != image_bytes:
                return frames, f"sample {index}: image of {length} bytes, expected {image_bytes}"
            body = read_exact(fd, length, deadline)
        except ChannelClosed as err:
            return frames, f"sample {index}: no complete answer within {timeout:g} s ({err})"
        if code == RETRY_ALONE:
            return frames, f"sample {index}: {body.decode('utf-8', 'replace')}"
        frames.append((code, body))
    return frames, None


def chunks(count: int, workers: int, max_batch: int) -> list[range]:
    """Contiguous index ranges: at least one per worker (all of them busy), at most ``max_batch`` long."""
    if count <= 0:
        return []
    per = max(1, min(max_batch, -(-count // max(1, workers))))
    return [range(start, min(start + per, count)) for start in range(0, count, per)]
