"""The authors' output formats parsed into Prediction fields (GUI-G1 grpo_rec.py, UI-S1, Patho-R1 README)."""

import pytest

from domains.gui.prompts import parse_gui_g1, parse_ui_s1
from domains.medical.prompts import format_mcq, parse_mcq_options, parse_think_answer
from zoo.outputs import Prediction


def test_patho_mcq_layout_uses_literal_slash_n():
    text = format_mcq("What is shown?", ["necrosis", "fibrosis"])
    assert text == "What is shown? /n A. necrosis /n B. fibrosis"
    assert parse_mcq_options(text) == {"A": "necrosis", "B": "fibrosis"}


@pytest.mark.parametrize(
    "answer, letter",
    [("B", "B"), ("(C)", "C"), ("B. fibrosis", "B"), ("The answer is A", "A"), ("fibrosis", "B")],
)
def test_patho_answer_letter(answer, letter):
    out = parse_think_answer(f"<think>x</think><answer>{answer}</answer>", "Q? /n A. necrosis /n B. fibrosis /n C. mitosis")
    assert out["letter"] == letter and out["think"] == "x"


def test_patho_missing_answer_is_a_parse_error_not_an_exception():
    out = parse_think_answer("<think>cut off mid", "Q")
    assert "answer" in out["parse_error"]
    pred = Prediction.from_parsed("<think>cut off mid", out)
    assert pred.answer is None and pred.parse_error


def test_gui_g1_reads_the_first_bbox_of_qwen_json():
    out = parse_gui_g1('```json\n[{"bbox_2d": [10, 20, 30, 40], "label": "a"}, {"bbox_2d": [0, 0, 1, 1]}]\n```')
    assert out == {"bbox": [10.0, 20.0, 30.0, 40.0]}
    assert "bbox_2d" in parse_gui_g1('[{"box": [1, 2, 3, 4]}]')["parse_error"]
    assert "4 numbers" in parse_gui_g1('[{"bbox_2d": [1, 2, 3]}]')["parse_error"]


def test_ui_s1_action_and_point():
    out = parse_ui_s1('<think>\nopen settings\n</think>\n<action>\n{"action": "click", "coordinate": [540, 1200]}\n</action>')
    assert out["think"] == "open settings"
    assert out["action"] == {"action": "click", "coordinate": [540, 1200]} and out["point"] == [540.0, 1200.0]
    assert "action" in parse_ui_s1("<think>x</think> no action")["parse_error"]
    assert "'action' key" in parse_ui_s1('<action>{"type": "click"}</action>')["parse_error"]
