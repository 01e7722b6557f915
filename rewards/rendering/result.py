"""What a render returns: an image of the requested size, or a status and a reason.

Who is to blame decides the reward (the rule beside the reward protocol, :mod:`rewards.base`):
a failure the job caused itself scores as a failure; only a failure from outside the job is
masked. A policy must not be able to choose to be masked instead of scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from PIL import Image

Status = Literal["ok", "invalid", "timeout", "crashed", "infra"]

#: Statuses that say "the renderer could not judge this sample": the worker was lost, the pool
#: could not start, or the job was killed from outside (the host's OOM killer). Nothing the
#: job's own code or input can trigger lands here.
INFRA_STATUSES = frozenset({"infra"})
#: Statuses the job caused: its source was refused or raised, it ran past its wall-clock or
#: CPU limit (including input that makes the renderer spin), or its process exited, crashed or
#: closed its answer pipe without answering.
MODEL_FAILURE_STATUSES = frozenset({"invalid", "timeout", "crashed"})


@dataclass(frozen=True)
class RenderResult:
    """One render.

    Attributes:
        image: an RGB ``PIL.Image`` of exactly the requested ``size``, or ``None``.
        error: why there is no image (``None`` when ``status == "ok"``).
        status: ``"ok"``; ``"invalid"`` when the source itself is at fault (empty, not UTF-8,
            too large, a Python exception, an XML entity, an external reference, no figure);
            ``"timeout"`` when the job ran past its wall-clock or CPU limit; ``"crashed"`` when
            the job process died without answering (a fault signal, ``os._exit``, a closed
            answer pipe); ``"infra"`` when the worker died or could not be reached, the pool
            could not start one, or the job was killed by something other than its limits.
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
        """True only when the failure lies outside the job: map it to ``RewardResult(score=None)``.

        Timeouts and crashes are *not* infrastructure: ``os._exit(0)``, a segfault, a sleep or
        an SVG that makes cairo spin are the model's doing, so they score like any bad output.
        """
        return self.status in INFRA_STATUSES

    @property
    def model_failure(self) -> bool:
        """True when the job itself failed (score it as a failure, never mask it)."""
        return self.status in MODEL_FAILURE_STATUSES
