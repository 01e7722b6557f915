"""Hand-written pages quote what the project holds: training records and the registry's pinned revisions.

A re-release rewrites ``checkpoints/<entry>/training.json`` and the card, but the page's summary
is written by hand; these checks fail when the two disagree, so a release cannot leave the README
quoting the numbers of the one before (it happened: two releases of driving and of the GUI agent).
Likewise the README and docs once promised that every Hub model loads at a pinned revision when one
entry in 59 was pinned: the pinning checks hold each such sentence to the registry.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.ladder import format_difference
from zoo.records import read_record

ROOT = Path(__file__).resolve().parents[2]


def record(entry: str) -> dict:
    return read_record(ROOT / "checkpoints" / entry / "training.json").to_dict()["measurements"]


def quotes(entry: str) -> list[str]:
    """What the page must say of ``entry``: numbers as the record holds them, at the page's precision."""
    r = record(entry)
    if entry == "driving-vla-tiny":
        seeds = r["across_seeds"]
        return [f"PDMS {r['sft']['final_pdms']:.3f} after", f"GRPO − SFT start {format_difference(seeds['grpo_minus_sft'])}",
                f"control − start {format_difference(seeds['control_minus_sft'])}",
                f"GRPO − control {format_difference(seeds['grpo_minus_control'])}"]  # fmt: skip
    if entry == "gui-agent-tiny":
        s = r["summary"]
        rl = " and ".join(f"{v['step_success']:.3f}" for v in s["ui_s1_rl"].values())
        control = " and ".join(f"{v['step_success']:.3f}" for v in s["sft_continue_equal_time"].values())
        versus = ", ".join(format_difference(v) for v in s["step_success_paired"]["rl_minus_control"].values())
        return [f"{s['sft_start']['step_success']:.3f} after SFT → {rl} after", f"continued SFT {control}",
                f"RL − control {versus}"]  # fmt: skip
    if entry == "gui-grounding-tiny":
        return [f"SFT {r['summary']['hit_after_sft']:.3f} → GRPO"]
    if entry == "svg-scenes-tiny":
        return [f"drawn-pixel IoU {r['sft']['final']['reward']:.3f} after"]
    raise KeyError(entry)


@pytest.mark.parametrize("entry", ["driving-vla-tiny", "gui-agent-tiny", "gui-grounding-tiny", "svg-scenes-tiny"])
def test_the_benchmarks_page_quotes_the_released_record(entry):
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8").replace("−", "-")  # typed minus, record hyphen
    missing = [q for q in quotes(entry) if q.replace("−", "-") not in page]
    assert not missing, f"docs/benchmarks.md does not quote checkpoints/{entry}/training.json: {missing}"


#: Pages that say how a Hub model is downloaded, and whether each must quote the count of pinned Hub entries.
PINNING_PAGES = {"README.md": True, "docs/getting-started.md": True, "docs/guides/hub.md": True,
                 "docs/concepts.md": False}  # fmt: skip
#: A promise of a pinned download ...
PROMISE = re.compile(r"pinned revision|revision (?:its|the) entry pins|(?:is|are) pinned to")
#: ... and the qualifier that must follow it closely: only where the registry holds a pin.
QUALIFIER = re.compile(r"where (?:it|the entry) pins one|when it has one|or why it is not")


def pinned_and_hub_entries() -> tuple[int, int]:
    """How many Hub entries of the registry pin a revision, and how many Hub entries there are."""
    from zoo.registry import info, list_models

    hub = [info(name) for name in list_models() if info(name).repo_id]
    return sum(1 for e in hub if e.revision), len(hub)


def page_text(page: str) -> str:
    """The page with its line breaks folded, so a phrase wrapped over two lines is one phrase."""
    return " ".join((ROOT / page).read_text(encoding="utf-8").split())


@pytest.mark.parametrize("page", sorted(PINNING_PAGES))
def test_pages_promise_a_pinned_revision_only_where_the_registry_holds_one(page):
    """Every promise of a pinned download is qualified ("where it pins one"), and every count of pinned Hub entries
    a page quotes is the registry's, so no page promises more pins than the registry holds."""
    text = page_text(page)
    for promise in PROMISE.finditer(text):
        window = text[promise.start(): promise.end() + 80]
        assert QUALIFIER.search(window), f"{page}: unqualified pinning claim: {window!r}"
    counts = [(int(a), int(b)) for a, b in re.findall(r"(\d+) of (\d+) Hub entries", text)]
    assert counts or not PINNING_PAGES[page], f"{page} states how many Hub entries pin a revision"
    assert all(count == pinned_and_hub_entries() for count in counts), f"{page} quotes {counts}"


def test_the_hub_guide_names_as_pinned_only_pinned_entries():
    """The Hub guide's section on pins names entries as examples of where commits came from: each is pinned."""
    from zoo.registry import info, list_models

    text = (ROOT / "docs/guides/hub.md").read_text(encoding="utf-8")
    section = text.split("## Pinned revisions", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([a-z0-9.-]+)`", section)) & set(list_models())
    assert named, "the section names the entries it gives as examples"
    assert all(info(name).revision for name in named), sorted(n for n in named if not info(n).revision)
