"""Text answers: exact match (raw or normalised) and edit-distance scores for OCR-style tasks.

``sample.target``: ``{"answer": "text"}`` or ``{"answer": ["ref 1", "ref 2"]}`` (best reference wins).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from rewards.base import RewardResult, SampleReward, require, text_of
from rewards.parsing import answer_span

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_text(text: str) -> str:
    """SQuAD's answer normalisation (lowercase, no punctuation, no articles, single spaces),
    after Unicode NFKC so full-width and composed characters compare equal."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(pred: str, ref: str) -> float:
    """SQuAD token F1 between two strings after :func:`normalize_text`."""
    p, r = normalize_text(pred).split(), normalize_text(ref).split()
    if not p or not r:
        return float(p == r)
    common = sum(min(p.count(t), r.count(t)) for t in set(p))
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(r)
    return 2 * precision * recall / (precision + recall)


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute, each cost 1), two-row dynamic programme."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def anls(prediction: str, references: Sequence[str], threshold: float = 0.5) -> float:
    """Average Normalised Levenshtein Similarity for one question (Biten et al., ICCV 2019, ST-VQA):
    ``max_ref (1 - lev/max(len)) `` after lowercasing and trimming, set to 0 below ``threshold``."""
    best = 0.0
    pred = " ".join(prediction.lower().split())
    for ref in references:
        ref = " ".join(ref.lower().split())
        longest = max(len(pred), len(ref))
        similarity = 1.0 if longest == 0 else 1.0 - levenshtein(pred, ref) / longest
        best = max(best, similarity if similarity >= threshold else 0.0)
    return best


def char_error_rate(prediction: str, reference: str) -> float:
    """CER = edits / reference length (can exceed 1 for long garbage); 0 for two empty strings."""
    if not reference:
        return float(bool(prediction))
    return levenshtein(prediction, reference) / len(reference)


def _references(target: Mapping[str, Any], name: str) -> list[str]:
    refs = require(target, "answer", name)
    refs = [refs] if isinstance(refs, str) else list(refs)
    if not refs or not all(isinstance(r, str) for r in refs):
        raise ValueError(f"reward {name!r}: target['answer'] must be a string or a list of strings, got {refs!r}")
    return refs


class ExactMatch(SampleReward):
    """1.0 when the answer equals a reference, after :func:`normalize_text` when ``normalize``."""

    component_names = ("correct",)

    def __init__(self, normalize: bool = True, tag: str = "answer", name: str = "exact-match") -> None:
        self.normalize, self.tag, self.name = normalize, tag, name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        prep = normalize_text if self.normalize else str.strip
        pred = prep(answer_span(text_of(prediction), self.tag))
        hit = float(any(pred == prep(r) for r in _references(target, self.name)))
        return RewardResult(hit, {"correct": hit})


class EditSimilarity(SampleReward):
    """Graded text similarity: ``"anls"`` (thresholded, as ST-VQA/DocVQA score) or ``"cer"``
    (``max(0, 1 - CER)``, as OCR papers report). Inputs longer than ``max_chars`` are cut
    there: the DP is quadratic and a runaway generation must not stall the reward."""

    component_names = ("similarity",)

    def __init__(self, metric: str = "anls", threshold: float = 0.5, max_chars: int = 4000,
                 tag: str = "answer", name: str = "edit-similarity") -> None:
        if metric not in ("anls", "cer"):
            raise ValueError(f"metric must be 'anls' or 'cer', got {metric!r}")
        self.metric, self.threshold, self.max_chars, self.tag, self.name = metric, threshold, max_chars, tag, name

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        pred = answer_span(text_of(prediction), self.tag)[: self.max_chars]
        refs = [r[: self.max_chars] for r in _references(target, self.name)]
        if self.metric == "anls":
            score = anls(pred, refs, self.threshold)
        else:
            score = max(max(0.0, 1.0 - char_error_rate(pred, r)) for r in refs)
        return RewardResult(score, {"similarity": score})
