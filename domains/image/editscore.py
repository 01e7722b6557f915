"""EditScore: the judge's prompts, the parsing of its JSON and the score maths, as the authors' package.

EditScore (arXiv 2509.23909; github VectorSpaceLab/EditScore, package ``editscore``, read at commit
6e0f1b9) asks a Qwen2.5-VL (LoRA ``EditScore/EditScore-7B``) two questions per edited image:

* **SC** (semantic consistency), original then edited image: ``[editing success, over-editing]``;
* **PQ** (perceptual quality): ``[naturalness, artifacts]``.

Both on a 0-``score_range`` scale (25: the package replaces every ``"10"`` of the rule texts by it).
One pass of ``EditScore.batch_evaluate`` (the path the authors' RL reward server runs) is::

    SC = min(SC scores) / (R / 10);  PQ = min(PQ scores) / (R / 10)      # back to 0-10
    no score parsed      -> that list is [R / 2] first (so 5.0 after rescaling)
    SC or PQ outside [0, 10] after rescaling -> set to R / 2 (12.5 for R = 25: not rescaled, as in their code)
    O = sqrt(SC * PQ)

``num_pass`` passes (seeds ``seed + i``) are averaged: ``average_last`` (their default) averages
``O``; ``average_first`` takes ``sqrt(mean SC * mean PQ)``. The RL reward is ``O / 10``
(``examples/OmniGen2-RL/reward_server/reward_server.py``).

The parser mirrors ``editscore/json_parser.py: parse_vlm_output_to_dict`` (stdlib ``json`` and
``re``): the greedy ``{...}`` span, then the raw text, a quote/keyword fix and a fix of unescaped
quotes inside ``"reasoning"``, each tried on that span; then a regex fallback that rebuilds the
object from the numbers after ``"score"``. Two places differ, each on purpose and tested:

* a score list holding a non-numeric string (``["high", 7]``) makes their ``float()`` raise out of
  ``batch_evaluate``; here it is a parse failure with its reason (scores ``[]``, so the neutral 5.0);
* a non-finite score (``NaN``, which Python's ``json`` reads) propagates through their maths as NaN;
  the maths here does the same (:func:`pass_scores`), and :class:`EditScoreReward` turns a NaN into
  ``None`` (not computed) with the reason, rather than feeding NaN to an advantage.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

#: The authors' default and the value their released reward models were trained for.
SCORE_RANGE = 25

# --- prompts: editscore/vie_prompts.py (VIEScore-derived), joined as EditScore.__init__ joins them ---------
_CONTEXT = """You are a professional digital artist. You will have to evaluate the effectiveness of the AI-generated image(s) based on given rules.
All the input images are AI-generated. All human in the images are AI-generated too. so you need not worry about the privacy confidentials.

IMPORTANT: You will have to give your output in this way (Keep your reasoning concise and short.):
{
"reasoning" : "...",
"score" : [...]
}
"""

_TWO_IMAGE_EDIT_RULE = """RULES:

Two images will be provided: The first being the original AI-generated image and the second being an edited version of the first.
The objective is to evaluate how successfully the editing instruction has been executed in the second image.

Note that sometimes the two images might look identical due to the failure of image edit.
"""

_SC_RULE = """
From scale 0 to 10: 
A score from 0 to 10 will be given based on the success of the editing. (0 indicates that the scene in the edited image does not follow the editing instruction at all. 10 indicates that the scene in the edited image follow the editing instruction text perfectly.)
A second score from 0 to 10 will rate the degree of overediting in the second image. (0 indicates that the scene in the edited image is completely different from the original. 10 indicates that the edited image can be recognized as a minimal edited yet effective version of original.)
Put the score in a list such that output score = [score1, score2], where 'score1' evaluates the editing success and 'score2' evaluates the degree of overediting.

Editing instruction: <instruction>
"""

_PQ_RULE = """RULES:

The image is an AI-generated image.
The objective is to evaluate how successfully the image has been generated.

From scale 0 to 10: 
A score from 0 to 10 will be given based on image naturalness. 
(
    0 indicates that the scene in the image does not look natural at all or give a unnatural feeling such as wrong sense of distance, or wrong shadow, or wrong lighting. 
    10 indicates that the image looks natural.
)
A second score from 0 to 10 will rate the image artifacts. 
(
    0 indicates that the image contains a large portion of distortion, or watermark, or scratches, or blurred faces, or unusual body parts, or subjects not harmonized. 
    10 indicates the image has no artifacts.
)
Put the score in a list such that output score = [naturalness, artifacts]
"""


def sc_prompt(instruction: str, score_range: int = SCORE_RANGE) -> str:
    """The SC question for one editing instruction (``"10"`` -> ``score_range`` in the rule, as the package does)."""
    template = "\n".join([_CONTEXT, _TWO_IMAGE_EDIT_RULE, _SC_RULE.replace("10", str(score_range))])
    return template.replace("<instruction>", instruction)


def pq_prompt(score_range: int = SCORE_RANGE) -> str:
    """The PQ question (the same for every image)."""
    return "\n".join([_CONTEXT, _PQ_RULE.replace("10", str(score_range))])


def chat_text(prompt: str, num_images: int) -> str:
    """The exact model input the authors build by hand (``mllm_tools/qwen25vl.py: apply_chat_template``):
    Qwen's default system turn, then ``<imgN>: `` before each image's vision tokens, then the prompt."""
    images = "".join(f"<img{i}>: <|vision_start|><|image_pad|><|vision_end|>" for i in range(1, num_images + 1))
    return (f"<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n{images}{prompt}"
            "<|im_end|>\n<|im_start|>assistant\n")  # fmt: skip


# --- parsing: editscore/json_parser.py --------------------------------------------------------------------
@dataclass(frozen=True)
class JudgeOutput:
    """One parsed judge answer.

    Attributes:
        scores: the numbers of its ``"score"`` list (``[]`` when none could be read).
        reasoning: its ``"reasoning"`` text, or why parsing failed.
        stage: how it was read: ``json``, ``quotes``, ``reasoning-quotes``, ``fallback`` or ``failed``.
    """

    scores: list[float]
    reasoning: str
    stage: str

    @property
    def failed(self) -> bool:
        return not self.scores


def _fix_quotes(text: str) -> str:
    """Python literals to JSON; single quotes to double when that alone makes valid JSON; else quote bare keys."""
    text = re.sub(r"\bNone\b", "null", re.sub(r"\bFalse\b", "false", re.sub(r"\bTrue\b", "true", text)))
    swapped = text.replace("'", '"')
    try:
        json.loads(swapped)
        return swapped
    except json.JSONDecodeError:
        return re.sub(r"([\{\s,])(\w+)\s*:", r'\1"\2":', text)


_REASONING_VALUE = re.compile(r'("reasoning"\s*:\s*")(.*?)(?="\s*[,}])', re.DOTALL)


def _escape_reasoning_quotes(text: str) -> str:
    """Escape double quotes inside the ``"reasoning"`` value (its end is a quote before ``,`` or ``}``)."""
    return _REASONING_VALUE.sub(lambda m: m.group(1) + m.group(2).replace('"', '\\"'), text)


_NUMBER = re.compile(r"[-+]?\d*\.?\d+")


def _rebuild(text: str) -> dict[str, Any]:
    """Last resort: the reasoning between its key and ``"score"``, and every number after ``"score"``."""
    match = re.search(r'["\']reasoning["\']\s*:\s*["\']?(.*?)["\']?\s*,\s*["\']score["\']', text, re.DOTALL | re.IGNORECASE)
    score_key = re.search(r'["\']score["\']\s*:', text, re.IGNORECASE)
    if match:
        reasoning = match.group(1).strip().replace('\\"', '"')
    else:
        reasoning = text[: score_key.start()].strip() if score_key else text
    area = re.search(r'["\']score["\']\s*:\s*(.*)', text, re.DOTALL | re.IGNORECASE)
    return {"reasoning": reasoning, "score": [float(n) for n in _NUMBER.findall(area.group(1) if area else text)]}


class _NotAScore(ValueError):
    """A score entry that is neither a number nor a numeric string."""


def _validated(data: Any) -> tuple[list[float], str] | None:
    """``(scores, reasoning)`` from a decoded object, ``None`` when it carries neither (the authors' rule)."""
    if not isinstance(data, dict):
        return None
    reasoning = next((data[k] for k in ("reasoning", "reason", "rationale") if isinstance(data.get(k), str)), "")
    value = data.get("score")
    scores: list[float] = []
    if isinstance(value, list):
        for item in value:
            if isinstance(item, (int, float, str)):  # bool is an int, as in their check
                try:
                    scores.append(float(item))
                except ValueError:
                    raise _NotAScore(f"score entry {item!r} is not a number") from None
    elif isinstance(value, (int, float)):
        scores = [float(value)]
    return (scores, reasoning) if reasoning or scores else None


_STAGES = (("json", lambda s: s), ("quotes", _fix_quotes), ("reasoning-quotes", _escape_reasoning_quotes))


def parse_judge_output(text: str) -> JudgeOutput:
    """Read one judge answer as ``parse_vlm_output_to_dict`` does; never raises.

    >>> parse_judge_output('```json\\n{"reasoning": "ok", "score": [20, 18]}\\n```').scores
    [20.0, 18.0]
    """
    if not isinstance(text, str) or not text.strip():
        return JudgeOutput([], "Input was empty.", "failed")
    span = re.search(r"\{.*\}", text, re.DOTALL)
    target = span.group(0) if span else text.strip()
    for stage, fix in _STAGES:
        try:
            found = _validated(json.loads(fix(target)))
        except (json.JSONDecodeError, TypeError):
            continue
        except _NotAScore as err:
            return JudgeOutput([], f"{err} (the authors' parser raises here)", "failed")
        if found is not None:
            return JudgeOutput(found[0], found[1], stage)
    try:
        found = _validated(_rebuild(target))
    except (_NotAScore, ValueError, OverflowError):
        found = None
    if found is not None:
        return JudgeOutput(found[0], found[1], "fallback")
    return JudgeOutput([], f"Failed to parse after all strategies. Original output: {text!r}", "failed")


def parse_editscore_answer(text: str, question: str = "") -> dict[str, Any]:
    """The entry's parser for a single ``pipe(image, question)`` call: ``answer`` is the reasoning, ``scores``
    the raw 0-``score_range`` numbers; ``parse_error`` says why when none could be read."""
    parsed = parse_judge_output(text)
    return {"answer": parsed.reasoning, "scores": parsed.scores,
            "parse_error": parsed.reasoning if parsed.failed else None}  # fmt: skip


# --- score maths: EditScore.batch_evaluate -----------------------------------------------------------------
@dataclass(frozen=True)
class PassScores:
    """One pass on one edited image, on the 0-10 scale.

    Attributes:
        sc, pq, overall: ``SC``, ``PQ`` and ``O = sqrt(SC * PQ)``.
        sc_neutral, pq_neutral: that answer had no score, so ``R / 2`` stood in.
        sc_out_of_range, pq_out_of_range: the rescaled score left [0, 10] and was replaced by ``R / 2``.
    """

    sc: float
    pq: float
    overall: float
    sc_neutral: bool = False
    pq_neutral: bool = False
    sc_out_of_range: bool = False
    pq_out_of_range: bool = False


def _rescaled(scores: Sequence[float], score_range: int) -> tuple[float, bool, bool]:
    neutral = len(scores) == 0
    value = min(scores if scores else [score_range / 2]) / (score_range / 10)  # builtin min: NaN order as theirs
    out_of_range = value < 0 or value > 10
    return (score_range / 2 if out_of_range else value), neutral, out_of_range


def pass_scores(sc_scores: Sequence[float], pq_scores: Sequence[float], score_range: int = SCORE_RANGE) -> PassScores:
    """``SC``, ``PQ`` and ``O`` of one pass from the two parsed score lists (module docstring for the rules)."""
    sc, sc_neutral, sc_out = _rescaled(sc_scores, score_range)
    pq, pq_neutral, pq_out = _rescaled(pq_scores, score_range)
    return PassScores(sc, pq, math.sqrt(sc * pq), sc_neutral, pq_neutral, sc_out, pq_out)


Reduction = Literal["average_last", "average_first"]


@dataclass(frozen=True)
class EditScoreResult:
    """The passes of one edited image, reduced.

    Attributes:
        sc, pq: mean ``SC`` and ``PQ`` over the passes (0-10).
        overall: ``O`` (0-10): mean of the passes' ``O`` (``average_last``) or ``sqrt(sc * pq)`` (``average_first``).
        passes: the per-pass scores.
        raw: the first pass's two raw answers (SC, PQ), kept for inspection as the authors keep them.
    """

    sc: float
    pq: float
    overall: float
    passes: tuple[PassScores, ...]
    raw: tuple[str, str] = ("", "")
    reasoning: tuple[str, str] = ("", "")


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)  # NaN in, NaN out, as numpy's mean in their code


def reduce_passes(passes: Sequence[PassScores], reduction: Reduction = "average_last") -> tuple[float, float, float]:
    """``(SC, PQ, O)`` over several passes, with the package's two averaging modes."""
    if not passes:
        raise ValueError("reduce_passes needs at least one pass")
    if reduction not in ("average_last", "average_first"):
        raise ValueError(f"unknown reduction {reduction!r}; choose 'average_last' or 'average_first'")
    sc, pq = _mean([p.sc for p in passes]), _mean([p.pq for p in passes])
    overall = math.sqrt(sc * pq) if reduction == "average_first" else _mean([p.overall for p in passes])
    return sc, pq, overall


def score_answers(
    sc_answers: Sequence[str], pq_answers: Sequence[str], score_range: int = SCORE_RANGE,
    reduction: Reduction = "average_last",
) -> EditScoreResult:
    """One image's result from its judge answers, one SC and one PQ answer per pass."""
    if len(sc_answers) != len(pq_answers) or not sc_answers:
        raise ValueError(f"need one PQ answer per SC answer, got {len(sc_answers)} and {len(pq_answers)}")
    parsed = [(parse_judge_output(s), parse_judge_output(p)) for s, p in zip(sc_answers, pq_answers)]
    passes = tuple(pass_scores(s.scores, p.scores, score_range) for s, p in parsed)
    sc, pq, overall = reduce_passes(passes, reduction)
    first_sc, first_pq = parsed[0]
    return EditScoreResult(sc, pq, overall, passes, (sc_answers[0], pq_answers[0]),
                           (first_sc.reasoning, first_pq.reasoning))  # fmt: skip
