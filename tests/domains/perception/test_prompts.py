"""Perception parsers: the authors' answer shapes are read, malformed text is reported, never raised."""

from __future__ import annotations

import pytest

import zoo
from domains.perception.prompts import (
    VISUAL_RFT_LISA_USER,
    VLM_R1_REC_USER,
    format_r1_reward_question,
    parse_detections,
    parse_lisa,
    parse_preference,
    parse_rec,
    parse_think_answer,
    parse_visual_rft_detections,
)


def test_rec_reads_the_json_box_in_the_answer():
    out = parse_rec('<think>the left cup</think><answer>{"bbox_2d": [10, 20, 110, 220]}</answer>')
    assert out["bbox"] == [10.0, 20.0, 110.0, 220.0] and out["think"] == "the left cup"
    assert "parse_error" not in out


def test_lisa_reads_corner_pairs():
    assert parse_lisa("<think>t</think>\n<answer>(120,340),(560,900)</answer>")["bbox"] == [120.0, 340.0, 560.0, 900.0]


def test_detections_read_labels_and_none():
    text = '<think>t</think><answer>```json\n[{"bbox_2d": [1, 2, 3, 4], "label": "cat"}]\n```</answer>'
    assert parse_detections(text)["objects"] == [{"bbox": [1.0, 2.0, 3.0, 4.0], "label": "cat"}]
    assert parse_detections("<think>t</think><answer>None</answer>")["objects"] == []
    assert parse_detections('[{"bbox_2d": [1, 2, 3, 4], "label": "dog"}]')["objects"][0]["label"] == "dog"


def test_visual_rft_detections_read_position_and_confidence():
    out = parse_visual_rft_detections("<think>t</think><answer>[{'Position': [1, 2, 3, 4], 'Confidence': 0.9}]</answer>")
    assert out["objects"] == [{"bbox": [1.0, 2.0, 3.0, 4.0], "score": 0.9}]


@pytest.mark.parametrize(("text", "answer", "fallback"), [
    ("<think>r2 is better</think><answer>2</answer>", "2", False),
    ("<think>a</think><ANSWER>1</ANSWER>", "1", False),
    ("Response 1 wins, not 2 ... final: 1\nno digits here", "1", True),
])  # fmt: skip
def test_preference_verdict(text, answer, fallback):
    out = parse_preference(text)
    assert out["answer"] == answer and out.get("answer_from_fallback", False) is fallback


@pytest.mark.parametrize("parser", [parse_rec, parse_lisa, parse_detections, parse_visual_rft_detections,
                                    parse_preference])
@pytest.mark.parametrize("text", ["", "<answer>", "<think>x</think><answer>[1, 2]</answer>",
                                  "<think>x</think><answer>3</answer>", "<answer>[{'Position': 'x'}]</answer>"])
def test_malformed_answers_give_parse_error(parser, text):
    out = parser(text, "q")
    assert isinstance(out.get("parse_error"), str) and out["parse_error"]


@pytest.mark.parametrize("text", ["", "<answer>", "<think>only thinking</think>"])
def test_think_answer_needs_a_closed_answer(text):
    assert parse_think_answer(text)["parse_error"]


def test_templates_keep_the_authors_text_and_entries_use_them():
    assert VLM_R1_REC_USER.format(question="the red cup").startswith("the red cup First output the thinking")
    assert VISUAL_RFT_LISA_USER.endswith('<answer>(x1,y1),(x2,y2)</answer>)" format.')
    assert zoo.info("vlm-r1").spec.user == VLM_R1_REC_USER
    assert zoo.info("visual-rft").spec.coord_frame == "norm1000"
    question = format_r1_reward_question("Q?", "first", "second")
    assert "[Response 1]:\nfirst" in question and question.endswith("<answer>1/2</answer>")
