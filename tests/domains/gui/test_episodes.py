"""Synthetic multi-step episodes: AndroidControl layout, loader round trip, UI-S1 turns, expert answers."""

from __future__ import annotations

import json

import pytest

from domains.gui.data import load_synthetic_episodes, load_ui_s1_jsonl
from domains.gui.episodes import episode_samples, write_android_control_jsonl
from domains.gui.prompts import parse_ui_s1, ui_s1_action_response
from domains.gui.rewards import UI_S1


def test_episodes_are_seeded_and_end_with_terminate():
    a, b = episode_samples(n=6, seed=3), episode_samples(n=6, seed=3)
    assert [s.target for s in a] == [s.target for s in b]
    assert [s.images[0].tobytes() for s in a] == [s.images[0].tobytes() for s in b]
    by_episode: dict = {}
    for s in a:
        by_episode.setdefault(s.meta["episode_id"], []).append(s)
    for steps in by_episode.values():
        assert [s.meta["step"] for s in steps] == list(range(len(steps)))
        assert steps[-1].target["action"] == {"action": "terminate", "status": "success"}
        assert all(s.target["num_steps"] == len(steps) for s in steps)
        assert steps[-1].meta["history"] == [s.target["action"] for s in steps[:-1]]


def test_click_share_weights_a_training_mix_and_leaves_the_default_mix_alone():
    from collections import Counter

    def kinds(samples):
        return Counter(s.target["action"]["action"] for s in samples if s.target["action"]["action"] != "terminate")

    default = episode_samples(n=300, seed=5)
    assert [s.target for s in default] == [s.target for s in load_synthetic_episodes(n=300, seed=5)]
    assert 0.28 < kinds(default)["click"] / sum(kinds(default).values()) < 0.39  # three kinds alike
    heavy = kinds(episode_samples(n=300, seed=5, click_share=0.8))
    assert 0.74 < heavy["click"] / sum(heavy.values()) < 0.86 and heavy["type"] and heavy["system_button"]
    assert set(kinds(episode_samples(n=50, seed=5, click_share=1.0))) == {"click"}
    with pytest.raises(ValueError, match="probability"):
        episode_samples(n=1, click_share=1.5)


def test_written_jsonl_reads_back_through_the_authors_format_loader(tmp_path):
    samples = episode_samples(n=4, seed=1)
    path = write_android_control_jsonl(samples, tmp_path)
    line = json.loads(path.read_text().splitlines()[0])
    assert set(line) >= {"goal", "steps"} and set(line["steps"][0]) >= {"action_content", "screenshot"}
    back = load_ui_s1_jsonl(path, image_root=tmp_path / "images")
    assert [(s.id.split("-")[-1], s.target, s.prompt, s.meta) for s in back] == [
        (s.id.split("-")[-1], s.target, s.prompt, s.meta) for s in samples
    ]


def test_steps_are_raw_goals_for_the_entry_to_wrap():
    """The loaders write no turn: each step's question is the goal (the entry's contract writes the turns,
    tests/domains/gui/test_turn_contract.py)."""
    samples = load_synthetic_episodes(n=1, seed=0, min_steps=3, max_steps=3)
    assert all(s.prompt == s.meta["goal"] for s in samples)


def test_expert_answer_is_parsed_and_scored_as_an_exact_match():
    for sample in episode_samples(n=8, seed=5):
        text = ui_s1_action_response(sample)
        assert parse_ui_s1(text).get("parse_error") is None
        result = UI_S1([text], [sample])[0]
        assert result.components["extract_match"] == 1.0 and result.score == pytest.approx(1.0)


def test_expert_coordinates_scale_to_the_model_frame():
    sample = next(s for s in episode_samples(n=8, seed=5) if s.target["action"]["action"] == "click")
    x, y = sample.target["action"]["coordinate"]
    scaled = type(sample)(**{**sample.__dict__, "target": {**sample.target, "resized_size": [56, 56]}})
    action = parse_ui_s1(ui_s1_action_response(scaled))["action"]
    assert action["coordinate"] == [round(x * 56 / 112), round(y * 56 / 112)]
    assert "bbox" not in action
