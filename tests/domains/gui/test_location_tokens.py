"""Location tokens for clicks: expert turns round-trip through UI-S1's parser and matcher, bad tokens say why."""

from __future__ import annotations

import json

import pytest

from domains.gui.episodes import episode_samples
from domains.gui.location_tokens import NUM_BINS, PIXEL_BIN, TOKENS, decode, encode_action, to_pixel, to_token
from domains.gui.prompts import parse_ui_s1, ui_s1_action_response, ui_s1_location_response
from domains.gui.rewards import UiS1Reward, ui_s1_score
from rewards.base import RewardSample


@pytest.fixture(scope="module")
def samples():
    return episode_samples(n=30, seed=5)


def test_a_pixel_reads_back_as_its_bins_centre():
    assert [to_pixel(to_token(p)) for p in (0, 3, 4, 57, 127)] == [2, 2, 6, 58, 126]
    assert all(abs(to_pixel(to_token(p)) - p) <= PIXEL_BIN // 2 for p in range(NUM_BINS * PIXEL_BIN))
    with pytest.raises(ValueError, match="outside the location tokens' 128-pixel frame"):
        to_token(128)
    with pytest.raises(ValueError, match="not a location token"):
        to_pixel(f"<p{NUM_BINS}>")


def test_an_action_is_written_as_uis1s_json_with_tokens_in_place_of_numbers():
    action = {"action": "swipe", "coordinate": [10, 100], "coordinate2": [10, 20], "note": "café"}
    text = encode_action(dict(action))
    assert text == '{"action": "swipe", "coordinate": [<p2>, <p25>], "coordinate2": [<p2>, <p5>], "note": "café"}'
    assert json.loads(decode(text)) == {**action, "coordinate": [10, 102], "coordinate2": [10, 22]}
    # without coordinates it is UI-S1's own JSON, byte for byte
    assert encode_action({"action": "type", "text": "naïve"}) == json.dumps({"action": "type", "text": "naïve"},
                                                                             ensure_ascii=False)  # fmt: skip


def test_every_expert_turn_scores_as_the_numeric_one(samples):
    """The expert's token turn earns what its JSON turn earns from UI-S1's reward (clicks hit after rounding)."""
    reward = UiS1Reward()
    clicks = 0
    for sample in samples:
        tokens, numbers = ui_s1_location_response(sample), ui_s1_action_response(sample)
        assert tokens.split("<action>")[0] == numbers.split("<action>")[0]  # the same <think>
        t = sample.target
        scored = [ui_s1_score(x, t["check_options"], t["image_size"], t["image_size"]) for x in (tokens, numbers)]
        assert scored[0].score == scored[1].score == 1.0, (tokens, scored)
        assert reward([tokens], [RewardSample(target=t)])[0].score == 1.0
        if "coordinate" in t["action"]:
            clicks += 1
            point = parse_ui_s1(tokens)["point"]
            assert all(abs(p - q) <= PIXEL_BIN // 2 for p, q in zip(point, t["action"]["coordinate"], strict=True))
    assert clicks >= 5  # the fixture holds click steps


@pytest.mark.parametrize(("completion", "reason"), [
    ('<think>x</think><action>{"action": "click", "coordinate": [<p99>, <p3>]}</action>', "not valid JSON"),
    ('<think>x</think><action>{"action": "click", "coordinate": [<p3>]}</action>', "could not be checked"),
    ('<think>x</think><action>{"action": "click", "coordinate": [<p3> <p4>]}</action>', "not valid JSON"),
])  # fmt: skip
def test_malformed_token_clicks_are_failures_with_a_reason(samples, completion, reason):
    click = next(s for s in samples if s.target["action"]["action"] == "click")
    t = click.target
    result = ui_s1_score(completion, t["check_options"], t["image_size"], t["image_size"])
    assert result.score <= 0.1 and reason in result.error
    assert "parse_error" in parse_ui_s1(completion) or "point" not in parse_ui_s1(completion)


def test_the_tokens_are_whole_tokens_of_a_tiny_tokenizer(samples):
    from domains.gui.location_tokens import in_vocabulary
    from zoo.tiny import build_tokenizer

    corpus = [f"{s.prompt} {ui_s1_location_response(s)}" for s in samples]
    tokenizer = build_tokenizer(corpus, vocab_size=300, added_tokens=TOKENS)
    assert in_vocabulary(tokenizer) and not in_vocabulary(build_tokenizer(corpus, vocab_size=300))
    click = next(ui_s1_location_response(s) for s in samples if s.target["action"]["action"] == "click")
    pieces = tokenizer.convert_ids_to_tokens(tokenizer(click)["input_ids"])
    assert sum(piece in TOKENS for piece in pieces) == 2 and tokenizer.decode(tokenizer(click)["input_ids"]) == click
