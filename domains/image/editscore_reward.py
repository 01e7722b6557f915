"""The ``editscore`` reward: edited images judged by EditScore, ``O / 10`` in [0, 1].

Predictions are the edited images; ``sample.target`` holds ``instruction`` and ``image`` (the source
image). Per pass, every sample's SC and PQ questions go to the judge in one batched call, with the seed
``seed + pass`` as the authors' ``batch_evaluate`` seeds its passes; the answers are read and combined
by :mod:`domains.image.editscore`. As in that function, the PQ question shows the judge every image of
the sample (source, then edited); ``pq_images="edited"`` shows the edited image alone, as their
single-sample ``evaluate`` does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from domains.image.editscore import SCORE_RANGE, Reduction, pq_prompt, sc_prompt, score_answers
from rewards.base import RewardResult, check_lengths, require, target_of

COMPONENTS = ("sc", "pq", "overall", "parse_failed", "out_of_range")


class EditScoreReward:
    """EditScore as a reward (callable class: pickles, loads its judge on first use).

    Args:
        judge: registry name of the judge entry, or a loaded judge with ``ask(image_sets, prompts, seed=...)``.
        num_pass: judge passes averaged per image (the authors' RL server: 1; their avg4/avg8 configs: 4, 8).
        reduction: ``average_last`` (mean of per-pass O) or ``average_first`` (sqrt of mean SC x mean PQ).
        score_range: the scale the judge was trained on (25).
        seed: seed of the first pass (42 in the authors' server configs).
        batch_size: questions per generate call.
        pq_images: ``all`` (the batched path's behaviour) or ``edited``.
    """

    name = "editscore"

    def __init__(
        self, judge: str | Any = "editscore-7b", *, num_pass: int = 1, reduction: Reduction = "average_last",
        score_range: int = SCORE_RANGE, seed: int = 42, batch_size: int = 8,
        pq_images: Literal["all", "edited"] = "all",
    ) -> None:
        if num_pass < 1:
            raise ValueError(f"num_pass must be at least 1, got {num_pass}")
        if pq_images not in ("all", "edited"):
            raise ValueError(f"pq_images must be 'all' or 'edited', got {pq_images!r}")
        self.judge, self.num_pass, self.reduction = judge, num_pass, reduction
        self.score_range, self.seed, self.batch_size, self.pq_images = score_range, seed, batch_size, pq_images

    def _judge(self) -> Any:
        if isinstance(self.judge, str):
            import zoo

            self.judge = zoo.load(self.judge)
        return self.judge

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        targets = [target_of(s) for s in samples]
        instructions = [str(require(t, "instruction", self.name)) for t in targets]
        sources = [require(t, "image", self.name) for t in targets]
        sc_sets = [[src, edited] for src, edited in zip(sources, predictions)]
        pq_sets = sc_sets if self.pq_images == "all" else [[edited] for edited in predictions]
        questions = [sc_prompt(i, self.score_range) for i in instructions] + [pq_prompt(self.score_range)] * len(sc_sets)
        judge, n = self._judge(), len(predictions)
        answers = [judge.ask(sc_sets + pq_sets, questions, seed=self.seed + k, batch_size=self.batch_size)
                   for k in range(self.num_pass)]  # fmt: skip
        return [self._result([a[i] for a in answers], [a[n + i] for a in answers]) for i in range(n)]

    def _result(self, sc_answers: list[str], pq_answers: list[str]) -> RewardResult:
        result = score_answers(sc_answers, pq_answers, self.score_range, self.reduction)
        passes = result.passes
        components = {
            "sc": result.sc, "pq": result.pq, "overall": result.overall,
            "parse_failed": sum(p.sc_neutral + p.pq_neutral for p in passes) / (2 * len(passes)),
            "out_of_range": sum(p.sc_out_of_range + p.pq_out_of_range for p in passes) / (2 * len(passes)),
        }  # fmt: skip
        if not math.isfinite(result.overall):
            return RewardResult(None, components, f"the judge gave a non-finite score: SC {result.raw[0]!r}, "
                                                  f"PQ {result.raw[1]!r}")  # fmt: skip
        error = None
        if components["parse_failed"]:
            error = f"unreadable judge answer scored as the neutral {self.score_range / 2} (the authors' rule)"
        return RewardResult(result.overall / 10, components, error)

    def __repr__(self) -> str:
        judge = self.judge if isinstance(self.judge, str) else type(self.judge).__name__
        return f"EditScoreReward(judge={judge!r}, num_pass={self.num_pass}, reduction={self.reduction!r})"
