"""Parsers of the visual-code models: the authors' output shapes, and garbage as parse errors."""

import pytest

import zoo
from domains.visual_code.prompts import MSRL_PROMPT, extract_fenced, parse_cadquery_block, parse_python_block, parse_svg


def test_msrl_parser_takes_the_last_python_block():
    text = "First try:\n```python\nprint(1)\n```\nBetter:\n```python\nimport matplotlib.pyplot as plt\n```\n"
    assert parse_python_block(text) == {"code": "import matplotlib.pyplot as plt"}


def test_unlabelled_fence_counts_only_without_a_labelled_one():
    assert extract_fenced("```\nx = 1\n```") == "x = 1"
    assert extract_fenced("```\nx = 1\n```\n```py\ny = 2\n```") == "y = 2"


@pytest.mark.parametrize("text", ["", "no code here", "```python\nunterminated", "```python\n```", "```svg\n<svg/>\n```"])
def test_python_parser_reports_missing_or_empty_blocks(text):
    parsed = parse_python_block(text)
    assert parsed["code"] is None and isinstance(parsed["parse_error"], str)


def test_svg_parser_reads_raw_and_fenced_svg():
    raw = 'junk <svg viewBox="0 0 1 1"><rect/></svg> tail'
    assert parse_svg(raw)["code"] == '<svg viewBox="0 0 1 1"><rect/></svg>'
    assert parse_svg("```svg\n<svg><circle/></svg>\n```")["code"] == "<svg><circle/></svg>"
    assert parse_svg("<svg><rect/>")["parse_error"]


def test_cadquery_parser_needs_a_result_variable():
    assert parse_cadquery_block("```python\nimport cadquery as cq\nresult = cq.Workplane()\n```")["code"]
    assert "result" in parse_cadquery_block("```python\nimport cadquery as cq\npart = 1\n```")["parse_error"]


def test_entries_carry_the_authors_settings():
    msrl = zoo.info("msrl")
    assert msrl.repo_id == "DocTron/MSRL" and msrl.spec.min_pixels == 1280 * 28 * 28
    assert msrl.spec.max_pixels == 16384 * 28 * 28 and msrl.spec.max_new_tokens == 4096
    assert msrl.spec.user.replace("{question}", "") == MSRL_PROMPT  # pipe(image, "") sends the prompt exactly
    assert zoo.info("msrl-sft").repo_id == "DocTron/MSRL-SFT"
    for name in ("starvector-1b-im2svg", "starvector-8b-im2svg"):
        assert zoo.info(name).trust_remote_code
    assert not zoo.info("rlrf").released and not zoo.info("cad-rl").released


# DocTron-hub/MSRL@203465d:README.md:245-248, copied byte for byte: the string opens and closes on its own line.
README_INSTRUCTION = """
You are an expert Python developer who specializes in writing matplotlib code based on a given picture. I found a very nice picture in a STEM paper, but there is no corresponding source code available. I need your help to generate the Python code that can reproduce the picture based on the picture I provide.
Now, please give me the matplotlib code that reproduces the picture below, starting with "```python" and ending with "```".
"""


def test_msrl_prompt_is_the_readme_instruction_byte_for_byte():
    assert MSRL_PROMPT.encode("utf-8") == README_INSTRUCTION.encode("utf-8")
    assert MSRL_PROMPT[0] == "\n" and MSRL_PROMPT[-1] == "\n"  # the newlines the review found missing
    text = zoo.info("msrl").spec.user.replace("{question}", "")
    assert text.encode("utf-8") == README_INSTRUCTION.encode("utf-8")


def test_starvector_load_needs_the_opt_in_by_name():
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        zoo.load("starvector-1b-im2svg")
