"""Answer normalisation and matching as VLM-R1's and Visual-RFT's accuracy rewards do it.

Source: om-ai-lab/VLM-R1 ``src/open-r1-multimodal/src/open_r1/grpo_jsonl.py`` (functions
``clean_text``, ``extract_choice``, ``numeric_reward``, ``default_accuracy_reward``), which score
with ``Levenshtein.ratio`` (re-stated here as :func:`indel_ratio`, so python-Levenshtein is not
needed) and first ask HF ``math_verify`` (:func:`math_verify_equal`, the ``perception`` extra);
the goldens in ``tests/domains/perception`` hold the authors' numbers.
"""

from __future__ import annotations

import re

#: Words that, within 20 characters of a candidate letter, make it more likely the chosen option.
_CHOICE_KEYWORDS = ("答案", "选择", "正确", "是", "对", "answer", "correct", "choose", "select", "right",
                    "认为", "应该", "觉得", "think", "believe", "should")  # fmt: skip


def last_answer(text: str) -> str | None:
    """Content of the *last* ``<answer>..</answer>`` (newlines allowed), or ``None``."""
    found = re.findall(r"<answer>(.*?)</answer>", text, re.DOTALL)
    return found[-1] if found else None


def clean_text(text: str) -> str:
    """VLM-R1's ``clean_text``: the last ``<answer>`` content, line breaks folded, stripped, final
    period dropped, lower-cased.

    A line break right after white space is removed, any other becomes a space (the two rules are
    applied one after the other, each to every line break in the text as it stands then).
    """
    inner = last_answer(text)
    text = text if inner is None else inner
    for brk in ("\n", "\r"):
        text = re.sub(rf"(?<=\s){brk}", "", text)
        text = re.sub(rf"(?<!\s){brk}", " ", text)
    return text.strip().rstrip(".").lower()


def extract_choice(text: str) -> str | None:
    """The option letter an answer picks, by VLM-R1's heuristic.

    Candidates are capital letters standing alone and followed by punctuation or the end. With
    several, each candidate occurrence scores its *first* position in the text: +1 per keyword in
    the 40 characters around it, +2 when in the last 30 % of the text, +1 when punctuation follows;
    a letter listed twice is scored twice. The first letter with the highest total wins.
    """
    text = re.sub(r"\s+", " ", text.upper())
    letters = re.findall(r"(?<![A-Z])([A-Z])(?=[\.\,\?\!\:\;]|$)", text)
    if not letters:
        return None
    if len(letters) == 1:
        return letters[0]
    scores = dict.fromkeys(letters, 0)
    for letter in letters:
        pos = text.find(letter)
        context = text[max(0, pos - 20) : pos + 20]
        scores[letter] += sum(keyword.upper() in context for keyword in _CHOICE_KEYWORDS)
        scores[letter] += 2 if pos > len(text) * 0.7 else 0
        scores[letter] += 1 if pos < len(text) - 1 and text[pos + 1] in "。.!！,，" else 0
    return max(scores.items(), key=lambda kv: kv[1])[0]


def indel_ratio(a: str, b: str) -> float:
    """``Levenshtein.ratio``: ``1 - indel_distance / (len(a) + len(b))`` = ``2 LCS / (len(a) + len(b))``.

    Insertions and deletions cost 1, substitutions 2 (an InDel distance); two empty strings are
    identical (1.0). O(len(a) * len(b)) longest common subsequence, fine for short answers.
    """
    if not a and not b:
        return 1.0
    previous = [0] * (len(b) + 1)
    for ch in a:
        current = [0]
        for j, other in enumerate(b):
            current.append(previous[j] + 1 if ch == other else max(previous[j + 1], current[j]))
        previous = current
    return 2.0 * previous[-1] / (len(a) + len(b))


def numeric_match(answer: str, truth: str) -> float | None:
    """1.0 / 0.0 when both cleaned texts are numbers (equal or not), ``None`` when either is not."""
    try:
        return 1.0 if float(clean_text(answer)) == float(clean_text(truth)) else 0.0
    except ValueError:
        return None


def math_verify_equal(answer: str, truth: str) -> bool:
    """``float(verify(parse(answer), parse(truth))) > 0`` with any failure read as "not equal".

    The check VLM-R1's default accuracy and Visual-RFT's rewards run first, on raw text: it
    extracts the last mathematical expression of each side, so it can call two detection answers
    equal when their last numbers agree (an upstream behaviour the goldens show; kept on purpose).
    """
    try:
        from math_verify import parse, verify
    except ImportError as err:
        raise ImportError("this reward runs the authors' math_verify check: pip install 'math-verify==0.9.0' "
                          "(the zoo's 'perception' extra), or build it with math_verify=False") from err
    try:
        return float(verify(parse(answer), parse(truth))) > 0
    except Exception:  # noqa: BLE001 (upstream: `except Exception: pass`; math_verify raises on odd input, timeouts)
        return False


def fuzzy_accuracy(answer: str, truth: str, math_verify: bool = True) -> float:
    """VLM-R1's default accuracy; ``math_verify=False`` leaves out its first step.

    1.0 when :func:`math_verify_equal` says so. Otherwise a reference with a digit is compared numerically (falling back to the fuzzy ratio when either
    side is not a number); a reference that names an option letter needs the same letter; any
    other reference is matched by ``indel_ratio`` of the cleaned texts.
    """
    if math_verify and math_verify_equal(answer, truth):
        return 1.0
    if re.search(r"\d", truth):
        exact = numeric_match(answer, truth)
        return indel_ratio(clean_text(answer), clean_text(truth)) if exact is None else exact
    correct = extract_choice(truth)
    if correct:
        said = extract_choice(answer)
        return float(said == correct.upper()) if said else 0.0
    return indel_ratio(clean_text(answer), clean_text(truth))
