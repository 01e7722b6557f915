"""CRAFT-GUI-style curriculum (this project's design): buckets from own success, staged sampler, rule + judge reward."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from domains.gui.curriculum import CraftGuiReward, CurriculumSampler, DifficultyTracker, PipelineJudge
from domains.gui.episodes import episode_samples
from domains.gui.prompts import ui_s1_action_response
from zoo.engines.vlm.semi_online_rollout import group_episodes


def _records(episode_id, hits):
    sample = SimpleNamespace(meta={"episode_id": episode_id})
    return [SimpleNamespace(sample=sample, match=h) for h in hits]


def test_tracker_buckets_follow_the_moving_average():
    t = DifficultyTracker(alpha=0.5)
    assert t.bucket("a") == "medium"  # never rolled out
    t.update("a", 1.0)
    assert t.bucket("a") == "easy"
    t.update("a", 0.0)  # 0.5
    assert t.bucket("a") == "medium"
    t.update("a", 0.0)  # 0.25
    assert t.bucket("a") == "hard"
    with pytest.raises(ValueError):
        DifficultyTracker(alpha=0)


def test_sampler_moves_to_harder_stages_as_success_rises():
    episodes = group_episodes(episode_samples(n=6, seed=0))
    sampler = CurriculumSampler(episodes, random.Random(0), window=2, advance_at=0.6)
    easy, hard = episodes[0][0].meta["episode_id"], episodes[1][0].meta["episode_id"]
    sampler.update(_records(easy, [True, True]) + _records(hard, [False, False]))
    assert sampler.stage == 0  # window not full yet
    sampler.update(_records(easy, [True, True, True]))
    assert sampler.stage == 1 and sampler.metrics()["curriculum/stage"] == 1.0
    counts = sampler.metrics()
    assert counts["curriculum/easy"] == 1 and counts["curriculum/hard"] == 1 and counts["curriculum/medium"] == 4
    sampler.stage = 2  # mostly hard: the hard episode dominates the draws
    drawn = [CurriculumSampler.key(e) for e in sampler.sample(400)]
    assert drawn.count(hard) > drawn.count(easy) * 3


def test_craft_reward_mixes_rule_and_stub_judge():
    samples = episode_samples(n=2, seed=1)
    right = ui_s1_action_response(samples[0])

    def stub_judge(texts, batch):  # says "no" to the first answer and cannot judge the second
        return [0.0, None][: len(texts)]

    reward = CraftGuiReward(judge=stub_judge, judge_weight=0.3)
    judged, unjudged = reward([right, right], samples[:1] * 2)
    assert judged.components["rule"] == pytest.approx(1.0) and judged.score == pytest.approx(0.7)
    assert unjudged.score == pytest.approx(1.0) and unjudged.components["judge"] == -1.0
    assert set(judged.components) == set(unjudged.components)
    assert CraftGuiReward(judge_weight=0.0)([right], samples[:1])[0].score == pytest.approx(1.0)
    with pytest.raises(ValueError, match="needs a judge"):
        CraftGuiReward(judge=None, judge_weight=0.5)


def test_pipeline_judge_reads_yes_no_from_a_vlm_pipeline():
    asked = []

    def pipe(images, questions):
        asked.extend(questions)
        return [SimpleNamespace(text=t) for t in ("Yes, it does.", "no", "maybe")]

    samples = episode_samples(n=1, seed=2, min_steps=3, max_steps=3)
    assert PipelineJudge(pipe)(["a", "b", "c"], samples) == [1.0, 0.0, None]
    assert samples[0].meta["goal"] in asked[0] and "Proposed action: a" in asked[0]


def test_engine_resolves_the_curriculum_sampler():
    from zoo.engines.reading import load_recipe
    from zoo.engines.vlm.semi_online_engine import _sampler
    from zoo.recipe import RecipeError

    recipe = load_recipe("domains/gui/recipes/ui-s1-smoke.yaml",
                         ["multi_turn.sampler=domains.gui.curriculum:CurriculumSampler"])  # fmt: skip
    episodes = group_episodes(episode_samples(n=3, seed=0))
    assert isinstance(_sampler(recipe, episodes, random.Random(0)), CurriculumSampler)
    bad = load_recipe("domains/gui/recipes/ui-s1-smoke.yaml", ["multi_turn.sampler=domains.gui.nope:X"])
    with pytest.raises(RecipeError, match="not an importable"):
        _sampler(bad, episodes, random.Random(0))


def test_sampler_state_round_trips():
    episodes = group_episodes(episode_samples(n=4, seed=0))
    sampler = CurriculumSampler(episodes, random.Random(3), window=2, advance_at=0.5)
    ids = [CurriculumSampler.key(e) for e in episodes]
    sampler.update(_records(ids[0], [True, True]) + _records(ids[1], [False]))
    sampler.update(_records(ids[2], [True]))  # window full at 0.83 >= 0.5: stage 1
    sampler.update(_records(ids[3], [False, True]))
    copy = CurriculumSampler(episodes, random.Random(99), window=2, advance_at=0.5)
    copy.load_state_dict(sampler.state_dict())
    assert copy.stage == sampler.stage == 1 and list(copy.window) == list(sampler.window) == [0.5]
    assert copy.metrics() == sampler.metrics()
    assert [CurriculumSampler.key(e) for e in copy.sample(50)] == [CurriculumSampler.key(e) for e in sampler.sample(50)]
    with pytest.raises(ValueError, match="stage 7 is out of range"):
        copy.load_state_dict({**sampler.state_dict(), "stage": 7})


def test_interrupted_curriculum_run_resumes_to_identical_metrics(tmp_path):
    """Three semi-online steps straight, and one step then ``--resume`` to three: same metrics, same weights.

    The curriculum advances every update here (window 1, advance_at 0), so a resume that restarted it
    (stage 0, no per-episode success, fresh RNG) would draw other episodes and log another stage.
    """
    from tests.engines.run_dirs import assert_same_tensors, metric_rows
    from tests.rl.test_semi_online_engine import straight_and_resumed

    small = ["data.kwargs.n=4", "multi_turn.episodes_per_step=1", "algorithm.max_completion_length=4",
             "training.save_steps=1", "multi_turn.sampler=domains.gui.curriculum:CurriculumSampler",
             "multi_turn.sampler_kwargs.window=1", "multi_turn.sampler_kwargs.advance_at=0.0"]  # fmt: skip
    straight, resumed = straight_and_resumed(tmp_path, small, steps=3)
    assert [r["curriculum/stage"] for r in metric_rows(straight)] == ["1.0", "2.0", "2.0"]
    assert metric_rows(resumed) == metric_rows(straight)
    assert_same_tensors(straight / "final" / "model.safetensors", resumed / "final" / "model.safetensors")
