"""Which files the code under test opens: an audit hook on the ``open`` event (``open``, ``io.open``, ``os.open``).

Used to prove that a refusal came before a file was read (a secret a link points at, an 8 GiB
sparse JSON). ``sys.addaudithook`` cannot be undone, so the hook only records, and only the paths
a :func:`watch` block names.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_watched: set[str] = set()
_opened: list[str] = []


def _record(event: str, args: tuple) -> None:
    if event == "open" and _watched and isinstance(args[0], str | bytes | os.PathLike):
        path = os.fsdecode(args[0])
        if os.path.realpath(path) in _watched:
            _opened.append(path)


sys.addaudithook(_record)


@contextmanager
def watch(*paths: Path) -> Iterator[list[str]]:
    """Within the block, the returned list collects every opening of one of ``paths`` (links resolved)."""
    _watched.update(os.path.realpath(p) for p in paths)
    _opened.clear()
    try:
        yield _opened
    finally:
        _watched.clear()
