"""What a render returns: an image of the requested size, or a status and a reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from PIL import Image

Status = Literal["ok", "invalid", "timeout", "crashed", "infra"]

#: Statuses that say "the renderer could not judge this sample", not "the sample is bad".
INFRA_STATUSES = frozenset({"timeout", "crashed", "infra"})


@dataclass(frozen=True)
class RenderResult:
    """One render.

    Attributes:
        image: an RGB ``PIL.Image`` of exactly the requested ``size``, or ``None``.
        error: why there is no image (``None`` when ``status == "ok"``).
        status: ``"ok"``; ``"invalid"`` when the source itself is at fault (empty, not UTF-8,
            too large, a Python exception, an XML entity, an external reference, no figure);
            ``"timeout"`` when the job ran past its wall-clock limit; ``"crashed"`` when the
            job process died without answering (signal, ``os._exit``, memory kill);
            ``"infra"`` when the worker itself died or could not be reached.
        elapsed: seconds from submission to answer, as the pool measured it.
    """

    image: Image.Image | None
    error: str | None = None
    status: Status = "ok"
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return self.image is not None

    @property
    def infra_failure(self) -> bool:
        """True for timeouts, crashes and dead workers.

        The project contract (ARCHITECTURE.md §5) maps these to ``RewardResult(score=None)``:
        the sample is masked rather than scored 0, because the same status also covers a
        worker killed by the machine (memory pressure, a restart) where 0 would be a lie.
        A reward that prefers to punish runaway code can test ``status == "timeout"`` itself.
        """
        return self.status in INFRA_STATUSES
