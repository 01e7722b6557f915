"""What a page says instead of a traceback: why a model cannot run, and why an input was refused.

Two kinds of failure reach a user of the demo. A model that cannot be loaded here (gated, not
released, offline without cached weights, needing remote code) gets a whole page naming the next
step (:func:`unavailable_reason`; the messages are :mod:`zoo.hub`'s own). An input the model cannot
take (a broken or oversized image, an empty prompt, malformed JSON) is answered in the page's status
line by :func:`guarded`, and the server goes on serving.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zoo.hub import ModelNotAvailableError
from zoo.remote_code import RemoteCodeError

logger = logging.getLogger(__name__)

#: Load failures that become a page saying what to do (anything else is a bug or a bad name: the CLI reports it).
UNAVAILABLE: tuple[type[Exception], ...] = (ModelNotAvailableError, RemoteCodeError)


class InputError(ValueError):
    """An input the page refuses (an empty prompt, too few class names); the message says what to enter."""


@dataclass(frozen=True)
class Noted:
    """A handler's outputs and a line for the status: the answer stands, and the user must know something about it
    (a box the model placed outside the image)."""

    note: str
    outputs: tuple[Any, ...]


def unavailable_reason(name: str, err: Exception) -> str:
    """Markdown for the page of a model that cannot run: the reason verbatim (its commands intact), then the restart."""
    return f"## {name} cannot run here\n\n```text\n{err}\n```\n\nRestart `zoo demo {name}` once that is done."


def status_text(err: Exception) -> str:
    """The status line for a refused input: the error's own sentence, never a traceback."""
    return f"**Could not run:** {err}"


def guarded(handler: Callable[..., tuple[Any, ...]], outputs: int) -> Callable[..., tuple[Any, ...]]:
    """``handler`` whose result is ``("", *result)`` (``(note, *outputs)`` for a :class:`Noted` result) and whose
    failure is ``(status, None * outputs)``.

    A user's bad input must not take the page down: the zoo's errors are sentences (``ValueError``,
    ``OSError``, ``RuntimeError`` and their subclasses, :class:`zoo.images.ImageError` among them) and
    are shown as they are. Anything else is logged with its traceback on the server and shown by type
    and message (zoo: the page is the boundary where an unexpected error is reported, not raised).
    """

    @functools.wraps(handler)
    def run(*args: Any) -> tuple[Any, ...]:
        try:
            result = handler(*args)
            if isinstance(result, Noted):
                return (f"**Note:** {result.note}", *result.outputs)
            return ("", *result)
        except (ValueError, OSError, RuntimeError, KeyError, TypeError) as err:
            logger.info("refused input: %s", err)
            return (status_text(err), *([None] * outputs))
        except Exception as err:  # the page's boundary, see the docstring
            logger.exception("demo handler failed")
            return (status_text(RuntimeError(f"{type(err).__name__}: {err}")), *([None] * outputs))

    return run
