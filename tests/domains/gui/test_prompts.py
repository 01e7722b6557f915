"""The GUI prompts and parsers against the authors' strings and the rewards' stricter parsers."""

from __future__ import annotations

import pytest

from domains.gui.prompts import GUI_G1_USER, UI_S1_SYSTEM, UI_S1_USER, parse_gui_g1, parse_ui_s1
from domains.gui.rewards import parse_gui_g1_bbox
from rewards.parsing import ParseError
from tests.domains.gui.golden_cases import UI_S1_OUTPUT_FORMAT_REFERENCE, UI_S1_SYSTEM_REFERENCE


def test_ui_s1_prompts_equal_the_authors_strings():
    assert UI_S1_SYSTEM == UI_S1_SYSTEM_REFERENCE
    # gen_next_round's first user turn: two text parts joined by Qwen's template with nothing between.
    expected = (
        f"User Instruction: find milk\nOutput Format: {UI_S1_OUTPUT_FORMAT_REFERENCE}"
        "If the query asks a question, please answer the question through the answer action before terminating "
        "the process.\n"
    )
    assert UI_S1_USER.replace("{question}", "find milk") == expected


def test_gui_g1_template_is_grpo_rec_question_template():
    # grpo_rec.py: QUESTION_TEMPLATE = "Grounding instruction is: {}. Report the bbox coordinates in JSON format."
    assert GUI_G1_USER.replace("{question}", "click OK") == (
        "Grounding instruction is: click OK. Report the bbox coordinates in JSON format."
    )


def test_inference_parser_is_lenient_where_the_reward_is_strict():
    """A bare dict is a usable answer at inference, but GUI-G1's training reward scores it 0."""
    text = '{"bbox_2d": [1, 2, 3, 4]}'
    assert parse_gui_g1(text)["bbox"] == [1, 2, 3, 4]
    with pytest.raises(ParseError, match="bbox_2d"):
        parse_gui_g1_bbox(text)


def test_ui_s1_parser_reads_think_action_point():
    parsed = parse_ui_s1('<think>\ngo\n</think>\n<action>\n{"action": "click", "coordinate": [10, 20]}\n</action>')
    assert parsed["think"] == "go" and parsed["action"]["action"] == "click" and parsed["point"] == [10.0, 20.0]
    assert "parse_error" in parse_ui_s1("<think>x</think>")
