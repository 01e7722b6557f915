"""A CRAFT-GUI-style curriculum (arXiv 2508.11360): difficulty from the policy's own success, a staged sampler,
and a reward mixing the rule-based matcher with a model judge.

CRAFT-GUI publishes no code; its abstract says GRPO with a curriculum over trajectory difficulty
and a reward combining rule-based signals with model-judged evaluation. Everything below beyond
that sentence is **this project's own design**, chosen to be simple and inspectable:

* :class:`DifficultyTracker` — per episode, an exponential moving average of the step exact-match
  rate its rollouts reach (``alpha`` 0.5); bucket ``easy`` (>= 0.7), ``hard`` (< 0.3), else
  ``medium``; an episode never rolled out counts as ``medium``.
* :class:`CurriculumSampler` — draws episodes with per-bucket weights that depend on a stage
  (0: mostly easy, 1: mostly medium, 2: mostly hard); the stage advances when the rolling mean
  step success of the last ``window`` updates reaches ``advance_at``. It plugs into the
  semi-online engine as ``multi_turn.sampler: domains.gui.curriculum:CurriculumSampler``; its
  state (stage, success window, per-episode success, draw RNG) travels in the engine's
  checkpoints, so ``--resume`` continues the curriculum where it stopped.
* :class:`CraftGuiReward` — ``(1 - judge_weight) * ui-s1 + judge_weight * judge``, the judge any
  callable returning a score in [0, 1] per answer (:class:`PipelineJudge` wraps a zoo VLM
  pipeline); a judge that cannot score (``None``) leaves the rule-based score alone.
"""

from __future__ import annotations

import random
import re
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from rewards.base import RewardResult

BUCKETS = ("easy", "medium", "hard")
#: Sampling weights per stage over (easy, medium, hard): this project's choice.
STAGE_WEIGHTS = ((0.6, 0.3, 0.1), (0.2, 0.5, 0.3), (0.1, 0.3, 0.6))


class DifficultyTracker:
    """Per-episode success (EMA of step exact match) and its difficulty bucket."""

    def __init__(self, alpha: float = 0.5, easy_at: float = 0.7, hard_below: float = 0.3) -> None:
        if not 0 < alpha <= 1 or not 0 <= hard_below <= easy_at <= 1:
            raise ValueError(f"need 0 < alpha <= 1 and 0 <= hard_below <= easy_at <= 1, got {alpha}, {hard_below}, {easy_at}")
        self.alpha, self.easy_at, self.hard_below = alpha, easy_at, hard_below
        self.success: dict[Hashable, float] = {}

    def update(self, episode: Hashable, rate: float) -> None:
        old = self.success.get(episode)
        self.success[episode] = rate if old is None else (1 - self.alpha) * old + self.alpha * rate

    def bucket(self, episode: Hashable) -> str:
        rate = self.success.get(episode)
        if rate is None:
            return "medium"
        return "easy" if rate >= self.easy_at else ("hard" if rate < self.hard_below else "medium")


class CurriculumSampler:
    """Episodes drawn by difficulty bucket with stage-dependent weights; the stage follows the policy's success.

    Protocol of the semi-online engine's sampler: ``CurriculumSampler(episodes, rng, **kwargs)``,
    ``sample(k) -> episodes``, ``update(records)`` after each rollout, ``metrics() -> dict``,
    ``state_dict()`` / ``load_state_dict(state)`` for checkpoints.
    """

    def __init__(self, episodes: Sequence[Sequence[Any]], rng: random.Random, *, window: int = 4,
                 advance_at: float = 0.6, alpha: float = 0.5) -> None:  # fmt: skip
        if not episodes:
            raise ValueError("CurriculumSampler needs at least one episode")
        self.episodes, self.rng = list(episodes), rng
        self.tracker = DifficultyTracker(alpha=alpha)
        self.window, self.advance_at = deque(maxlen=window), advance_at
        self.stage = 0

    @staticmethod
    def key(episode: Sequence[Any]) -> Hashable:
        return episode[0].meta["episode_id"]

    def sample(self, k: int) -> list[Sequence[Any]]:
        """``k`` episodes: a bucket by the stage's weights (empty buckets skipped), then an episode in it."""
        members: dict[str, list[Sequence[Any]]] = {b: [] for b in BUCKETS}
        for episode in self.episodes:
            members[self.tracker.bucket(self.key(episode))].append(episode)
        names = [b for b in BUCKETS if members[b]]
        weights = [STAGE_WEIGHTS[self.stage][BUCKETS.index(b)] for b in names]
        return [self.rng.choice(members[self.rng.choices(names, weights)[0]]) for _ in range(k)]

    def update(self, records: Sequence[Any]) -> None:
        """Fold one rollout's step matches into the episodes' success and maybe advance the stage."""
        by_episode: dict[Hashable, list[bool]] = {}
        for r in records:
            by_episode.setdefault(r.sample.meta["episode_id"], []).append(bool(r.match))
        for episode, hits in by_episode.items():
            self.tracker.update(episode, sum(hits) / len(hits))
        if records:
            self.window.append(sum(r.match for r in records) / len(records))
        full = len(self.window) == self.window.maxlen
        if full and self.stage < len(STAGE_WEIGHTS) - 1 and sum(self.window) / len(self.window) >= self.advance_at:
            self.stage += 1
            self.window.clear()

    def state_dict(self) -> dict[str, Any]:
        """Everything the next draws depend on: stage, success window, per-episode success, RNG.

        Plain Python values (the engine saves them with ``torch.save`` and loads them tensors-only).
        """
        return {"stage": self.stage, "window": list(self.window), "success": dict(self.tracker.success),
                "rng": self.rng.getstate()}  # fmt: skip

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`; the window keeps its configured length."""
        if not 0 <= int(state["stage"]) < len(STAGE_WEIGHTS):
            raise ValueError(f"curriculum stage {state['stage']!r} is out of range 0..{len(STAGE_WEIGHTS) - 1}")
        self.stage = int(state["stage"])
        self.window.clear()
        self.window.extend(float(v) for v in state["window"])
        self.tracker.success = {k: float(v) for k, v in state["success"].items()}
        self.rng.setstate(state["rng"])

    def metrics(self) -> dict[str, float]:
        counts = {b: 0 for b in BUCKETS}
        for episode in self.episodes:
            counts[self.tracker.bucket(self.key(episode))] += 1
        return {"curriculum/stage": float(self.stage), **{f"curriculum/{b}": float(n) for b, n in counts.items()}}


#: ``judge(texts, samples) -> scores`` in [0, 1], ``None`` where it cannot judge.
Judge = Callable[[Sequence[str], Sequence[Any]], Sequence[float | None]]

JUDGE_QUESTION = (
    "Task: {goal}\nExpected step: {step}\nProposed action: {answer}\n"
    "Does the proposed action carry out the expected step on this screen? Answer yes or no."
)


class PipelineJudge:
    """A zoo VLM pipeline as the judge: asks whether the answer does the step, on the step's screenshot.

    ``pipe(images, questions)`` is any :func:`zoo.load` VLM pipeline; a ``yes``/``no`` at the start
    of its answer is 1 / 0, anything else ``None`` (no judgement). The question is this project's.
    """

    def __init__(self, pipe: Any, question: str = JUDGE_QUESTION) -> None:
        self.pipe, self.question = pipe, question

    def __call__(self, texts: Sequence[str], samples: Sequence[Any]) -> list[float | None]:
        questions = [self.question.format(goal=s.meta.get("goal", ""), step=s.meta.get("step_instruction") or "",
                                          answer=t) for t, s in zip(texts, samples)]  # fmt: skip
        answers = self.pipe([s.images[0] for s in samples], questions)
        out: list[float | None] = []
        for answer in answers:
            word = re.match(r"\W*(yes|no)\b", getattr(answer, "text", str(answer)).strip().lower())
            out.append(None if word is None else float(word.group(1) == "yes"))
        return out


class CraftGuiReward:
    """``(1 - judge_weight) * rule + judge_weight * judge``; rule = the ``ui-s1`` reward (this project's mix).

    Components keep the rule's (``extract_match`` drives the semi-online patches) plus ``rule`` and
    ``judge`` (-1 when the judge gave no score, in which case the score is the rule's alone).
    """

    name = "craft-gui"

    def __init__(self, judge: Judge | None = None, judge_weight: float = 0.3) -> None:
        from domains.gui.rewards import UiS1Reward

        if not 0 <= judge_weight <= 1:
            raise ValueError(f"judge_weight must be in [0, 1], got {judge_weight}")
        if judge is None and judge_weight > 0:
            raise ValueError("craft-gui needs a judge (e.g. PipelineJudge(zoo.load(...))) when judge_weight > 0")
        self.rule, self.judge, self.judge_weight = UiS1Reward(), judge, judge_weight

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        rules = self.rule(predictions, samples)
        texts = [getattr(p, "text", p) for p in predictions]
        verdicts = list(self.judge(texts, samples)) if self.judge is not None else [None] * len(rules)
        out = []
        for rule, verdict in zip(rules, verdicts):
            components = {**rule.components, "rule": rule.score or 0.0, "judge": -1.0 if verdict is None else verdict}
            if rule.score is None or verdict is None:
                out.append(RewardResult(rule.score, components, rule.error))
                continue
            score = (1 - self.judge_weight) * rule.score + self.judge_weight * float(verdict)
            out.append(RewardResult(score, components, rule.error))
        return out
