"""BLEU / ROUGE-L against pycocoevalcap 1.2's own numbers (run in a scratch venv, Python 3.11)."""

from __future__ import annotations

import pytest

from rewards.caption import coco_bleu, coco_rouge_l, rouge_l

REFS = {
    "a": ["the liver is normal in size with homogeneous echotexture"],
    "b": ["thyroid nodule in the right lobe . TI-RADS level 3 , benign .", "a benign nodule in the right lobe"],
    "c": ["fetal phantom ultrasound image showing standard plane for femur length"],
    "d": ["no  free fluid is seen"],
    "e": ["gallbladder wall is smooth"],
}
HYPS = {
    "a": ["the liver is normal in size"],
    "b": ["thyroid nodule in the left lobe . TI-RADS level 4 , benign ."],
    "c": ["fetal phantom ultrasound image showing standard diagnostic plane for abdominal circumference measurement"],
    "d": ["no free fluid  is seen"],
    "e": ["kidney"],
}
# pycocoevalcap 1.2: Bleu(4).compute_score(REFS, HYPS) and Rouge().compute_score(REFS, HYPS)
GOLD_BLEU = [0.72772748173455, 0.6851693691212429, 0.6221126395613799, 0.5477864301752781]
GOLD_BLEU4_PER_CASE = [0.6065306594674942, 0.4758733095628693, 0.4692470063653536, 0.9999999994791672,
                       2.799732596833058e-10]
GOLD_ROUGE = 0.6382066035230592
GOLD_ROUGE_PER_CASE = [0.7721518987341772, 0.8461538461538461, 0.7393939393939394, 0.8333333333333334, 0.0]


def test_bleu_matches_pycocoevalcap() -> None:
    corpus, per_case = coco_bleu(REFS, HYPS)
    assert corpus == pytest.approx(GOLD_BLEU, rel=1e-12)
    assert per_case[3] == pytest.approx(GOLD_BLEU4_PER_CASE, rel=1e-9)


def test_rouge_l_matches_pycocoevalcap() -> None:
    mean, per_case = coco_rouge_l(REFS, HYPS)
    assert mean == pytest.approx(GOLD_ROUGE, rel=1e-12)
    assert per_case == pytest.approx(GOLD_ROUGE_PER_CASE, rel=1e-12)


def test_empty_hypothesis_scores_zero_without_dividing_by_zero() -> None:
    assert rouge_l("", ["a b c"]) == 0.0
    corpus, _ = coco_bleu({1: ["a b c"]}, {1: [""]})
    assert corpus[3] < 1e-10


def test_mismatched_cases_are_refused() -> None:
    with pytest.raises(ValueError, match="same case ids"):
        coco_bleu({1: ["a"]}, {2: ["a"]})
    with pytest.raises(ValueError, match="exactly one hypothesis"):
        coco_rouge_l({1: ["a"]}, {1: ["a", "b"]})
