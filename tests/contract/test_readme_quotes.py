"""The benchmarks page's paragraph on each tiny checkpoint (``docs/benchmarks.md``) quotes its training record.

A re-release rewrites ``checkpoints/<entry>/training.json`` and the card, but the page's summary
is written by hand; these checks fail when the two disagree, so a release cannot leave the README
quoting the numbers of the one before (it happened: two releases of driving and of the GUI agent).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.ladder import format_difference
from zoo.records import read_record

ROOT = Path(__file__).resolve().parents[2]


def record(entry: str) -> dict:
    return read_record(ROOT / "checkpoints" / entry / "training.json").measurements


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


def test_the_readme_says_how_many_hub_entries_pin_a_revision():
    """README promises a pinned revision only where the registry holds one, with the count the registry gives."""
    import re

    from zoo.registry import info, list_models

    hub = [info(name) for name in list_models() if info(name).repo_id]
    text = " ".join((ROOT / "README.md").read_text().split())
    said = re.search(r"(\d+) of (\d+) Hub entries today", text)
    assert said, "README states how many Hub entries pin a revision"
    assert (int(said[1]), int(said[2])) == (sum(1 for e in hub if e.revision), len(hub))
