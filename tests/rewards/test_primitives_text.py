"""Format, choice, numeric and text rewards on hand-made outputs."""

from __future__ import annotations

import pytest

from rewards import RewardSample
from rewards.choice import MultipleChoice
from rewards.format import CodeFenceFormat, JsonFormat, TagFormat
from rewards.numeric import NumericMatch, numbers_close
from rewards.parsing import ParseError, answer_span, parse_number
from rewards.text import EditSimilarity, ExactMatch, anls, char_error_rate, levenshtein, normalize_text


def one(reward, text, target=None):
    return reward([text], [RewardSample(target=target or {})])[0]


@pytest.mark.parametrize("text, score", [
    ("<think>a</think><answer>B</answer>", 1.0),
    ("  <think>\nlong\n</think>\n<answer>B</answer>\n", 1.0),
    ("<answer>B</answer><think>a</think>", 0.0),
    ("<think>a</think>", 0.0),
    ("<think>a</think><answer>B</answer> trailing", 0.0),
    ("<think>a<think>b</think><answer>B</answer>", 0.0),
])
def test_tag_format(text: str, score: float) -> None:
    result = one(TagFormat(), text)
    assert result.score == score
    assert set(result.components) == {"has_think", "has_answer"}
    assert (result.error is None) == (score == 1.0)


def test_tag_format_lenient_allows_surrounding_text() -> None:
    assert one(TagFormat(strict=False), "ok <think>a</think> <answer>B</answer> bye").score == 1.0


def test_json_and_fence_formats() -> None:
    assert one(JsonFormat(["action"]), '<answer>```json\n{"action": "click"}\n```</answer>').score == 1.0
    missing = one(JsonFormat(["action", "coordinate"]), '{"action": "click"}')
    assert missing.score == 0.0 and "coordinate" in missing.error
    broken = one(JsonFormat(), "<answer>{not json</answer>")
    assert broken.score == 0.0 and broken.components == {"parsed": 0.0, "has_keys": 0.0}
    assert one(CodeFenceFormat("python"), "Here:\n```python\nprint(1)\n```").score == 1.0
    assert "no ```python" in one(CodeFenceFormat("python"), "```svg\n<svg/>\n```").error
    assert "empty" in one(CodeFenceFormat(), "```\n\n```").error


@pytest.mark.parametrize("text, expected", [
    ("<answer>B</answer>", 1.0),
    ("<think>x</think><answer>(B) pleural effusion</answer>", 1.0),
    ("The answer is B.", 1.0),
    ("<answer>pleural effusion</answer>", 1.0),  # option text, no letter
    ("<answer>A</answer>", 0.0),
    ("<answer>no idea</answer>", 0.0),
])
def test_multiple_choice(text: str, expected: float) -> None:
    target = {"answer": "B", "options": {"A": "pneumothorax", "B": "pleural effusion", "C": "normal"}}
    assert one(MultipleChoice(), text, target).score == expected


def test_multiple_choice_bad_reference_is_a_dataset_error() -> None:
    with pytest.raises(ValueError, match="names no option"):
        one(MultipleChoice(), "A", {"answer": "???", "options": {"A": "x"}})


@pytest.mark.parametrize("text, value", [
    ("$1,234.50", 1234.5), ("45 %", 45.0), ("3/4", 0.75), (r"so \boxed{12} cm", 12.0), ("2.5e-3 m/s", 0.0025),
    ("from 3 to -7 apples", -7.0), ("−4.5 °C", -4.5), (r"\frac{1}{2}", 0.5),
])
def test_parse_number(text: str, value: float) -> None:
    assert parse_number(text) == pytest.approx(value)


def test_parse_number_failure_and_first() -> None:
    with pytest.raises(ParseError, match="no number"):
        parse_number("none here")
    assert parse_number("3 then 4", which="first") == 3.0
    assert answer_span("x <answer> 7 </answer>") == "7" and answer_span(" 7 ") == "7"


def test_numeric_match_tolerances() -> None:
    relaxed = NumericMatch(rel_tol=0.05)
    assert one(relaxed, "<answer>104 km</answer>", {"answer": "100 km"}).score == 1.0
    assert one(relaxed, "<answer>106</answer>", {"answer": 100}).score == 0.0
    assert one(NumericMatch(), "12.0", {"answer": 12}).score == 1.0
    assert one(NumericMatch(), "12.1", {"answer": 12, "abs_tol": 0.2}).score == 1.0
    assert one(NumericMatch(), "no number", {"answer": 12}).error.startswith("no number")
    assert numbers_close(0.0, 0.0, 0.0, 0.0) and not numbers_close(float("nan"), 1.0, 1.0, 1.0)


def test_text_normalisation_and_distances() -> None:
    assert normalize_text("The  Cat, sat!") == "cat sat"
    assert normalize_text("ＡＢＣ") == "abc"  # full-width -> ASCII (NFKC)
    assert levenshtein("kitten", "sitting") == 3 and levenshtein("", "abc") == 3
    assert char_error_rate("helo", "hello") == pytest.approx(0.2)
    # ST-VQA ANLS: similarity below 0.5 counts 0
    assert anls("hello", ["hallo"]) == pytest.approx(0.8)
    assert anls("abc", ["xyz"]) == 0.0
    assert anls("Hello ", ["nope", "hello"]) == 1.0


def test_exact_and_edit_rewards() -> None:
    assert one(ExactMatch(), "<answer>The Eiffel tower.</answer>", {"answer": ["eiffel tower"]}).score == 1.0
    assert one(ExactMatch(normalize=False), "eiffel Tower", {"answer": "eiffel tower"}).score == 0.0
    assert one(EditSimilarity(), "invoice 12345", {"answer": "invoice 12346"}).score == pytest.approx(12 / 13)
    assert one(EditSimilarity(metric="cer"), "abcd", {"answer": "abcf"}).score == pytest.approx(0.75)
    with pytest.raises(KeyError, match="needs sample.target\\['answer'\\]"):
        one(ExactMatch(), "x", {"label": "x"})
