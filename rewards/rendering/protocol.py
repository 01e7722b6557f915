"""Framing between the pool and a worker: a JSON header and a byte payload per message.

JSON, not pickle: the worker is trusted, but keeping the channel data-only means nothing a job
manages to smuggle into a worker's output can become code in the training process.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

_LEN = struct.Struct(">IQ")  # header length, payload length
MAX_HEADER = 1 << 20


class ChannelClosed(EOFError):
    """The other end closed its pipe or did not answer in time."""


def write_message(fd: int, header: dict[str, Any], payload: bytes = b"", deadline: float | None = None) -> None:
    """Write one message; with a ``deadline`` the fd must be non-blocking (the pool's side), so a
    wedged reader costs a :class:`ChannelClosed` instead of a hang."""
    head = json.dumps(header).encode()
    view = memoryview(_LEN.pack(len(head), len(payload)) + head + payload)
    while view:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                raise ChannelClosed(f"peer did not read within the deadline ({len(view)} bytes left)")
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            continue


def read_exact(fd: int, n: int, deadline: float | None = None) -> bytes:
    """``n`` bytes from ``fd``; ``deadline`` (``time.monotonic()``) bounds the wait."""
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise ChannelClosed(f"no answer within the deadline ({got}/{n} bytes read)")
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise ChannelClosed(f"pipe closed after {got}/{n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_message(fd: int, deadline: float | None = None, max_payload: int = 1 << 30) -> tuple[dict, bytes]:
    head_len, payload_len = _LEN.unpack(read_exact(fd, _LEN.size, deadline))
    if head_len > MAX_HEADER or payload_len > max_payload:
        raise ChannelClosed(f"message too large (header {head_len}, payload {payload_len} bytes)")
    header = json.loads(read_exact(fd, head_len, deadline))
    return header, read_exact(fd, payload_len, deadline)
