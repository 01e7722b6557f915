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

:func:`describe` turns all of it into typed :class:`AuthorsRunRow` rows, which ``zoo info`` renders as lines and the
card and the docs page as their own list and table; the batch enters as a :class:`BatchComparison` (the engine's count
beside the authors', :func:`zoo.engines.batches.compare`), the one comparison ``zoo train --plan`` prints too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

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

    @property
    def counts(self) -> tuple[int, int, int]:
        """``(prompts, completions, optimizer_steps)``: what two batches are compared on (not their wording, nor an
        :class:`AuthorsBatch`'s source)."""
        return self.prompts, self.completions, self.optimizer_steps

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


@dataclass(frozen=True, kw_only=True)
class BatchComparison:
    """A recipe's round on the processes its launch line starts, beside the authors' round where the recipe records it."""

    processes: int
    """Processes the engine's batch is counted over (the launch line's, or ``zoo train --nproc``)."""
    ours: StepBatch | None
    """The engine's batch of one round; ``None`` where it counts none (``refusal`` says why)."""
    refusal: str = ""
    """The engine's reason for having no batch (a method without fixed rounds, groups that do not divide)."""
    theirs: AuthorsBatch | None = None
    """The authors' batch from ``authors_run.batch``; ``None`` for a recipe that records none."""

    @property
    def same(self) -> bool:
        """Both batches are known and count the same prompts, completions and optimiser steps."""
        return self.ours is not None and self.theirs is not None and self.ours.counts == self.theirs.counts


#: What an :class:`AuthorsRunRow` says: the same as the authors', a difference, the release, another snapshot.
RowKind = Literal["cited", "differs", "release", "snapshot"]


@dataclass(frozen=True, kw_only=True)
class AuthorsRunRow:
    """One thing said about the authors' run beyond the recipe's fields, typed so that each reader lays it out its own
    way (``zoo info`` a line, the card a bullet, the docs a table row) without parsing text."""

    kind: RowKind
    """``cited`` (the same as the authors'), ``differs``, ``release`` (the code of the release) or ``snapshot`` (a
    cited commit that is not the release's)."""
    label: str
    """What the row is about (``batch``, ``(no field)``); empty where ``text`` says it."""
    text: str
    """The row's statement: the batches, the difference, the commit."""
    source: str = ""
    """Where the authors' side is read (the batch's provenance, the release's announcement); empty when in ``text``."""

    @property
    def differs(self) -> bool:
        """A row the card lists where the recipe differs: a difference, or a cited commit that is not the release's."""
        return self.kind in ("differs", "snapshot")

    def sentence(self) -> str:
        """``label: text (source)``, each part where present."""
        label = f"{self.label}: " if self.label else ""
        return f"{label}{self.text} ({self.source})" if self.source else f"{label}{self.text}"

    def render(self) -> str:
        """The row as ``zoo info`` prints it: its kind in a column, then :meth:`sentence`."""
        return f"  {self.kind:<8} {self.sentence()}"


def describe(run: AuthorsRun | None, batch: BatchComparison | None, sources: Iterable[str]) -> list[AuthorsRunRow]:
    """The rows for ``zoo info``, the card and the docs beside the provenance rows: the batch per round (``batch``,
    the engine's count against the authors'), the differences that are no field, the code of the release and cited
    commits (``sources``, the provenance's) that are not it."""
    if run is None:
        return []
    rows = []
    if batch is not None and batch.theirs is not None:
        theirs = batch.theirs.per_step()
        if batch.same:
            rows.append(AuthorsRunRow(kind="cited", label="batch", text=f"{theirs}, as the authors'",
                                      source=batch.theirs.source))  # fmt: skip
        else:
            here = batch.ours.per_step() if batch.ours is not None else batch.refusal
            rows.append(AuthorsRunRow(kind="differs", label="batch", text=f"{here} here; the authors' {theirs}",
                                      source=batch.theirs.source))  # fmt: skip
    rows += [AuthorsRunRow(kind="differs", label="(no field)", text=line.split(":", 1)[1].strip())
             for line in run.differences]  # fmt: skip
    if run.code:
        rows.append(AuthorsRunRow(kind="release", label="", text=run.code, source=run.released))
        rows += [AuthorsRunRow(kind="snapshot", label="", text=line) for line in other_snapshots(run, sources)]
    return rows
