"""Between two jobs of a worker: put the worker's private ``/tmp``, ``/var/tmp`` and ``/dev/shm``
back the way they were when the worker became ready.

Those directories are tmpfs mounts of the worker's own mount namespace (see
:mod:`rewards.rendering.oslevel`), so nothing written there reaches the host; but every job of a
worker sees the same mounts, so a file one job leaves there would be read by the next. The
worker records what exists when it is ready (its scratch root, the mount points of kept paths,
nothing else on a fresh tmpfs) and removes everything else after each job.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from collections.abc import Iterable

logger = logging.getLogger(__name__)

Identity = tuple[int, int]  # (st_dev, st_ino)


def snapshot(roots: Iterable[str]) -> dict[str, Identity]:
    """Every path under ``roots`` with its identity, not descending into other mounts (a kept
    path bound back inside ``/tmp`` is recorded, its content is not walked)."""
    seen: dict[str, Identity] = {}

    def record(path: str, ident: Identity) -> bool:
        seen[path] = ident
        return True

    for root in roots:
        _walk(root, os.lstat(root).st_dev, record)
    return seen


def restore(baseline: dict[str, Identity], roots: Iterable[str]) -> list[str]:
    """Remove every path under ``roots`` that is not in ``baseline`` (new, or replaced by
    something else under the same name: a directory swapped for a symlink). Returns what was
    removed. Files of the baseline are kept as they are (a fresh tmpfs holds none but mount
    points, which no job can write to)."""
    removed: list[str] = []

    def visit(path: str, ident: Identity) -> bool:
        if baseline.get(path) == ident:
            return True
        remove_tree(path)
        removed.append(path)
        return False

    for root in roots:
        _walk(root, os.lstat(root).st_dev, visit)
    return removed


def _walk(directory: str, device: int, visit) -> None:
    """Call ``visit(path, identity)`` for each entry; descend into same-device directories for
    which it returns True."""
    try:
        names = os.listdir(directory)
    except OSError as err:
        logger.warning("render worker: cannot list %s: %s", directory, err)
        return
    for name in names:
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if visit(path, (st.st_dev, st.st_ino)) and stat.S_ISDIR(st.st_mode) and st.st_dev == device:
            _walk(path, device, visit)


def remove_tree(path: str) -> None:
    """Remove a file or tree, including what a job chmod-ed to 000 (in user-namespace mode the
    worker has no CAP_DAC_OVERRIDE over those files)."""

    def retry(func, target, _exc) -> None:
        try:
            os.chmod(os.path.dirname(target), stat.S_IRWXU)
            if not os.path.islink(target):
                os.chmod(target, stat.S_IRWXU)
            func(target)
        except OSError as err:
            logger.warning("render worker: could not remove %s: %s", target, err)

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, onerror=retry)
    elif os.path.lexists(path):
        try:
            os.unlink(path)
        except OSError as err:
            logger.warning("render worker: could not remove %s: %s", path, err)
