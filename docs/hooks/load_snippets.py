"""The "Load" snippet of a model page: the entry's card-kind usage, as it runs from the root of a checkout.

The snippet has one generator, the kind's ``usage`` (:mod:`zoo.card_kinds`), for this page and the model card alike;
only where the reader has the model and its example inputs from differs (:class:`zoo.card_kinds.SnippetOrigin`):
here a checkout, whose ``examples/`` ships the file the entry's demo page opens with. ``tests/docs/test_site.py`` runs
the snippet of every shipped checkpoint and of one Hub entry per kind (on a tiny stand-in) as the built page shows it.
"""

from __future__ import annotations

from typing import Any


def load_snippet(entry: Any) -> str:
    """The snippet for a released ``entry``, run from the repository root (an entry without weights shows how to read
    what is published instead: ``zoo.load`` would raise)."""
    from zoo.card_kinds import CHECKOUT, card_kind

    return card_kind(entry).usage(entry, CHECKOUT)
