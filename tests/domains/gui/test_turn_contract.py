"""UI-S1's turns come from the entry's contract: the loaders yield raw goals, ``with_turn_contract`` writes the turns.

The expected strings are built from the authors' constants as the loaders wrote them before the contract
(X-PLUG/MobileAgent@11cea575:UI-S1/x/data/agent/json.py:133-189, ``JsonFormat.gen_next_round``: the MOBILE_USE
system prompt and ``User Instruction: {goal}`` with the output format first, the output format alone later,
the screenshot closing every user turn).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import zoo
from domains.gui.data import load_synthetic_episodes, load_ui_s1_jsonl
from domains.gui.episodes import episode_samples, write_android_control_jsonl
from domains.gui.prompts import UI_S1_OUTPUT_FORMAT, UI_S1_SYSTEM, UI_S1_USER
from zoo.engines.vlm.contract import NEXT_TURN, STEP_INSTRUCTION, with_turn_contract
from zoo.engines.vlm.semi_online_rollout import expert_turns, group_episodes


def _old_ui_s1_turn(sample, low: bool = False) -> list[dict]:
    """The prompt the removed ``with_ui_s1_turns`` wrote for ``sample`` (the loaders' ``ui_s1_prompt=True``)."""
    goal = sample.meta["goal"]
    first = sample.meta["step"] == 0
    text = UI_S1_USER.replace("{question}", goal) if first else "Output Format: " + UI_S1_OUTPUT_FORMAT
    if low:
        text += f"\nStep Instruction: {sample.meta.get('step_instruction') or ''}"
    return ([{"role": "system", "content": UI_S1_SYSTEM}] if first else []) + [{"role": "user", "content": text}]


def test_ui_s1_7b_writes_the_turns_the_loaders_wrote(tmp_path):
    spec = zoo.info("ui-s1-7b").spec
    assert set(spec.templates) == {NEXT_TURN, STEP_INSTRUCTION} and not spec.image_first
    samples = load_synthetic_episodes(n=3, seed=0, min_steps=3, max_steps=3)
    assert all(s.prompt == s.meta["goal"] for s in samples)  # raw: the goal as the question
    assert [with_turn_contract(s, spec).prompt for s in samples] == [_old_ui_s1_turn(s) for s in samples]
    path = write_android_control_jsonl(episode_samples(n=2, seed=4), tmp_path)
    low = load_ui_s1_jsonl(path, image_root=tmp_path / "images", instruction_level="low")
    assert [with_turn_contract(s, spec).prompt for s in low] == [_old_ui_s1_turn(s, low=True) for s in low]
    assert with_turn_contract(low[1], spec).prompt[-1]["content"].endswith("\nStep Instruction: " +
                                                                           low[1].meta["step_instruction"])  # fmt: skip


def test_gui_agent_tiny_asks_the_goal_in_every_turn(tmp_path):
    """The CPU-scale agent was trained on the goal alone in each turn (no system prompt, no low-level
    instruction: it has no step-instruction template, so AndroidControl-Low asks it the goal, as before)."""
    spec = zoo.info("gui-agent-tiny").spec
    samples = load_synthetic_episodes(n=2, seed=1)
    assert [with_turn_contract(s, spec).prompt for s in samples] == [[{"role": "user", "content": s.meta["goal"]}]
                                                                     for s in samples]  # fmt: skip
    path = write_android_control_jsonl(episode_samples(n=1, seed=4), tmp_path)
    low = load_ui_s1_jsonl(path, image_root=tmp_path / "images", instruction_level="low")
    assert with_turn_contract(low[1], spec).prompt == [{"role": "user", "content": low[1].meta["goal"]}]


def test_the_dialogue_places_the_screenshot_where_the_entry_does():
    spec = zoo.info("ui-s1-7b").spec
    episode = group_episodes([with_turn_contract(s, spec) for s in load_synthetic_episodes(n=1, seed=0)])[0]
    last = expert_turns(episode, lambda s: "a")[1].messages[-1]["content"]
    assert [p["type"] for p in last] == ["text", "image"]  # UI-S1: the screenshot closes the turn
    first = expert_turns(episode, lambda s: "a", image_first=True)[1].messages[-1]["content"]
    assert [p["type"] for p in first] == ["image", "text"]


def test_an_unknown_template_or_instruction_level_is_refused(tmp_path):
    spec = zoo.info("ui-s1-7b").spec
    sample = load_synthetic_episodes(n=1, seed=0)[0]
    with pytest.raises(ValueError, match="no user template 'judge'"):
        with_turn_contract(replace(sample, meta={**sample.meta, "template": "judge"}), spec)
    path = write_android_control_jsonl(episode_samples(n=1, seed=4), tmp_path)
    with pytest.raises(ValueError, match="instruction_level must be 'high' or 'low'"):
        load_ui_s1_jsonl(path, image_root=tmp_path / "images", instruction_level="medium")
    assert with_turn_contract(sample, None) is sample  # no entry: the goal as the dataset wrote it
