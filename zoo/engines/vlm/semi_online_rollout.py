"""UI-S1's semi-online rollout (arXiv 2509.11543): a policy walks offline trajectories with its own history.

For every episode of an offline dataset, ``rollout_n`` copies are rolled out in lock step. At
turn ``t`` each live copy sees its dialogue so far (the episode's prompt turns, the recorded
screenshots, and *its own* earlier answers), the policy answers, and the domain's reward scores
the answer against the recorded expert step. Then the patch module decides
(:func:`zoo.rl.semi_online.patch_step`): a matching answer stays in the dialogue; a wrong one is
replaced by the expert's answer while the copy has made fewer than ``patch_threshold`` errors
(-1: always); past that the copy stops, the wrong step still being a training sample. Only the
last ``image_limit`` screenshots of a dialogue are kept (older user turns keep their text).

Reference: X-PLUG/MobileAgent@11cea575, ``UI-S1/verl/utils/dataset/universal_multiround.py``
(``MultiRoundGenerator.fetch_batch`` / ``apply_response``, ``QwenMessages2Inputs`` with
``num_image_limit=2``), ``UI-S1/x/data/agent/json.py::JsonFormat.gen_next_round`` (turn layout:
text parts, then the screenshot) and ``UI-S1/x/qwen/data_format.py::slim_messages`` (keep the
last N images). This module is engine- and domain-free: the policy is any batched
``generate`` function, the reward any :class:`rewards.base.RewardResult` producer whose
components carry the step match (``extract_match``), the expert answer any ``Sample -> str``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from zoo.data import Sample
from zoo.rl.semi_online import check_patch_threshold, patch_step

MATCH_COMPONENT = "extract_match"  # UI-S1's reward_extra_info key for "type and arguments right"
IMAGE_LIMIT = 2  # QwenMessages2Inputs: config.get("num_image_limit", 2); vLLM limit_images=2


@dataclass(frozen=True)
class Generation:
    """One policy answer: its text and, when the engine trains on it, its token ids."""

    text: str
    token_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Turn:
    """The input of one policy call: chat messages (image parts as ``{"type": "image"}``) and their images, and the
    id of the step sample it asks (so an error about the prompt can name it)."""

    messages: list[dict[str, Any]]
    images: list[Any]
    sample_id: str = ""


#: ``policy(turns) -> generations``, one per turn, in order (batched generation).
Policy = Callable[[Sequence[Turn]], Sequence[Generation]]
#: ``score(texts, samples) -> RewardResults`` (a registered reward or a weighted sum of them).
Score = Callable[[Sequence[str], Sequence[Sample]], Sequence[Any]]


@dataclass(frozen=True)
class StepRecord:
    """One generated turn of one rolled-out copy: a training sample of UI-S1.

    Attributes:
        group: index of the episode in the rollout (UI-S1's prompt ``uid``).
        trajectory: index of the copy, unique over the rollout (``traj_uid``).
        step: 0-based turn index (``step_id``).
        sample: the recorded expert step the answer is scored against.
        turn: what the policy saw.
        generation: what it answered.
        reward: the step reward, ``None`` when the reward could not be computed.
        match: the reward's ``extract_match`` (False when unscored).
        patched: the expert's answer replaced this one in the dialogue.
        finished: the copy stopped after this step (patch budget spent, or the episode's last step).
        components: the reward's components, for logging.
    """

    group: int
    trajectory: int
    step: int
    sample: Sample
    turn: Turn
    generation: Generation
    reward: float | None
    match: bool
    patched: bool
    finished: bool
    components: dict[str, float] = field(default_factory=dict)


def group_episodes(samples: Sequence[Sample]) -> list[list[Sample]]:
    """Step samples grouped by ``meta["episode_id"]`` (first-seen order), each sorted by ``meta["step"]``.

    Raises when a sample lacks those keys or an episode repeats or skips a step: a gap would
    silently shift every later screenshot against its target.
    """
    episodes: dict[Any, list[Sample]] = {}
    for sample in samples:
        if "episode_id" not in sample.meta or "step" not in sample.meta:
            raise ValueError(f"sample {sample.id!r} has no meta['episode_id'] / meta['step']; a multi-turn "
                             "rollout needs trajectory data (e.g. load_ui_s1_jsonl, gui-synthetic-episodes)")  # fmt: skip
        episodes.setdefault(sample.meta["episode_id"], []).append(sample)
    out = []
    for episode, steps in episodes.items():
        steps = sorted(steps, key=lambda s: s.meta["step"])
        if [s.meta["step"] for s in steps] != list(range(len(steps))):
            raise ValueError(f"episode {episode!r} has steps {[s.meta['step'] for s in steps]}; expected 0..n-1 "
                             "(a limit= that cut an episode short keeps its first steps only)")  # fmt: skip
        out.append(steps)
    return out


def _as_messages(prompt: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": [{"type": "text", "text": prompt}]}]
    out = []
    for message in prompt:
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else copy.deepcopy(content or [])
        out.append({"role": message["role"], "content": parts})
    return out


@dataclass
class _Dialogue:
    """One copy's history: messages with image placeholders, and the images in order."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    images: list[Any] = field(default_factory=list)
    errors: int = 0
    finished: bool = False

    def add_step(self, sample: Sample, image_first: bool = False) -> None:
        """Add the step's prompt turns and its screenshots: after the text, as upstream, or before it for an
        entry whose image comes first (``image_first``)."""
        turns = _as_messages(sample.prompt)
        if turns[-1]["role"] != "user":
            raise ValueError(f"sample {sample.id!r}: the step's prompt must end with a user turn")
        images = [{"type": "image"} for _ in sample.images]
        content = turns[-1]["content"]
        turns[-1]["content"] = [*images, *content] if image_first else [*content, *images]
        self.messages.extend(turns)
        self.images.extend(sample.images)

    def answer(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})


def bounded_turn(messages: list[dict[str, Any]], images: list[Any], image_limit: int, sample_id: str = "") -> Turn:
    """The dialogue with only its last ``image_limit`` image parts kept (UI-S1's ``slim_messages``), asking the step
    ``sample_id``."""
    drop = max(0, len(images) - image_limit)
    seen, out = 0, []
    for message in messages:
        parts = []
        for part in message["content"]:
            if part.get("type") == "image":
                seen += 1
                if seen <= drop:
                    continue
            parts.append(dict(part))
        out.append({"role": message["role"], "content": parts})
    return Turn(out, list(images[drop:]), sample_id)


def expert_turns(
    episode: Sequence[Sample],
    expert: Callable[[Sample], str],
    image_limit: int = IMAGE_LIMIT,
    image_first: bool = False,
) -> list[Turn]:
    """The turns of ``episode`` with the expert's answers as history (teacher forcing; UI-S1's static
    ``gen_next_round`` without a model response), for supervised warm starts of a multi-turn policy;
    ``image_first`` as in :func:`semi_online_rollout`."""
    dialogue, turns = _Dialogue(), []
    for sample in episode:
        dialogue.add_step(sample, image_first)
        turns.append(bounded_turn(dialogue.messages, dialogue.images, image_limit, sample.id))
        dialogue.answer(expert(sample))
    return turns


def semi_online_rollout(
    episodes: Sequence[Sequence[Sample]],
    policy: Policy,
    score: Score,
    expert: Callable[[Sample], str],
    *,
    rollout_n: int,
    patch_threshold: int,
    image_limit: int = IMAGE_LIMIT,
    match_component: str = MATCH_COMPONENT,
    image_first: bool = False,
) -> list[StepRecord]:
    """Roll ``rollout_n`` copies of every episode out turn by turn; one :class:`StepRecord` per answer.

    Copies of episode ``g`` are trajectories ``g * rollout_n + k``. Each turn batches every live copy
    into one ``policy`` call and one ``score`` call, as upstream's ``fetch_batch`` does. An
    unscorable answer (reward ``None``) counts as a mismatch for patching. Each step's prompt turns are
    its sample's (a recipe's ``model.entry`` writes them, :func:`zoo.engines.vlm.contract.with_turn_contract`);
    its screenshot closes its user turn, as upstream, or opens it when ``image_first`` (the entry's layout).
    """
    check_patch_threshold(patch_threshold)
    if rollout_n < 1 or image_limit < 1:
        raise ValueError(f"rollout_n and image_limit must be >= 1, got {rollout_n} and {image_limit}")
    copies = [(g, k) for g in range(len(episodes)) for k in range(rollout_n)]
    dialogues = [_Dialogue() for _ in copies]
    records: list[StepRecord] = []
    step = 0
    while True:
        live = [i for i, (g, _) in enumerate(copies) if not dialogues[i].finished and step < len(episodes[g])]
        if not live:
            return records
        samples = [episodes[copies[i][0]][step] for i in live]
        turns = []
        for i, sample in zip(live, samples):
            dialogues[i].add_step(sample, image_first)
            turns.append(bounded_turn(dialogues[i].messages, dialogues[i].images, image_limit, sample.id))
        generations = list(policy(turns))
        results = list(score([g.text for g in generations], samples))
        if len(generations) != len(live) or len(results) != len(live):
            raise ValueError(f"policy/score returned {len(generations)}/{len(results)} results for {len(live)} turns")
        for i, sample, turn, gen, result in zip(live, samples, turns, generations, results):
            dialogue = dialogues[i]
            hit = result.score is not None and bool(result.components.get(match_component, 0.0))
            patched, stop, dialogue.errors = patch_step(hit, dialogue.errors, patch_threshold)
            dialogue.finished = stop or step + 1 >= len(episodes[copies[i][0]])
            dialogue.answer(expert(sample) if patched else gen.text)
            records.append(StepRecord(
                group=copies[i][0], trajectory=i, step=step, sample=sample, turn=turn, generation=gen,
                reward=result.score, match=hit, patched=patched, finished=dialogue.finished,
                components=dict(result.components),
            ))  # fmt: skip
        step += 1
