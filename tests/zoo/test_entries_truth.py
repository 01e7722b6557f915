"""Every catalog entry says where its licence came from and which Hub commit it is pinned to, or why not."""

from __future__ import annotations

import re

import pytest

import zoo

NAMES = zoo.list_models()


@pytest.mark.parametrize("name", NAMES)
def test_licence_has_a_recorded_source(name):
    entry = zoo.info(name)
    assert entry.license and entry.license_source, f"{name}: record where the licence was read"
    if entry.code_license is not None:
        assert entry.code_license != entry.license, f"{name}: code_license is only for a licence that differs"


@pytest.mark.parametrize("name", NAMES)
def test_public_weights_are_pinned_or_say_why_not(name):
    entry = zoo.info(name)
    if entry.revision is not None:
        assert re.fullmatch(r"[0-9a-f]{40}", entry.revision), f"{name}: pin a full commit hash, not a branch"
    elif entry.repo_id is not None or not entry.released:
        assert entry.revision_note, f"{name}: no pinned revision and no reason given"


@pytest.mark.parametrize("name", [n for n in NAMES if zoo.info(n).repo_id])
def test_a_hub_entry_says_where_its_pin_was_read_or_that_it_is_not_pinned_and_why(name):
    """The note of a Hub entry says where its commit was read when pinned; otherwise it opens with "not pinned"
    and gives the reason, so a card or `zoo info` never leaves an unpinned download unexplained."""
    entry = zoo.info(name)
    note = entry.revision_note
    if entry.revision is not None:
        assert note.startswith("pinned") and entry.revision[:7] in note, f"{name}: say which commit and where read"
    else:
        assert re.match(r"not pinned: \w.{20,}", note), f"{name}: open the note with 'not pinned: <why>'"


def test_licences_as_the_authors_pages_state_them():
    """Weights licences as read on the Hub cards (sources in each entry's license_source)."""
    expected = {"ui-s1-7b": ("apache-2.0", "mit"), "patho-r1-3b": ("cc-by-nc-nd-4.0", None),
                "patho-r1-7b": ("cc-by-nc-nd-4.0", None), "dolphin-r1": ("unknown", None)}  # fmt: skip
    for name, (weights, code) in expected.items():
        entry = zoo.info(name)
        assert (entry.license, entry.code_license) == (weights, code), name


def test_dolphin_cites_its_paper_and_no_unrelated_repository():
    for name in ("dolphin-v1", "dolphin-r1"):
        entry = zoo.info(name)
        assert entry.paper == "2509.25748" and "U4R" not in entry.notes
    assert zoo.info("dolphin-v1").rl_methods == ()  # the instruction-aligned model, not RL-tuned
