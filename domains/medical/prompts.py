"""The authors' prompts and output parsers for medical VLMs.

Patho-R1 strings are copied as facts from the authors' README: the Chain-of-Draft system prompt
(Wenchuan-Zhang/Patho-R1@3494816:README.md:72), the Chain-of-Thought one (README.md:76), the question with
its options joined by ``" /n "`` as the user text, after the image (README.md:80-84), ``max_new_tokens=2048``
(README.md:103). (The README at 066024f3, cited before, has no Patho-R1 inference section yet; it appears at
3423285, 2025-06-07.) The ``patho-r1-3b``/``-7b`` entries carry them (:mod:`domains.medical.entries`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rewards.parsing import ParseError, answer_span, extract_tag, parse_choice_letter

PATHO_COT_SYSTEM = (
    "You are a pathology expert, your task is to answer question step by step. Use the following format:"
    "<think> Your step-by-step reasoning </think><answer> Your final answer </answer>"
)
PATHO_COD_SYSTEM = (
    "You are a pathology expert, your task is to think step by step, but only keep a minimum draft for each "
    "thinking step, with 5 words at most. Return the answer at the end of the response after a separator. "
    "Use the following format:<think> Your step-by-step reasoning </think><answer> Your final answer </answer>"
)

#: Patho-R1 joins the question and its options with the literal " /n " (sic), as in its README.
MCQ_SEPARATOR = " /n "


def format_mcq(question: str, options: Mapping[str, str] | Sequence[str]) -> str:
    """``"Question? /n A. x /n B. y"``: Patho-R1's multiple-choice layout.

    ``options`` is a mapping letter -> text, or a sequence lettered A, B, C... in order.
    """
    if not isinstance(options, Mapping):
        options = {chr(ord("A") + i): text for i, text in enumerate(options)}
    parts = [question.strip()] + [f"{letter}. {text}" for letter, text in options.items()]
    return MCQ_SEPARATOR.join(parts)


def parse_mcq_options(question: str) -> dict[str, str]:
    """Letter -> option text from a question in Patho-R1's " /n " layout (empty when none)."""
    options: dict[str, str] = {}
    for part in question.split(MCQ_SEPARATOR)[1:]:
        head, dot, text = part.strip().partition(".")
        if dot and len(head) == 1 and head.isalpha():
            options[head.upper()] = text.strip()
    return options


def parse_think_answer(text: str, question: str = "") -> dict[str, Any]:
    """``think``, ``answer`` and (for multiple choice) ``letter`` from ``<think>..</think><answer>..</answer>``.

    The options are read back from ``question`` (Patho-R1's " /n " layout) so that an answer
    which repeats an option's text instead of its letter still picks that option. A missing ``<answer>`` is a parse failure; an answer that names no option leaves ``letter``
    empty and says why in ``letter_error`` (open questions have no letter at all).
    """
    out: dict[str, Any] = {"think": extract_tag(text, "think", required=False)}
    try:
        out["answer"] = extract_tag(text, "answer")
    except ParseError as err:
        return {**out, "parse_error": str(err)}
    try:
        out["letter"] = parse_choice_letter(out["answer"], parse_mcq_options(question) or None)
    except ParseError as err:
        out["letter_error"] = str(err)
    return out


# --- Ultrasound (U2-Bench / Dolphin) -------------------------------------------------------------
# U2-Bench's lesion-localisation prompt for datasets 04, 17, 23, 32 and 64, copied as a fact from
# dolphin-sound/u2-bench-evalkit ``vlmeval/dataset/image_seg.py`` (``{anatomy}`` is the TSV's
# ``anatomy_location``). The other U2-Bench prompts are per dataset (``cla_prompt.json``,
# ``mea_prompt.json``); ``load_u2bench_tsv(prompt_file=...)`` reads them from the evalkit's files.
U2BENCH_LOCALIZATION_PROMPT = (
    "You are a radiologist analyzing an ultrasound image about {anatomy}.\n"
    "Your task is to identify the primary location of any visible lesion(s) relative to the boundaries of the "
    "displayed image. Consider the lesion's center location or most prominent area when deciding. Choose the "
    "single option from the list below that best describes this location, even if the fit is approximate.\n"
    "Choose the single most appropriate location from the following list: upper left, upper center, upper right, "
    "middle left, center, middle right, lower left, lower center, lower right, not visible.\n"
    "Output format: only one or two word(s) representing the chosen location. No additional text or formatting "
    "is allowed."
)

# The zoo's own templates for the synthetic ultrasound tasks, in U2-Bench's layout (role, task,
# options, output format). Dolphin's prompts are not public (arXiv 2509.25748 releases none).
US_CLASSIFICATION_TEMPLATE = (
    "You are a radiologist analyzing an ultrasound image about {anatomy}.\n"
    "Your task is to classify the visible lesion.\noptions: {options}\n"
    "Output format: only the exact text of the chosen option from the list above."
)
US_MEASUREMENT_TEMPLATE = (
    "You are a radiologist analyzing an ultrasound image about {anatomy}.\n"
    "The physical size of one pixel is {mm_per_px} mm. Estimate the largest diameter of the visible lesion "
    "in millimetres, between {low} and {high}.\n"
    "Output format: only the single numerical value as a floating-point number, without units."
)
US_REPORT_TEMPLATE = (
    "You are a radiologist analyzing an ultrasound image focused on the {anatomy}. "
    "Write a concise report of the visible findings.\nOutput format: the report text only."
)
#: System prompt for Dolphin-R1-style reasoning RL: the answer keeps U2-Bench's bare format inside
#: ``<answer>`` so the benchmark's exact-match rules still apply to it. The zoo's own (Dolphin's prompts are
#: unpublished, arXiv 2509.25748); the ``dolphin-r1`` entry carries it, so the recipe
#: ``dolphin-r1-ultrasound.yaml`` (``model.entry: dolphin-r1``) trains with it and ``--entry dolphin-r1`` asks with it.
US_REASONING_SYSTEM = (
    "You are an ultrasound expert. Reason step by step, then give the final answer in the exact output "
    "format the question asks for. Use the following format:"
    "<think> Your step-by-step reasoning </think><answer> Your final answer </answer>"
)


def parse_us_answer(text: str, question: str = "") -> dict[str, Any]:
    """``think`` and ``answer`` of a reply to :data:`US_REASONING_SYSTEM`: the ``<answer>`` span when there is
    one, else the whole text (stripped), which is how the ultrasound rewards read an answer
    (:func:`rewards.parsing.answer_span`), so ``zoo eval`` scores the same span training rewarded. A reply
    without tags reads as it does without a parser (the whole text)."""
    return {"think": extract_tag(text, "think", required=False), "answer": answer_span(text)}
