"""The run directory every engine writes: resolved recipe, atomic checkpoints, resume.

A checkpoint is only a checkpoint once its completion marker (:data:`COMPLETE_MARKER`) is
written, fsynced and renamed into place after every other file of it; :func:`latest_checkpoint`
ignores directories without one, so a write killed half way (or stopped by a full disk) never
looks like a valid checkpoint and ``--resume`` continues from the newest complete one. The
marker records each file's size: a file changed after the checkpoint was complete (truncated by
a copy, a sync tool or a failing disk) is a :class:`CorruptCheckpointError` naming the file,
not a traceback from deep inside ``torch.load``.

A run directory may come from someone else (a colleague's run to continue, a downloaded one), so
what ``--resume`` reads is data, never code: tensors through safetensors, plain containers through
:func:`read_state` (``torch.load(weights_only=True)``), JSON. A state file that needs unpickling is
refused with a sentence. In a multi-process launch only the main process (:func:`is_main_process`)
writes the run directory's shared files, deletes a half-written checkpoint or prunes old ones.

A run starts in two halves. ``zoo train`` calls :func:`prepare_run_dir` once, before any engine: the
refusal of a fresh run into another run's directory and ``recipe.yaml``. Every engine's loop then calls
:func:`start_run` where its training begins: the directory, the checkpoint ``--resume`` continues from
and the ``metrics.csv`` that continues with it (:class:`RunStart`), so that no engine decides on its own
which checkpoint counts or which rows survive a resume. Each engine keeps its checkpoint format and the
reading of its state (what a checkpoint holds differs per engine; where it is and whether it is whole does not).
"""

from __future__ import annotations

import json
import logging
import math
import os
import pickle
import re
import shutil
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zoo.recipe import Recipe

logger = logging.getLogger(__name__)

COMPLETE_MARKER = "zoo_checkpoint_complete.json"
RESOLVED_RECIPE = "recipe.yaml"
_CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")


class CorruptCheckpointError(RuntimeError):
    """A complete checkpoint whose files no longer are what was written; the message names the file."""


class UnsafeStateError(ValueError):
    """A training-state file that only unpickling could read: refused, nothing of it ran."""


class RunExistsError(RuntimeError):
    """A fresh run was pointed at a directory that holds another run's checkpoints or result."""


class DiskFullError(OSError):
    """A run stopped because the disk holding its directory filled up (see :func:`disk_full`)."""


#: Below this much free space, a write error in a run directory is read as a full disk.
_NEARLY_FULL = 1 << 20


def process_rank() -> int:
    """This process's global rank in a ``torchrun`` / ``accelerate launch`` job (0 when launched alone).

    Read from the launcher's ``RANK`` variable, so it is known before any process group exists (the
    run directory is prepared before an engine starts one)."""
    return int(os.environ.get("RANK", "0") or 0)


def is_main_process() -> bool:
    """True in the process that writes a run directory's shared files (rank 0, or a single process)."""
    return process_rank() == 0


def prepare_run_dir(recipe: Recipe, out_dir: Path | None = None, *, resume: bool = False,
                    resume_changes: bool = False) -> Path:  # fmt: skip
    """Create the run directory and write the resolved recipe into it (main process); returns the directory.

    A fresh run (``resume=False``) refuses a directory that already holds a run's checkpoints or
    ``final/``: resuming that directory later would silently continue the *other* run (its
    checkpoints outnumber the new ones, and pruning deletes the new ones first). A resume keeps the run's
    settings: changed ones are refused, or with ``resume_changes`` recorded as a change at the step it resumes
    from (:func:`zoo.resume_changes.continued`).
    """
    out = Path(out_dir) if out_dir is not None else recipe.output_dir
    if resume and (out / RESOLVED_RECIPE).is_file():
        from zoo.recipe import read_yaml
        from zoo.resume_changes import continued

        newest = latest_checkpoint(out)
        recipe = continued(recipe, read_yaml(out / RESOLVED_RECIPE), accept=resume_changes,
                           step=checkpoint_step(newest) if newest is not None else 0)  # fmt: skip
    if not resume:
        earlier = existing_run(out)
        if earlier:
            raise RunExistsError(
                f"{out} already holds a run ({', '.join(earlier)}). Continue it with --resume, choose another "
                f"--output-dir, or move {out} aside first"
            )
    out.mkdir(parents=True, exist_ok=True)
    if is_main_process():
        recipe.to_yaml(out / RESOLVED_RECIPE)
        logger.info("resolved recipe written to %s", out / RESOLVED_RECIPE)
    return out


@dataclass(frozen=True)
class RunStart:
    """Where an engine's loop starts: its run directory and the complete checkpoint it resumes from (or ``None``)."""

    output_dir: Path
    checkpoint: Path | None

    @property
    def step(self) -> int:
        """The optimiser step (round, iteration) the run continues after: the checkpoint's, 0 for a fresh run."""
        return checkpoint_step(self.checkpoint) if self.checkpoint is not None else 0


def start_run(output_dir: Path, *, resume: bool) -> RunStart:
    """Create ``output_dir`` and, with ``resume``, find the newest complete checkpoint in it.

    Every engine's loop calls this after its dry-run return and its own recipe checks, before it builds
    from a checkpoint. Half-written checkpoints are deleted (by the main process) so that the resumed run
    never writes into one; ``--resume`` of a directory without a complete checkpoint warns and starts
    fresh, as a first run that was killed before its first checkpoint must be resumable with the same command.
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    if resume:
        refuse_links(output_dir)
    checkpoint = latest_checkpoint(output_dir, remove_incomplete=True) if resume else None
    if resume and checkpoint is None:
        logger.warning("--resume: no complete checkpoint in %s; starting from scratch", output_dir)
    elif checkpoint is not None:
        logger.info("resuming from %s", checkpoint)
    return RunStart(output_dir, checkpoint)


class NonFiniteError(RuntimeError):
    """A loss or gradient that is not a finite number: the step would write NaN into every weight."""


def check_finite(where: str, **values: float) -> None:
    """Stop the run before an optimiser step that ``values`` (a loss, a gradient norm) show would leave NaN or inf
    weights: a :class:`NonFiniteError` in one line, the last complete checkpoint left as it is (review-reliability
    10.6: NaN weights trained on and ``final/`` was written all NaN, exit 0)."""
    bad = {name: value for name, value in values.items() if not math.isfinite(value)}
    if bad:
        listed = ", ".join(f"{name} {value}" for name, value in bad.items())
        raise NonFiniteError(f"{where}: {listed}, not a finite number; the run stops before this step changes its "
                             "weights. Its last complete checkpoint is intact: resume from it with other settings "
                             "(a lower training.lr, a smaller training.max_grad_norm)")  # fmt: skip


def check_finite_weights(where: str, tensors: dict[str, Any]) -> None:
    """Refuse to save weights that hold NaN or inf (a :class:`NonFiniteError` naming the first such tensor): the last
    complete checkpoint stays the newest one a resume can find."""
    import torch

    bad = next((name for name, t in tensors.items() if t.is_floating_point() and not torch.isfinite(t).all()), None)
    if bad is not None:
        raise NonFiniteError(f"{where}: the weights hold NaN or inf ({bad} first); the run stops before saving them. "
                             "Its last complete checkpoint is intact: resume from it with other settings (a lower "
                             "training.lr)")  # fmt: skip


class LinkedRunDirError(ValueError):
    """A run directory handed over with symbolic links in it, which a resume would write through."""


#: The most entries :func:`refuse_links` looks at in a run directory (a run holds tens of checkpoints of tens of files).
_MOST_ENTRIES = 100_000


def refuse_links(run_dir: Path) -> None:
    """A resumed run reads and writes only regular files inside its own directory: any symbolic link in ``run_dir``
    (the directory itself, a file, a checkpoint folder), and any pipe, socket or device, is a
    :class:`LinkedRunDirError` naming it, before anything is read or written (review-reliability 10.1, 10.7: ``reward_curve.png -> ~/.bashrc`` became a PNG, a ``final`` link got
    the weights, a ``checkpoint-100`` linked from another run was resumed from)."""
    if run_dir.is_symlink():
        raise LinkedRunDirError(f"{run_dir} is a link to {os.readlink(run_dir)}; resume the run from its own folder")
    if not run_dir.is_dir():
        return
    seen = 0
    for folder, dirs, files in os.walk(run_dir):  # links to folders are listed in dirs, never descended into
        for name in [*dirs, *files]:
            seen += 1
            path = Path(folder) / name
            if path.is_symlink():
                raise LinkedRunDirError(f"{path} is a link to {os.readlink(path)}: --resume writes only regular files "
                                        f"inside the run directory; replace the link with the file itself, or remove "
                                        "it")  # fmt: skip
            if not (path.is_file() or path.is_dir()):  # a FIFO would hang the read, a device feed it forever
                raise LinkedRunDirError(f"{path} is not a regular file (a pipe, socket or device); a run directory "
                                        "holds files and folders only: remove it to resume")  # fmt: skip
            if seen > _MOST_ENTRIES:
                raise LinkedRunDirError(f"{run_dir} holds more than {_MOST_ENTRIES} entries; is it a run directory?")


def existing_run(output_dir: str | Path) -> list[str]:
    """The names in ``output_dir`` that belong to a run: ``checkpoint-N/`` folders and ``final/``."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return []
    return sorted(p.name for p in output_dir.iterdir()
                  if p.is_dir() and (_CHECKPOINT_RE.match(p.name) or p.name == "final"))  # fmt: skip


def disk_full(error: BaseException, output_dir: str | Path) -> DiskFullError | None:
    """A :class:`DiskFullError` saying so plainly when ``error`` came from a full disk, else ``None``.

    Libraries report a full disk in their own words: ``OSError`` ``ENOSPC``, safetensors' "(os error
    28)", or torch's zip writer's "unexpected pos" that names neither. So ``error``'s chain is read
    for the first two, and the free space of ``output_dir``'s file system (under 1 MiB) decides the rest.
    """
    import errno

    chain: list[BaseException] = []
    while error is not None and error not in chain:
        chain.append(error)
        error = error.__cause__ or error.__context__
    said = any(getattr(e, "errno", None) == errno.ENOSPC or "No space left" in str(e) or "os error 28" in str(e)
               for e in chain)  # fmt: skip
    try:
        stats = os.statvfs(output_dir)
        free = stats.f_bavail * stats.f_frsize
    except OSError:
        free = None
    if not said and (free is None or free >= _NEARLY_FULL):
        return None
    left = "" if free is None else f" ({free // 1024} KiB left)"
    return DiskFullError(
        errno.ENOSPC,
        f"the disk holding {output_dir} is full{left}: the checkpoint being written is incomplete and --resume "
        f"skips it. Free some space, then continue with --resume (the error was: {str(chain[0]).strip()[:200]})",
    )


def read_state(path: str | Path) -> Any:
    """A training-state file written with ``torch.save``, read as tensors and plain containers only.

    ``torch.load(weights_only=True)`` rebuilds tensors, numbers, strings, lists, tuples and dicts
    and refuses every other global; a file that names one (a crafted payload, or state from other
    code) is an :class:`UnsafeStateError` saying so, and nothing of it runs. Its records are first held
    to what the file can legitimately inflate to (:func:`check_inflation`).
    """
    import torch

    path = Path(path)
    check_inflation(path)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        reason = str(err).strip().splitlines()
        detail = next((line.strip() for line in reason if "GLOBAL" in line or "global" in line), reason[0] if reason else "")
        raise UnsafeStateError(
            f"refused to read {path}: it needs Python objects unpickled ({detail[:200]}), and --resume reads "
            "training state as tensors and plain values only. Checkpoints this zoo writes never need that; "
            "this one was written by other code or modified. Nothing of it was run"
        ) from None


def check_inflation(path: Path) -> None:
    """Refuse a ``torch.save`` zip whose records would inflate past the file's own size, before any is read.

    What a run's state file can legitimately hold in memory is what it holds on disk: ``torch.save`` stores every
    record uncompressed (``ZIP_STORED``), so the records' sizes in the zip's central directory (which torch
    allocates from) sum to less than the file. A record deflated into it would not be the zoo's: 4.4 MB of
    deflated zeros inflated to +1.9 GB (review-reliability 10.3). The marker's recorded sizes
    (:func:`check_sizes`) bound the file itself. A file that is not a zip (torch's legacy format, stored as written)
    is left to ``torch.load``.
    """
    if not zipfile.is_zipfile(path):
        return
    try:
        with zipfile.ZipFile(path) as archive:
            records = archive.infolist()
    except (zipfile.BadZipFile, ValueError) as err:
        raise CorruptCheckpointError(f"{path} is not a readable torch.save file ({err}); restore it, or move its "
                                     "checkpoint aside to resume from the one before it") from None  # fmt: skip
    on_disk = path.stat().st_size
    inflated = sum(r.file_size for r in records)
    if inflated > on_disk:
        largest = max(records, key=lambda r: r.file_size)
        raise CorruptCheckpointError(f"{path} would inflate to {inflated:,} bytes from {on_disk:,} on disk (its record "
                                     f"{largest.filename} alone to {largest.file_size:,}); torch.save stores state "
                                     "uncompressed, so the zoo did not write it. It was not read: move its checkpoint "
                                     "aside to resume from the one before it")  # fmt: skip


@contextmanager
def restoring(path: Path) -> Iterator[None]:
    """Load a checkpoint's state (``path``: its file or folder) into what a resumed run built: a ``KeyError``,
    ``TypeError``, ``AttributeError`` or ``IndexError`` raised meanwhile means the state does not have the shape
    this run writes (a hand-edited or foreign file), and becomes one :class:`CorruptCheckpointError` naming it
    (review-reliability 10.5: 33-47-line tracebacks)."""
    try:
        yield
    except (KeyError, TypeError, AttributeError, IndexError) as err:
        what = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        raise CorruptCheckpointError(f"{path} does not hold the state this run writes ({what[:200]}); restore it, or "
                                     "move its checkpoint aside to resume from the one before it") from err  # fmt: skip


def rng_state() -> dict[str, Any]:
    """Python's, NumPy's global and torch's (CPU, and each CUDA device) RNG states, as tensors and plain values.

    What :func:`read_state` can read back (NumPy's key array becomes a tensor), so a checkpoint
    that restores a run's randomness needs no unpickling."""
    import random

    import numpy as np
    import torch

    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": [version, list(internal), gauss],
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(cached)],
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` captured."""
    import random

    import numpy as np
    import torch

    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def checkpoint_step(folder: Path) -> int:
    """The optimiser step a complete checkpoint was written at (from its marker)."""
    return _marker(Path(folder)).step


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


@dataclass(frozen=True)
class Marker:
    """A checkpoint's completion marker (:data:`COMPLETE_MARKER`), as :func:`mark_complete` writes it."""

    step: int
    """The optimiser step the checkpoint was written at (its folder's ``checkpoint-N``)."""
    files: tuple[str, ...]
    """Every file of the checkpoint, relative to its folder."""
    sizes: Mapping[str, int] = field(default_factory=dict)
    """Each file's size in bytes when the checkpoint was complete."""


def _marker(folder: Path) -> Marker:
    """A checkpoint's completion marker, read with a size cap and strictly: a malformed one (not an object, a field
    of another type, a file named outside the folder) is a :class:`~zoo.records.RecordError` naming it."""
    from zoo.model_files import read_json
    from zoo.records import RecordError, typed

    file = folder / COMPLETE_MARKER
    marker = typed(Marker, read_json(file, limit=16 << 20, what="a checkpoint marker"), str(file))
    outside = [name for name in [*marker.files, *marker.sizes] if Path(name).is_absolute() or ".." in Path(name).parts]
    if outside:
        raise RecordError(f"{file}: names {outside[0]!r}, outside its checkpoint folder; a marker lists the "
                          "checkpoint's own files")  # fmt: skip
    return marker


def is_complete(folder: Path) -> bool:
    """True when ``folder`` holds a marker and every file it lists.

    The marker is renamed into place whole (:func:`mark_complete`), so one that is there but malformed was not
    left by a killed write: it is an error naming it (:func:`_marker`), not a checkpoint to delete."""
    if not (folder / COMPLETE_MARKER).is_file():
        return False
    return all((folder / name).is_file() for name in _marker(folder).files)


def latest_checkpoint(output_dir: str | Path, *, remove_incomplete: bool = False) -> Path | None:
    """The newest *complete* ``checkpoint-N`` in ``output_dir``, or ``None``.

    Incomplete ones (a killed write) are skipped with a warning, and deleted when
    ``remove_incomplete`` so that a resumed run does not write into a half-written folder (by the
    main process only: every rank of a multi-process run calls this, one deletes).
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
            if remove_incomplete and is_main_process():
                shutil.rmtree(path, ignore_errors=True)
    if best is not None:
        check_sizes(best)
    return best


def check_sizes(folder: Path) -> None:
    """Raise :class:`CorruptCheckpointError` when a file of a complete checkpoint changed size since it was written,
    or its marker says another step than its folder's name (review-reliability 10.4: a marker whose step lied gave
    ``final/`` step-6 weights under an 8-step ``metrics.csv``)."""
    marker = _marker(folder)
    named = _CHECKPOINT_RE.match(folder.name)
    if named is not None and marker.step != int(named.group(1)):
        raise CorruptCheckpointError(f"{folder / COMPLETE_MARKER} says step {marker.step!r} for a folder named "
                                     f"{folder.name}: it was not written there by this run. Move {folder} aside to "
                                     "resume from the checkpoint before it")  # fmt: skip
    for name, size in marker.sizes.items():
        actual = (folder / name).stat().st_size
        if actual != size:
            raise CorruptCheckpointError(
                f"{folder / name} is {actual} bytes but was written as {size} bytes (truncated or modified since). "
                f"Restore it, or move {folder} aside to resume from the checkpoint before it"
            )


def prune_checkpoints(output_dir: str | Path, keep: int | None) -> None:
    """Delete the oldest complete checkpoints so that at most ``keep`` remain (``None`` keeps all; main process only)."""
    if keep is None or not is_main_process():
        return
    complete = sorted((checkpoint_step(p), p) for p in Path(output_dir).glob("checkpoint-*") if is_complete(p))
    for _, old in complete[: max(0, len(complete) - keep)]:
        shutil.rmtree(old, ignore_errors=True)
