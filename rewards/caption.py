"""Caption metrics: BLEU-1..4 and ROUGE-L exactly as ``pycocoevalcap`` 1.2 computes them.

They live in ``rewards`` because they are reward maths any domain may need (report and caption
rewards, their benchmarks), and domains may not import each other. U2-Bench scores report
generation with ``pycocoevalcap.bleu.Bleu(4)`` and
``pycocoevalcap.rouge.Rouge()`` (dolphin-sound/u2-bench-evalkit,
``vlmeval/eval_func/report_eval.py``). pycocoevalcap is a 100 MB wheel (it bundles the
Java jars of METEOR and SPICE) for two small pure-Python scorers, so this module
re-implements those two from their definitions (``bleu/bleu_scorer.py`` and
``rouge/rouge.py`` of pycocoevalcap 1.2) and the tests compare against numbers produced
by pycocoevalcap 1.2 itself. The quirks that change numbers are kept on purpose:

* BLEU tokenises with ``str.split()``; ROUGE-L with ``str.split(" ")`` (so double spaces
  make empty tokens, and an empty hypothesis is one empty token).
* BLEU is corpus-level: clipped n-gram counts and lengths are summed over all cases,
  the effective reference length is the "closest" one per case, and the smoothing
  constants ``tiny=1e-15`` / ``small=1e-9`` keep a zero count from dividing by zero.
* ROUGE-L is the F-measure with ``beta=1.2`` against the best precision and best recall
  over the references, averaged over cases.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_TINY = 1e-15
_SMALL = 1e-9
ROUGE_BETA = 1.2


def _ngrams(words: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    counts: Counter[tuple[str, ...]] = Counter()
    for k in range(1, n + 1):
        for i in range(len(words) - k + 1):
            counts[tuple(words[i : i + k])] += 1
    return counts


@dataclass(frozen=True)
class _BleuStats:
    """Sufficient statistics of one case: lengths and clipped n-gram matches per order."""

    testlen: int
    reflen: int
    guess: tuple[int, ...]
    correct: tuple[int, ...]


def _case_stats(hypothesis: str, references: Sequence[str], n: int) -> _BleuStats:
    max_ref: dict[tuple[str, ...], int] = {}
    ref_lens = []
    for ref in references:
        words = ref.split()
        ref_lens.append(len(words))
        for gram, count in _ngrams(words, n).items():
            max_ref[gram] = max(max_ref.get(gram, 0), count)
    words = hypothesis.split()
    testlen = len(words)
    # "closest" reference length; ties go to the shorter one, as min() over (diff, len) does.
    reflen = min((abs(length - testlen), length) for length in ref_lens)[1]
    correct = [0] * n
    for gram, count in _ngrams(words, n).items():
        correct[len(gram) - 1] += min(max_ref.get(gram, 0), count)
    guess = tuple(max(0, testlen - k + 1) for k in range(1, n + 1))
    return _BleuStats(testlen, reflen, guess, tuple(correct))


def _bleu_from(correct: Sequence[float], guess: Sequence[float], testlen: float, reflen: float) -> list[float]:
    scores = []
    product = 1.0
    for k in range(len(correct)):
        product *= (correct[k] + _TINY) / (guess[k] + _SMALL)
        scores.append(product ** (1.0 / (k + 1)))
    ratio = (testlen + _TINY) / (reflen + _SMALL)
    if ratio < 1:
        scores = [s * math.exp(1 - 1 / ratio) for s in scores]
    return scores


def _check(refs: Mapping[object, Sequence[str]], hyps: Mapping[object, Sequence[str]]) -> None:
    if set(refs) != set(hyps):
        missing = sorted(map(str, set(refs) ^ set(hyps)))[:5]
        raise ValueError(f"references and hypotheses must have the same case ids; these differ: {missing}")
    for key, hyp in hyps.items():
        if len(hyp) != 1:
            raise ValueError(f"case {key!r} must have exactly one hypothesis, got {len(hyp)}")
        if len(refs[key]) < 1:
            raise ValueError(f"case {key!r} has no reference text")


def coco_bleu(
    refs: Mapping[object, Sequence[str]], hyps: Mapping[object, Sequence[str]], n: int = 4
) -> tuple[list[float], list[list[float]]]:
    """Corpus BLEU-1..n and per-case BLEU-1..n, as ``Bleu(n).compute_score(refs, hyps)``.

    Args:
        refs: case id -> reference texts (one or more).
        hyps: case id -> a one-element list with the generated text.

    Returns:
        ``(corpus, per_case)``: ``corpus[k]`` is BLEU-(k+1) in [0, 1]; ``per_case[k][i]`` is the
        sentence-level BLEU-(k+1) of the i-th case in the order of ``refs``.
    """
    _check(refs, hyps)
    stats = [_case_stats(hyps[key][0], refs[key], n) for key in refs]
    per_case: list[list[float]] = [[] for _ in range(n)]
    for s in stats:
        for k, value in enumerate(_bleu_from(s.correct, s.guess, s.testlen, s.reflen)):
            per_case[k].append(value)
    corpus = _bleu_from(
        [sum(s.correct[k] for s in stats) for k in range(n)],
        [sum(s.guess[k] for s in stats) for k in range(n)],
        sum(s.testlen for s in stats),
        sum(s.reflen for s in stats),
    )
    return corpus, per_case


def _lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (one row of the DP table kept at a time)."""
    if len(a) < len(b):
        a, b = b, a
    previous = [0] * (len(b) + 1)
    for token in a:
        current = [0]
        for j, other in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if token == other else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def rouge_l(hypothesis: str, references: Sequence[str], beta: float = ROUGE_BETA) -> float:
    """Sentence ROUGE-L F-measure of pycocoevalcap's ``Rouge.calc_score``."""
    cand = hypothesis.split(" ")
    precisions, recalls = [], []
    for ref in references:
        tokens = ref.split(" ")
        lcs = _lcs_length(tokens, cand)
        precisions.append(lcs / len(cand))
        recalls.append(lcs / len(tokens))
    p, r = max(precisions), max(recalls)
    if p == 0 or r == 0:
        return 0.0
    return (1 + beta**2) * p * r / (r + beta**2 * p)


def coco_rouge_l(
    refs: Mapping[object, Sequence[str]], hyps: Mapping[object, Sequence[str]]
) -> tuple[float, list[float]]:
    """Mean and per-case ROUGE-L, as ``Rouge().compute_score(refs, hyps)``."""
    _check(refs, hyps)
    scores = [rouge_l(hyps[key][0], refs[key]) for key in refs]
    return sum(scores) / len(scores), scores
