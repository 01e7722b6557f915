"""The run directory every engine writes: resolved recipe, atomic checkpoints, resume.

A checkpoint is only a checkpoint once its completion marker (:data:`COMPLETE_MARKER`) is
written, fsynced and renamed into place after every other file of it; :func:`latest_checkpoint`
ignores directories without one, so a write killed half way (or stopped by a full disk) never
looks like a valid checkpoint and ``--resume`` continues from the newest complete one. The
marker records each file's size: a file changed after the checkpoint was complete (truncated by
a copy, a sync tool or a failing disk) is a :class:`CorruptCheckpointError` naming the file,
not a traceback from deep inside ``torch.load``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zoo.recipe import Recipe

logger = logging.getLogger(__name__)

COMPLETE_MARKER = "zoo_checkpoint_complete.json"
RESOLVED_RECIPE = "recipe.yaml"
_CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")


class CorruptCheckpointError(RuntimeError):
    """A complete checkpoint whose files no longer are what was written; the message names the file."""


def prepare_run_dir(recipe: Recipe, out_dir: Path | None = None) -> Path:
    """Create the run directory and write the resolved recipe into it; returns the directory."""
    out = Path(out_dir) if out_dir is not None else recipe.output_dir
    out.mkdir(parents=True, exist_ok=True)
    recipe.to_yaml(out / RESOLVED_RECIPE)
    logger.info("resolved recipe written to %s", out / RESOLVED_RECIPE)
    return out


def checkpoint_step(folder: Path) -> int:
    """The optimiser step a complete checkpoint was written at (from its marker)."""
    return int(json.loads((Path(folder) / COMPLETE_MARKER).read_text())["step"])


def mark_complete(folder: Path, step: int) -> None:
    """Write the completion marker last: fsync every file, then atomically rename the marker in."""
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            with path.open("rb") as f:
                os.fsync(f.fileno())
    tmp = folder / (COMPLETE_MARKER + ".tmp")
    sizes = {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file() and p != tmp}
    with tmp.open("w") as f:
        json.dump({"step": step, "files": sorted(sizes), "sizes": sizes}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, folder / COMPLETE_MARKER)


def is_complete(folder: Path) -> bool:
    """True when ``folder`` holds a marker and every file it lists."""
    marker = folder / COMPLETE_MARKER
    if not marker.is_file():
        return False
    try:
        files = json.loads(marker.read_text())["files"]
    except (ValueError, KeyError):
        return False
    return all((folder / name).is_file() for name in files)


def latest_checkpoint(output_dir: str | Path, *, remove_incomplete: bool = False) -> Path | None:
    """The newest *complete* ``checkpoint-N`` in ``output_dir``, or ``None``.

    Incomplete ones (a killed write) are skipped with a warning, and deleted when
    ``remove_incomplete`` so that a resumed run does not write into a half-written folder.
    """
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return None
    found = sorted(
        (int(m.group(1)), p) for p in output_dir.iterdir() if p.is_dir() and (m := _CHECKPOINT_RE.match(p.name))
    )
    best = None
    for _, path in found:
        if is_complete(path):
            best = path
        else:
            logger.warning("ignoring incomplete checkpoint %s (its write did not finish)", path)
            if remove_incomplete:
                shutil.rmtree(path)
    if best is not None:
        check_sizes(best)
    return best


def check_sizes(folder: Path) -> None:
    """Raise :class:`CorruptCheckpointError` when a file of a complete checkpoint changed size since it was written."""
    recorded = json.loads((folder / COMPLETE_MARKER).read_text()).get("sizes", {})
    for name, size in recorded.items():
        actual = (folder / name).stat().st_size
        if actual != size:
            raise CorruptCheckpointError(
                f"{folder / name} is {actual} bytes but was written as {size} bytes (truncated or modified since). "
                f"Restore it, or move {folder} aside to resume from the checkpoint before it"
            )


def prune_checkpoints(output_dir: str | Path, keep: int | None) -> None:
    """Delete the oldest complete checkpoints so that at most ``keep`` remain (``None`` keeps all)."""
    if keep is None:
        return
    complete = sorted((checkpoint_step(p), p) for p in Path(output_dir).glob("checkpoint-*") if is_complete(p))
    for _, old in complete[: max(0, len(complete) - keep)]:
        shutil.rmtree(old, ignore_errors=True)
