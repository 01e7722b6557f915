"""What a reproducing recipe says about the authors' run beyond its fields: the batch one optimiser step of theirs
saw, the code that trained the released weights, and the differences no recipe field can carry.

A recipe with ``reproduces: <entry>`` cites each field it sets (:mod:`zoo.provenance`). Three things about the
authors' run are not fields of any engine, and are recorded here (the recipe key ``authors_run``):

* ``batch``: prompts and completions per *round* (one sampling-and-training cycle; one optimiser step for TRL's
  GRPO) and the optimiser steps a round takes, over all processes, as the authors' launch ran it. The engine
  computes the same three numbers for the recipe under the launch line ``zoo train --plan`` prints
  (:meth:`zoo.engines.Engine.step_batch`), and ``tests/contract/test_authors_run.py`` holds them equal: the
  per-process batch times processes times accumulation is the authors', whatever the process count the recipe is
  sized for.
* ``code`` and ``released``: the authors' commit current when the reproduced weights were published, with its
  source (the model card's or README's dated announcement). ``zoo info`` says when a cited snapshot is another
  commit (:func:`other_snapshots`): code that changed after the release may not be what trained the weights.
* ``differences``: ``zoo: <why>`` lines for what differs and is not a field (a sub-model's precision, a detector
  or judge checkpoint, unreleased data); ``zoo info``, the card and the docs print them with the field differences.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_COMMIT = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)@(?P<commit>[0-9a-f]{7,40})$")
_CITED_COMMIT = re.compile(r"(?P<repo>[\w.-]+/[\w.-]+)@(?P<commit>[0-9a-f]{7,40})")


@dataclass(frozen=True, kw_only=True)
class StepBatch:
    """The batch of one round, over every process: what an engine trains and what the authors' run trained."""

    prompts: int
    """Prompts (or episodes, for a multi-turn agent) sampled per round over all processes."""
    completions: int
    """Completions (images, trajectories) sampled per round over all processes: ``prompts`` times the group size."""
    optimizer_steps: int = 1
    """Optimiser steps one round's samples are trained in (1 for TRL's GRPO with one iteration)."""

    def __post_init__(self) -> None:
        if min(self.prompts, self.completions, self.optimizer_steps) < 1:
            raise ValueError(f"authors_run.batch: prompts, completions and optimizer_steps must be >= 1, got {self}")

    def per_step(self) -> str:
        """``P prompts × G completions per round, S optimiser steps`` for messages."""
        group = self.completions // self.prompts if self.completions % self.prompts == 0 else None
        shape = f"{self.prompts} prompts × {group}" if group else f"{self.prompts} prompts, {self.completions} completions"
        return f"{shape} a round, {self.optimizer_steps} optimiser step{'s' * (self.optimizer_steps != 1)}"


@dataclass(frozen=True, kw_only=True)
class AuthorsBatch(StepBatch):
    """The authors' :class:`StepBatch`, with where it is computed from."""

    source: str
    """Where the numbers come from (``owner/repo@commit:path:line`` and the arithmetic), as a provenance row."""


@dataclass(frozen=True, kw_only=True)
class AuthorsRun:
    """The recipe key ``authors_run`` (module docstring). Errors are ``ValueError``: the recipe reader names the key."""

    batch: AuthorsBatch | None = None
    """Prompts, completions and optimiser steps per round in the authors' run."""
    code: str = ""
    """``owner/repo@commit``: the authors' code when the reproduced weights were published."""
    released: str = ""
    """Where ``code`` comes from: the dated announcement of the weights (README line, model card commit)."""
    differences: tuple[str, ...] = ()
    """``zoo: <why>`` lines: what differs from the authors' run and is no recipe field."""

    def __post_init__(self) -> None:
        if self.code and not _COMMIT.match(self.code):
            raise ValueError(f"authors_run.code={self.code!r}: write owner/repo@<commit>")
        if bool(self.code) != bool(self.released):
            raise ValueError("authors_run.code and authors_run.released go together: the commit and the dated "
                              "announcement it is read from")  # fmt: skip
        for line in self.differences:
            if not re.match(r"^zoo:\s*\S", line):
                raise ValueError(f"authors_run.differences: {line!r} must read 'zoo: <why the zoo differs>'")


def other_snapshots(run: AuthorsRun, sources: Iterable[str]) -> list[str]:
    """Commits of the release's repository that the provenance cites and that are not the release's, for
    ``zoo info``: a value read at another snapshot may not be what trained the released weights."""
    found = _COMMIT.match(run.code)
    if not found:
        return []
    repo, release = found["repo"], found["commit"]
    cited = {m["commit"] for s in sources for m in _CITED_COMMIT.finditer(str(s)) if m["repo"] == repo}
    return [f"cites {repo}@{commit}, not the code of the release ({run.code}): read those rows against it"
            for commit in sorted(cited) if not (commit.startswith(release) or release.startswith(commit))]


def describe(run: AuthorsRun | None, ours: StepBatch | str | None, sources: Iterable[str]) -> list[str]:
    """Lines for ``zoo info`` and cards beside the provenance rows: the batch per round (the authors' and this
    recipe's under its launch line; ``ours`` is the engine's :class:`StepBatch` or why it has none), the code of the
    release and cited commits that are not it, and the differences that are no field."""
    if run is None:
        return []
    lines = []
    if run.batch is not None:
        theirs = run.batch.per_step()
        if isinstance(ours, StepBatch) and _same(ours, run.batch):
            lines.append(f"  cited    batch: {theirs}, as the authors' ({run.batch.source})")
        else:
            here = ours.per_step() if isinstance(ours, StepBatch) else (ours or "not computed")
            lines.append(f"  differs  batch: {here} here; the authors' {theirs} ({run.batch.source})")
    lines += [f"  differs  (no field): {line.split(':', 1)[1].strip()}" for line in run.differences]
    if run.code:
        lines.append(f"  release  {run.code} ({run.released})")
        lines += [f"  snapshot {line}" for line in other_snapshots(run, sources)]
    return lines


def _same(ours: StepBatch, theirs: StepBatch) -> bool:
    return (ours.prompts, ours.completions, ours.optimizer_steps) == (
        theirs.prompts, theirs.completions, theirs.optimizer_steps)  # fmt: skip

