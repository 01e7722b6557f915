"""The semi-online rollout loop against the authors' loop (``golden/ui_s1_rollout.json``).

The golden file is written by ``golden/make_ui_s1_rollout_golden.py``, which drives
X-PLUG/MobileAgent@11cea575 ``UI-S1/verl/utils/dataset/universal_multiround.py::
MultiRoundGenerator.apply_response`` (patch module) in ``dapo_ray_trainer.py::fit``'s turn loop,
``x/qwen/data_format.py::slim_messages`` (screenshot bound) and ``uis1/core_uis1.py`` (advantages)
on scripted trajectories. Here the same scripts drive :func:`semi_online_rollout` through a
scripted policy and scorer, and the emitted rows, the dialogues and the advantages must agree.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from rewards.base import RewardResult
from zoo.data import Sample
from zoo.engines.vlm.semi_online_rollout import (
    Generation,
    bounded_turn,
    group_episodes,
    semi_online_rollout,
)
from zoo.rl.semi_online import ui_s1

GOLDEN = json.loads((Path(__file__).parent / "golden" / "ui_s1_rollout.json").read_text())


def _episodes(steps_per_episode: list[int]) -> list[list[Sample]]:
    samples = [Sample(id=f"e{g}-{s}", images=(f"img{g}-{s}",), prompt=f"goal {g}" if s == 0 else "next",
                      meta={"episode_id": g, "step": s})
               for g, steps in enumerate(steps_per_episode) for s in range(steps)]  # fmt: skip
    return group_episodes(samples)


class ScriptedPolicy:
    """Answers ``"<copy>:<step>"``; the scorer returns the scripted (match, reward) for that answer.

    The copy index travels in the copy's first prompt (``goal g#<copy>``), so each scripted copy is
    rolled out as its own one-copy episode: copies never interact in the loop (the authors' neither),
    and the rows keep the authors' order (step-major, then copy).
    """

    def __init__(self, script: list[list[list]]) -> None:
        self.script = script

    def policy(self, turns):
        out = []
        for turn in turns:
            copy = int(turn.messages[0]["content"][0]["text"].split("#")[1])
            step = sum(m["role"] == "assistant" for m in turn.messages)
            out.append(Generation(f"{copy}:{step}"))
        return out

    def score(self, texts, samples):
        results = []
        for text in texts:
            copy, step = map(int, text.split(":"))
            hit, reward = self.script[copy][step]
            results.append(RewardResult(reward, {"extract_match": float(hit)}))
        return results


def _run(golden: dict) -> list:
    n, scripted = golden["rollout_n"], ScriptedPolicy(golden["script"])
    per_copy = []
    for g, steps in enumerate(_episodes(golden["episode_steps"])):
        for k in range(n):
            first = replace(steps[0], prompt=f"{steps[0].prompt}#{g * n + k}")
            per_copy.append([first, *steps[1:]])
    records = semi_online_rollout(per_copy, scripted.policy, scripted.score, lambda s: "ground-truth",
                                  rollout_n=1, patch_threshold=golden["threshold"])  # fmt: skip
    return [replace(r, group=r.trajectory // n) for r in records]


@pytest.mark.parametrize("golden", GOLDEN["rollouts"], ids=lambda g: f"threshold={g['threshold']}")
def test_rows_dialogues_and_advantages_match_authors_loop(golden):
    records = _run(golden)
    rows = [(f"p{r.group}", f"t{r.trajectory}", r.step, r.match, r.reward) for r in records]
    expected = zip(golden["uids"], golden["traj_ids"], golden["step_ids"], golden["matches"], golden["rewards"])
    assert rows == [tuple(e) for e in expected]
    for copy, history in enumerate(golden["history"]):
        assert [("ground-truth" if r.patched else "model") for r in records if r.trajectory == copy] == history
    stopped = {r.trajectory for r in records if r.finished and not r.match and not r.patched}
    assert stopped == {copy for copy, done in enumerate(golden["finished"]) if done}
    adv = ui_s1([r.reward for r in records], [r.group for r in records], traj_ids=[r.trajectory for r in records],
                step_ids=[r.step for r in records], matches=[r.match for r in records])  # fmt: skip
    authors = next(a for a in golden["advantages"] if a["mode"] == "mean_std_norm" and a["step_weight"] == 1.0)
    mask = torch.tensor(golden["mask"])
    torch.testing.assert_close(adv[:, None] * mask, torch.tensor(authors["values"]).float(), rtol=0, atol=1e-6)


def test_patched_dialogue_carries_the_expert_answer_and_own_answers_otherwise():
    golden = GOLDEN["rollouts"][0]
    records = _run(golden)
    by_copy: dict[int, list] = {}
    for r in records:
        by_copy.setdefault(r.trajectory, []).append(r)
    for steps in by_copy.values():
        for earlier, later in itertools.pairwise(steps):
            said = [m["content"][0]["text"] for m in later.turn.messages if m["role"] == "assistant"][-1]
            assert said == ("ground-truth" if earlier.patched else earlier.generation.text)


@pytest.mark.parametrize("case", GOLDEN["slim"], ids=lambda c: f"turns={c['turns']}")
def test_screenshot_memory_matches_authors_slim_messages(case):
    messages, images = [{"role": "system", "content": [{"type": "text", "text": "sys"}]}], []
    for t in range(case["turns"]):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"u{t}"}, {"type": "image"}]})
        images.append(f"img{t}")
        if t < case["turns"] - 1:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": f"a{t}"}]})
    turn = bounded_turn(messages, images, image_limit=2)
    kept_images = iter(turn.images)
    kept = [[p["text"] if p["type"] == "text" else next(kept_images) for p in m["content"]] for m in turn.messages]
    assert kept == case["kept"]


def test_copies_share_their_episode_and_lock_step():
    episodes = _episodes([2, 3])
    seen = []

    def policy(turns):
        seen.append(len(turns))
        return [Generation("x") for _ in turns]

    def score(texts, samples):
        return [RewardResult(1.0, {"extract_match": 1.0}) for _ in texts]

    records = semi_online_rollout(episodes, policy, score, lambda s: "gt", rollout_n=3, patch_threshold=2)
    assert seen == [6, 6, 3]  # one batched call per turn over every live copy
    assert {(r.group, r.trajectory // 3) for r in records} == {(0, 0), (1, 1)}
    assert all(r.sample.meta["episode_id"] == r.group and r.sample.meta["step"] == r.step for r in records)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="patch_threshold"):
        semi_online_rollout(_episodes([1]), None, None, None, rollout_n=1, patch_threshold=-2)
    with pytest.raises(ValueError, match="expected 0..n-1"):
        group_episodes([Sample(id="a", meta={"episode_id": 0, "step": 1})])
    with pytest.raises(ValueError, match="episode_id"):
        group_episodes([Sample(id="a")])


def test_expert_turns_teach_each_step_after_the_expert_history():
    from zoo.engines.vlm.semi_online_rollout import expert_turns

    episode = _episodes([3])[0]
    turns = expert_turns(episode, lambda s: f"expert {s.meta['step']}")
    assert len(turns) == 3
    said = [[p["text"] for m in t.messages if m["role"] == "assistant" for p in m["content"]] for t in turns]
    assert said == [[], ["expert 0"], ["expert 0", "expert 1"]]
    assert turns[2].images == ["img0-1", "img0-2"]  # two screenshots of memory
