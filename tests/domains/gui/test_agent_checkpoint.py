"""The shipped ``checkpoints/gui-agent-tiny``: its training record, its evaluation and what the model writes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from zoo.records import read_record

ROOT = Path(__file__).resolve().parents[3]
CHECKPOINT = ROOT / "checkpoints" / "gui-agent-tiny"


def record() -> dict:
    return read_record(CHECKPOINT / "training.json").to_dict()["measurements"]


def test_checkpoint_is_small_safetensors_with_its_training_record():
    files = {p.name for p in CHECKPOINT.iterdir()}
    assert "model.safetensors" in files and not any(n.endswith((".bin", ".pt", ".pth")) for n in files)
    assert (CHECKPOINT / "model.safetensors").stat().st_size < 8e6 and (CHECKPOINT / "sft" / "model.safetensors").is_file()
    r = record()
    assert read_record(CHECKPOINT / "training.json").entry == "gui-agent-tiny" and r["recipe_rl"]["algorithm"]["adv_estimator"] == "ui-s1"
    assert r["summary"]["sft_start"]["step_success"] == r["sft"]["final"]["step_success"]
    assert len(r["rl"]) >= 2 and [c["seed"] for c in r["sft_continue_equal_time"]] == [g["seed"] for g in r["rl"]]
    for rl, control in zip(r["rl"], r["sft_continue_equal_time"]):  # the control was read at RL's CPU minutes
        assert control["rl_minutes"] == pytest.approx(rl["train_minutes"]) and control["matched_minutes"] >= rl["train_minutes"]
    # every comparison on the card is on the same held-out episodes, with the run as the unit beside the seeds
    paired, pooled = r["summary"]["step_success_paired"], r["summary"]["step_success_across_seeds"]
    for key in ("rl_minus_sft", "control_minus_sft", "rl_minus_control"):
        diffs = [pair["diff"] for pair in paired[key].values()]
        assert pooled[key]["diff"] == pytest.approx(sum(diffs) / len(diffs)) and pooled[key]["seeds"] == len(diffs)
    metrics = json.loads((CHECKPOINT / "eval" / "metrics.json").read_text())
    assert metrics["steps"]["exact_match"] == pytest.approx(r["released_eval"]["step_success"])
    assert r["released_eval"]["step_success"] == pytest.approx(r["rl"][0]["final"]["step_success"])
    assert (CHECKPOINT / "eval" / "predictions.png").stat().st_size > 1000


def test_checkpoint_answers_a_held_out_click_in_the_format_its_record_names():
    """The released agent answers a held-out click step in the answer format of its recorded SFT recipe (UI-S1's
    JSON numbers, or location tokens with the tokens in its vocabulary), and the entry's parser reads a click."""
    import zoo
    from domains.gui import location_tokens
    from domains.gui.agent_eval import SYNTHETIC_EPISODES_SEED
    from domains.gui.data import load_synthetic_episodes

    tokens = record()["recipe_sft"]["data"]["answer_format"] == "ui-s1-location-tokens"
    pipe = zoo.load("gui-agent-tiny")
    assert pipe.source == "checkpoints" and location_tokens.in_vocabulary(pipe.processor.tokenizer) == tokens
    steps = load_synthetic_episodes(n=40, seed=SYNTHETIC_EPISODES_SEED)
    click = next(s for s in steps if s.meta["step"] == 0 and s.target["check_options"]["action"] == "click")
    pred = pipe(click.images[0], click.question)
    assert pred.action is not None and pred.action["action"] == "click", pred.text
    written = re.findall(r"<p\d+>", pred.text)
    if tokens:
        assert len(written) == 2, f"a click is two location tokens: {pred.text!r}"
        pixels = [location_tokens.to_pixel(token) for token in written]
        assert f'"coordinate": [{pixels[0]}, {pixels[1]}]' in location_tokens.decode(pred.text)
    else:
        assert not written and re.search(r'"coordinate": \[\d+, \d+\]', pred.text), pred.text


def test_released_agent_clicks_inside_held_out_buttons():
    """The shipped agent reads where its button is (a blind click lands in the box about 1 time in 10): the
    first-step clicks of held-out episodes, asked through ``zoo.load``, land inside the element's box."""
    import zoo
    from domains.gui.agent_eval import SYNTHETIC_EPISODES_SEED
    from domains.gui.data import load_synthetic_episodes
    from domains.gui.evaluate import point_in_box

    steps = load_synthetic_episodes(n=80, seed=SYNTHETIC_EPISODES_SEED)
    clicks = [s for s in steps if s.meta["step"] == 0 and s.target["action"]["action"] == "click"][:20]
    pipe = zoo.load("gui-agent-tiny")
    hits = sum(point_in_box((pipe(s.images[0], s.question).action or {}).get("coordinate"), s.target["action"]["bbox"])
               for s in clicks)  # fmt: skip
    assert len(clicks) == 20 and hits >= 18, f"{hits} of {len(clicks)} clicks inside their buttons"
