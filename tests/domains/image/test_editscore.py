"""EditScore parsing and score maths against numbers from the authors' package.

Goldens (``editscore_golden.json``): VectorSpaceLab/EditScore at commit 6e0f1b9, ``editscore/__init__.py:
EditScore.batch_evaluate`` and ``editscore/json_parser.py: parse_vlm_output_to_dict`` run unchanged on the
judge answers in the file's ``cases`` (fenced, single-quoted, bare keys, unescaped quotes, truncated,
out-of-range, NaN, Infinity, prose, numeric strings, alternative keys, nested lists), with a stand-in model
returning those answers: one pass, three passes ``average_last``, three passes ``average_first`` (pass k
of image i answers with case ``(i + k) % n``). ``null`` stands for NaN.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from domains.image.editscore import parse_judge_output, pass_scores, pq_prompt, reduce_passes, sc_prompt, score_answers
from domains.image.editscore_reward import EditScoreReward

GOLDEN = json.loads((Path(__file__).parent / "editscore_golden.json").read_text())
CASES = GOLDEN["cases"]
RUNS = [("single", 1, "average_last"), ("average_last_3", 3, "average_last"), ("average_first_3", 3, "average_first")]


def _close(mine: float, theirs: float | None) -> bool:
    return math.isnan(mine) if theirs is None else abs(mine - theirs) < 1e-12


@pytest.mark.parametrize(("key", "passes", "reduction"), RUNS)
@pytest.mark.parametrize("index", range(len(CASES)))
def test_scores_match_the_authors_batch_evaluate(key, passes, reduction, index):
    n = len(CASES)
    sc = [CASES[(index + k) % n][0] for k in range(passes)]
    pq = [CASES[(index + k) % n][1] for k in range(passes)]
    result = score_answers(sc, pq, reduction=reduction)
    expected = GOLDEN[key][index]
    assert all(_close(m, t) for m, t in zip((result.sc, result.pq, result.overall), expected)), (CASES[index], expected)


def test_out_of_range_is_replaced_unscaled_and_parse_failure_is_neutral():
    """Their code: an out-of-range SC/PQ becomes R/2 = 12.5 (not rescaled); an unreadable answer 5.0."""
    high = pass_scores([30, 20], [-3, 20])
    assert (high.sc, high.pq, high.pq_out_of_range) == (8.0, 12.5, True) and high.overall == pytest.approx(10.0)
    empty = pass_scores([], [])
    assert (empty.sc, empty.pq, empty.sc_neutral) == (5.0, 5.0, True)


def test_nan_order_follows_pythons_min_as_theirs_does():
    assert math.isnan(pass_scores([math.nan, 20], [20, 20]).sc)
    assert pass_scores([20, math.nan], [20, 20]).sc == 8.0


def test_a_non_numeric_score_is_a_parse_failure_not_an_exception():
    """Their parser raises ValueError out of batch_evaluate here; the zoo reports a failure with the reason."""
    parsed = parse_judge_output('{"reasoning": "x", "score": ["high", 7]}')
    assert parsed.failed and "'high' is not a number" in parsed.reasoning


@pytest.mark.parametrize("text", ["", "   ", "{", "}{", "null", "[1, 2]", "{\"score\": {}}", "\x00" * 5, "9" * 400])
def test_garbage_never_raises(text):
    parsed = parse_judge_output(text)
    assert isinstance(parsed.scores, list) and isinstance(parsed.reasoning, str)


def test_reductions_and_bad_arguments():
    passes = [pass_scores([25, 25], [10, 25]), pass_scores([5, 25], [25, 25])]
    assert reduce_passes(passes, "average_last")[2] == pytest.approx((math.sqrt(40) + math.sqrt(20)) / 2)
    assert reduce_passes(passes, "average_first")[2] == pytest.approx(math.sqrt(6 * 7))
    with pytest.raises(ValueError, match="reduction"):
        reduce_passes(passes, "median")
    with pytest.raises(ValueError, match="one PQ answer per SC answer"):
        score_answers(["{}"], [])


def test_prompts_use_the_score_range_and_the_instruction():
    question = sc_prompt("make the sky pink")
    assert "From scale 0 to 25" in question and "Editing instruction: make the sky pink" in question
    assert "score2" in question and "10" not in question.split("RULES")[-1]
    assert "[naturalness, artifacts]" in pq_prompt() and "0 to 25" in pq_prompt()


class FakeJudge:
    """Records the batched calls and answers from a script (SC answers first, then PQ, as the reward asks)."""

    def __init__(self, answers):
        self.answers, self.calls = answers, []

    def ask(self, image_sets, prompts, *, seed=None, batch_size=8):
        self.calls.append((len(image_sets), [len(s) for s in image_sets], seed, prompts))
        return self.answers[len(self.calls) - 1]


def test_reward_batches_each_pass_and_returns_o_over_ten():
    good, bad = '{"reasoning": "ok", "score": [20, 25]}', "no json at all"
    nan = '{"reasoning": "?", "score": [NaN, 1]}'
    judge = FakeJudge([[good, bad, nan, good, good, good], [good, good, nan, good, good, good]])
    reward = EditScoreReward(judge, num_pass=2)
    samples = [{"instruction": f"edit {i}", "image": "src.png"} for i in range(3)]
    results = reward(["a.png", "b.png", "c.png"], samples)
    assert [c[2] for c in judge.calls] == [42, 43] and all(c[0] == 6 for c in judge.calls)
    assert judge.calls[0][1] == [2] * 6, "the batched path shows the PQ judge the source and the edited image"
    assert "Editing instruction: edit 1" in judge.calls[0][3][1] and judge.calls[0][3][3] == pq_prompt()
    assert results[0].score == pytest.approx(score_answers([good, good], [good, good]).overall / 10)
    assert results[1].score == pytest.approx(score_answers([bad, good], [good, good]).overall / 10)
    assert results[1].components["parse_failed"] == 0.25 and "neutral" in results[1].error
    assert results[2].score is None and "non-finite" in results[2].error
    assert set(results[0].components) == set(results[2].components)


def test_reward_can_show_pq_the_edited_image_only():
    judge = FakeJudge([['{"reasoning": "", "score": [25, 25]}'] * 2])
    EditScoreReward(judge, pq_images="edited")(["e.png"], [{"instruction": "x", "image": "s.png"}])
    assert judge.calls[0][1] == [2, 1]
    with pytest.raises(ValueError, match="pq_images"):
        EditScoreReward(judge, pq_images="both")
