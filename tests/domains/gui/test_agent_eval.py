"""Step-level agent evaluation: metric arithmetic on constructed rows, and a run on a tiny model that writes its files."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import pytest

import zoo
from domains.gui.agent_eval import agent_rows, load_agent_data, summarise_agent
from domains.gui.episodes import episode_samples, write_android_control_jsonl


def _row(episode, step, type_match, exact, kind="click"):
    return {"episode_id": episode, "step": step, "type_match": type_match, "exact_match": exact, "action_type": kind,
            "truth": {"action": kind}}  # fmt: skip


def _click(point, truth, episode=0):
    """A click step's row: the answer clicks ``point`` where the expert clicked ``truth`` (a 112-px screen)."""
    text = f'<think>t</think><action>{{"action": "click", "coordinate": [{point[0]}, {point[1]}]}}</action>'
    return {**_row(episode, 0, True, False), "truth": {"action": "click", "coordinate": list(truth)}, "text": text,
            "image_size": [112, 112], "resized_size": [112, 112]}  # fmt: skip


def test_zoo_summary_counts_steps_and_episodes():
    rows = [_row(0, 0, True, True), _row(0, 1, True, False), _row(0, 2, True, True, "terminate"),
            _row(1, 0, True, True), _row(1, 1, True, True, "type"),
            _row(2, 0, False, False, "type")]  # fmt: skip
    out = summarise_agent(rows)
    assert out["steps"] == {"type_match": 5 / 6, "exact_match": 4 / 6, "n": 6}
    assert out["episodes"] == {"n": 3, "episode_success": 1 / 3}  # the authors' progress is SOP's (test_sop.py)
    assert out["by_action_type"]["type"] == {"type_match": 0.5, "exact_match": 0.5, "n": 2}
    with pytest.raises(ValueError, match="no evaluated steps"):
        summarise_agent([])


def test_click_localisation_tells_a_near_miss_from_a_guess():
    truths = [(20, 30), (90, 80), (50, 100), (100, 15), (10, 60)]
    near = [_click((x + 3, y - 4), (x, y), episode=i) for i, (x, y) in enumerate(truths)]
    located = summarise_agent(near)["click_localisation"]
    assert located["n"] == 5 and located["median_distance"] == 5.0
    assert located["correlation"]["x"] > 0.99 and located["correlation"]["y"] > 0.99
    assert located["median_distance_to_next_target"] > 60  # against another screen's target it is far off
    guess = [_click((56, 56), t, episode=i) for i, t in enumerate(truths)]  # one point whatever the screen shows
    guessed = summarise_agent(guess)["click_localisation"]
    assert guessed["correlation"] == {"x": None, "y": None}
    assert guessed["median_distance"] == pytest.approx(guessed["median_distance_to_next_target"])
    unparsed = [{**row, "text": "no action"} for row in near]
    assert "click_localisation" not in summarise_agent(near[:2]) and "click_localisation" not in summarise_agent(unparsed)


def test_android_control_file_loads_as_episodes_with_low_level_turns(tmp_path):
    path = write_android_control_jsonl(episode_samples(n=3, seed=9), tmp_path)
    high = load_agent_data("android-control", str(path), limit=2)
    low = load_agent_data("android-control-low", str(path), limit=None)
    assert len(high) == 2 and len(low) == 3
    assert all(s.meta["instruction_level"] == "low" for s in low[0]) and "instruction_level" not in high[0][0].meta
    assert low[0][0].prompt == high[0][0].prompt == low[0][0].meta["goal"]  # raw: the entry writes the turn
    with pytest.raises(ValueError, match="needs --path"):
        load_agent_data("android-control", None, None)
    with pytest.raises(ValueError, match="unknown GUI agent benchmark"):
        load_agent_data("android-world", "x", None)


def test_zoo_eval_writes_metrics_predictions_and_strip(tmp_path):
    from domains.gui.evaluate import run
    from zoo.tiny import build_tiny_vlm

    model, processor = build_tiny_vlm("qwen2_5_vl", hidden=32, layers=1, vision_hidden=32, seed=0)
    spec = replace(zoo.info("gui-agent-tiny").spec, max_new_tokens=8)  # no UI-S1 system prompt: goal-only turns
    pipe = SimpleNamespace(model=model, processor=processor, entry=SimpleNamespace(name="tiny", spec=spec))
    metrics = run(pipe, "synthetic-episodes", None, tmp_path, limit=2)
    written = json.loads((tmp_path / "metrics.json").read_text())
    assert written == metrics and written["episodes"]["n"] == 2 and written["SOP"]["episodes"] == 2
    assert {"Success Rate", "Average Progress"} <= set(written["SOP"]) and "SOP" in written["zoo_metrics"]
    sop = [json.loads(line) for line in (tmp_path / "sop_episodes.jsonl").read_text().splitlines()]
    assert len(sop) == 2 and {"num_steps", "task_success", "final_step_id"} <= set(sop[0])
    rows = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == written["steps"]["n"] and {"type_match", "exact_match", "text"} <= set(rows[0])
    assert (tmp_path / "predictions.png").stat().st_size > 0


def test_rows_read_the_reward_components():
    sample = episode_samples(n=1, seed=0)[0]
    record = SimpleNamespace(sample=sample, group=0, step=0, generation=SimpleNamespace(text="t"), reward=0.55, match=False,
                             components={"type_match": 1.0, "extract_match": 0.0})  # fmt: skip
    (row,) = agent_rows([record])
    assert row["type_match"] is True and row["exact_match"] is False and row["action_type"] == sample.target["action"]["action"]


def test_turn_layout_follows_the_entry(monkeypatch):
    """zoo eval asks each step as the evaluated entry's contract does: UI-S1's turns for ui-s1-7b, the goal in
    every turn for gui-agent-tiny (what their recipes train on), the screenshot after the text for both."""
    from domains.gui import agent_eval
    from domains.gui.prompts import UI_S1_NEXT_TURN, UI_S1_SYSTEM, UI_S1_USER
    from zoo.engines.vlm import semi_online_rollout as rollout
    from zoo.tiny import build_tiny_vlm

    seen = {}

    def spy(episodes, *args, **kwargs):
        seen["episodes"], seen["image_first"] = episodes, kwargs["image_first"]
        return []

    monkeypatch.setattr(rollout, "semi_online_rollout", spy)
    episodes = load_agent_data("synthetic-episodes", None, limit=1)
    model, processor = build_tiny_vlm("qwen2_5_vl", hidden=32, layers=1, vision_hidden=32, seed=0)
    for name in ("ui-s1-7b", "gui-agent-tiny"):
        agent_eval._walk(model, processor, episodes, 8, None, -1, "extract_match", zoo.info(name).spec)
        first, second = seen["episodes"][0][:2]
        goal = first.meta["goal"]
        if name == "ui-s1-7b":
            assert first.prompt == [{"role": "system", "content": UI_S1_SYSTEM},
                                    {"role": "user", "content": UI_S1_USER.replace("{question}", goal)}]  # fmt: skip
            assert second.prompt == [{"role": "user", "content": UI_S1_NEXT_TURN}]
        else:
            assert first.prompt == second.prompt == [{"role": "user", "content": goal}]
        assert seen["image_first"] is False
