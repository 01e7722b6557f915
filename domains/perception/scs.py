"""Self-Consistency Sampling's reward (SCS, Wang et al., arXiv 2511.10648); its rollout is :mod:`.scs_rollout`.

Source: GenuineWWD/SCS @ 7014027d ``openrlhf/models/remote_rm/option_verifier_cut_response.py``
(``verify_format`` with the ``format_pattern`` of its ``__main__``, ``verify_option``,
``consistency_reward``) and the reward line of ``get_reward``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rewards.base import RewardResult, check_lengths, require, target_of, text_of

_SCS_FORMAT = re.compile(r"^<think>(?:(?!</think>).)*</think>.*<answer>(?:(?!</answer>).)*</answer>\Z", re.DOTALL)


def _first_capital(text: str) -> str | None:
    """SCS reads an option as the first upper-case character of the ``<answer>`` content (else the text)."""
    inner = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
    return next((ch for ch in (inner.group(1) if inner else text) if ch.isupper()), None)


class ScsReward:
    """SCS's multiple-choice reward: ``0.5 * format + accuracy + 0.3 * (5 - #distinct resampled answers)``.

    The consistency term needs the trajectories SCS samples by truncating the response and
    resampling its tail (with a perturbed image): ``sample.meta["scs_resampled"]``, a list of texts,
    which the ``scs`` rollout plug-in (:class:`~domains.perception.scs_rollout.ScsResampling`) fills in the GRPO engine; without it
    the reward raises ``KeyError`` rather than score a consistency it never saw. The
    constant 5 is upstream's (four resamples that all agree give 1.2). An empty reference answer
    scores accuracy 1 ("skip the example", upstream).
    """

    name = "scs-mcq"
    component_names = ("format", "accuracy", "consistency", "distinct_answers")

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        check_lengths(predictions, samples, self.name)
        return [self._one(text_of(p), target_of(s), getattr(s, "meta", None) or {}) for p, s in zip(predictions, samples)]

    def _one(self, text: str, target: Mapping[str, Any], meta: Mapping[str, Any]) -> RewardResult:
        answer = str(require(target, "answer", self.name)).strip()
        if "scs_resampled" not in meta:
            raise KeyError(f"reward {self.name!r} needs sample.meta['scs_resampled'] (the truncated-and-resampled "
                           "trajectories of SCS); the sample's meta has keys " + str(sorted(meta)))  # fmt: skip
        stripped = text.strip()
        fmt = float(stripped.count("<think>") == 1 and stripped.count("<answer>") == 1
                    and _SCS_FORMAT.match(stripped) is not None)  # fmt: skip
        accuracy = 1.0 if not answer else float(_first_capital(text) == answer[0])
        distinct = len({_first_capital(str(r)) for r in meta["scs_resampled"]})
        consistency = (5 - distinct) * 0.3
        return RewardResult(0.5 * fmt + accuracy + consistency, {"format": fmt, "accuracy": accuracy,
                            "consistency": consistency, "distinct_answers": float(distinct)})  # fmt: skip

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(self.name)

