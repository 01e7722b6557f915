"""The driving action vocabulary: arcs roll out as geometry says, plans round-trip, bad token answers say why."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rewards
from domains.driving.action_tokens import TOKENS, decode, encode, roll_out, tokens_answer
from domains.driving.data import synthetic_driving
from domains.driving.prompts import format_waypoints, parse_waypoints
from rewards.base import RewardSample


@pytest.fixture(scope="module")
def samples():
    return synthetic_driving(n=40, seed=11, size=56)


def test_arcs_roll_out_as_circle_geometry_says():
    k = 0.02  # a quarter circle of radius 50 m in 8 equal arcs ends at (50, 50) facing left
    poses = roll_out([math.pi / 2 / k / 8] * 8, [k] * 8)
    assert np.allclose(poses[-1], [50.0, 50.0, math.pi / 2])
    assert np.allclose(np.hypot(poses[:, 0], poses[:, 1] - 50.0), 50.0)  # every pose on the circle
    straight = roll_out([1.0, 2.0, 0.5], [0.0, 0.0, 0.0])
    assert np.allclose(straight, [[1, 0, 0], [3, 0, 0], [3.5, 0, 0]])
    assert np.allclose(roll_out([10.0], [-0.01])[0], [100 * math.sin(0.1), -100 * (1 - math.cos(0.1)), -0.1])


def test_every_scene_kind_round_trips_within_the_codebook_resolution(samples):
    assert {s.meta["kind"] for s in samples} == {"cruise", "follow", "stop", "curve"}
    for sample in samples:
        text = tokens_answer(sample)
        assert len(text.split("><")) == 16
        error = np.abs(np.asarray(decode(text)) - np.asarray(sample.target["waypoints"]))
        # error feedback keeps the 4-s end as close as the first step: no drift over the plan
        assert error[:, :2].max() < 0.1 and error[:, 2].max() < 0.01, sample.id


def test_encoding_feeds_the_rounding_error_back():
    speed = 8.37  # 4.185 m a step: rounding each step alone to 4.2 m would end 0.12 m long
    plan = [[speed * 0.5 * (i + 1), 0.0, 0.0] for i in range(8)]
    assert abs(decode(encode(plan))[-1][0] - plan[-1][0]) < 0.05
    lane_change = [[5.0 * (i + 1), 3.5 * (1 - math.cos(math.pi * (i + 1) / 8)) / 2, 0.0] for i in range(8)]
    assert np.abs(np.asarray(decode(encode(lane_change)))[:, 1] - np.asarray(lane_change)[:, 1]).max() < 0.3


def test_the_parser_and_reward_read_token_answers_as_the_plan_they_decode_to(samples):
    sample = samples[3]
    text = tokens_answer(sample)
    plan = decode(text)
    assert parse_waypoints(text)["trajectory"] == plan == parse_waypoints(f"<answer>{text}</answer>")["trajectory"]
    reward = rewards.get("driving-pdms")
    as_tokens, as_triples = reward([text, format_waypoints(plan)], [RewardSample(sample.target)] * 2)
    assert as_tokens.score == pytest.approx(as_triples.score, abs=0.02) and as_tokens.score > 0.8


@pytest.mark.parametrize(("text", "reason"), [
    ("<d10><c0>" * 7, "found 7 steps"),
    ("<d10><c0>" * 8 + "<d3>", "in 17 action tokens"),
    ("<d10>" * 16, "found 0 steps"),
    ("<d10><c0>" * 7 + "<d81><c0>", "step 8 <d81><c0> is outside the codebook"),
    ("<d10><c31>" + "<d10><c0>" * 7, "step 1"),
    ("<d-1><c0>" + "<d10><c0>" * 7, "outside the codebook"),
])  # fmt: skip
def test_malformed_token_answers_say_why(text, reason):
    parsed = parse_waypoints(text)
    assert "trajectory" not in parsed and reason in parsed["parse_error"]


def test_the_vocabulary_is_whole_tokens_of_a_tiny_tokenizer(samples):
    from zoo.tiny import build_tokenizer

    corpus = [f"{s.question} {tokens_answer(s)}" for s in samples]
    tokenizer = build_tokenizer(corpus, vocab_size=300, added_tokens=TOKENS)
    text = tokens_answer(samples[0])
    ids = tokenizer(text)["input_ids"]
    assert len(ids) == 16 and tokenizer.decode(ids) == text
    assert len(tokenizer) == 300 + len(TOKENS)
    # BPE learnt no pieces of the action tokens (they were cut out of its corpus)
    assert not any(piece in tokenizer.get_vocab() for piece in ("<d", "><c", "<c", "><"))
