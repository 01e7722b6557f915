"""Rejection-sampling SFT data: the policy's own completions that its reward accepts, as SFT targets.

Curr-ReFT follows its three RL stages with an SFT pass on the RL model's own accepted answers
(ding523/Curr_REFT ``train_code/sft/reject_sft/reject_sft_all.sh`` trains ms-swift on a prepared
``cat_all_formatted.jsonl``; the selection that produced that file is not in the released code,
only its output, on the authors' Hugging Face dataset). The selection here is the zoo's reading of
that stage: sample several completions per prompt, score them with the stage's reward, and keep
those at or above ``threshold``, at most ``per_prompt`` distinct texts per prompt, in sampling order.

The kept samples carry the completion in ``target["sft_answer"]``; the ``rejection-sample`` answer
format hands it to the ``vlm-sft`` engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rewards.base import Reward
from zoo.data import Sample


def rejection_sample(
    samples: Sequence[Sample],
    completions: Sequence[Sequence[str]],
    reward: Reward,
    *,
    threshold: float = 1.0,
    per_prompt: int = 1,
) -> list[Sample]:
    """SFT samples from the completions of ``samples`` that ``reward`` scores at least ``threshold``.

    Args:
        samples: the prompts with their ground truth.
        completions: for each sample, the policy's sampled completions (any number, possibly none).
        reward: scores a completion against its sample (a registered reward, e.g. ``curr-reft``).
        threshold: the lowest accepted score; an unscorable completion (score ``None``) is rejected.
        per_prompt: most completions kept per prompt (duplicates count once).

    Returns:
        One sample per kept completion: the prompt's sample with ``target["sft_answer"]`` set and
        ``meta["rejection_score"]`` the score it got, in prompt order then sampling order.
    """
    if len(completions) != len(samples):
        raise ValueError(f"{len(completions)} completion lists for {len(samples)} samples; give one list per sample")
    if per_prompt < 1:
        raise ValueError(f"per_prompt must be at least 1, got {per_prompt}")
    kept: list[Sample] = []
    for sample, texts in zip(samples, completions):
        if not texts:
            continue
        results = reward(list(texts), [sample] * len(texts))
        chosen: dict[str, float] = {}
        for text, result in zip(texts, results):
            if len(chosen) == per_prompt:
                break
            if result.score is not None and result.score >= threshold and text not in chosen:
                chosen[text] = result.score
        for i, (text, score) in enumerate(chosen.items()):
            kept.append(replace(sample, id=f"{sample.id}-rs{i}", target={**sample.target, "sft_answer": text},
                                meta={**sample.meta, "rejection_score": score}))  # fmt: skip
    return kept


def accepted_answer(sample: Sample) -> str:
    """The ``rejection-sample`` answer format: the accepted completion of a :func:`rejection_sample` sample."""
    if "sft_answer" not in sample.target:
        raise KeyError(f"sample {sample.id!r} has no target['sft_answer']: build the data with "
                       "domains.perception.rejection_sft.rejection_sample")  # fmt: skip
    return str(sample.target["sft_answer"])
