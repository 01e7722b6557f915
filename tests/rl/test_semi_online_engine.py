"""The semi-online engine on a tiny random Qwen2.5-VL: real generation, UI-S1 advantages, one step that learns."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
import torch

from rewards.base import RewardResult
from tests.engines.run_dirs import assert_same_tensors, metric_rows
from zoo.engines.reading import load_recipe
from zoo.engines.vlm.multiturn_policy import VLMPolicy, model_frame_size, turn_logps
from zoo.engines.vlm.semi_online_engine import SemiOnlineLearner
from zoo.engines.vlm.semi_online_rollout import StepRecord, group_episodes, semi_online_rollout
from zoo.recipe import RecipeError

RECIPE = "domains/gui/recipes/ui-s1-smoke.yaml"


@pytest.fixture(scope="module")
def setup():
    from zoo.engines.vlm.policy_model import load_policy

    recipe = load_recipe(RECIPE)
    samples = recipe.data.load()
    model, processor = load_policy(recipe, samples)
    return recipe, samples, model, processor


def _alternating_records(samples, model, processor):
    """A real rollout of two episodes x two copies whose stub reward alternates match / miss (advantages != 0)."""
    policy = VLMPolicy(model, processor, max_new_tokens=8)
    calls = iter(range(10_000))

    def score(texts, batch):
        return [RewardResult(float(i % 2), {"extract_match": float(i % 2)}) for i in (next(calls) for _ in texts)]

    episodes = group_episodes(samples)[:2]
    return semi_online_rollout([[policy.in_model_frame(s) for s in e] for e in episodes], policy, score,
                               lambda s: "<action>{}</action>", rollout_n=2, patch_threshold=2)  # fmt: skip


def test_one_update_changes_the_policy_when_rewards_differ(setup):
    recipe, samples, model, processor = setup
    records = _alternating_records(samples, model, processor)
    assert records and all(r.generation.token_ids for r in records)
    learner = SemiOnlineLearner(recipe, model, processor)
    kept, keep = learner.select(records)
    adv = learner.advantages(kept)
    assert len(kept) == len(records) and bool(keep.all()) and bool(adv.abs().sum() > 0)
    before = [p.detach().clone() for p in learner.params]
    metrics = learner.update(records)
    assert metrics["turns"] == len(records) and learner.step == 1
    assert any(not torch.equal(a, p) for a, p in zip(before, learner.params))


def test_logps_score_the_generated_ids(setup):
    _, samples, model, processor = setup
    episodes = group_episodes(samples)[:1]
    policy = VLMPolicy(model, processor, max_new_tokens=6, do_sample=False)

    def score(texts, batch):
        return [RewardResult(0.0, {"extract_match": 0.0}) for _ in texts]

    records = semi_online_rollout(episodes, policy, score, lambda s: "x", rollout_n=1, patch_threshold=0)
    logps, mask = turn_logps(model, processor, records)
    assert logps.shape == mask.shape and bool((logps <= 0).all())
    assert int(mask.sum()) == sum(len(r.generation.token_ids) for r in records)


def test_logps_are_those_of_the_sampling_temperature(setup):
    """TRL and verl score rollouts with ``log_softmax(logits / temperature)``; so does the semi-online loop
    (at temperature 0.3, scoring the raw logits made a tiny agent's click coordinates degenerate)."""
    _, samples, model, processor = setup
    policy = VLMPolicy(model, processor, max_new_tokens=6, temperature=0.5)

    def score(texts, batch):
        return [RewardResult(0.0, {"extract_match": 0.0}) for _ in texts]

    records = semi_online_rollout(group_episodes(samples)[:1], policy, score, lambda s: "x", rollout_n=2,
                                  patch_threshold=0)  # fmt: skip
    seen = []
    hook = model.register_forward_hook(lambda module, args, out: seen.append(out.logits.detach()))
    try:
        logps, mask = turn_logps(model, processor, records, temperature=0.5)
    finally:
        hook.remove()
    width = mask.shape[1]
    ids = torch.tensor([list(r.generation.token_ids) + [0] * (width - len(r.generation.token_ids)) for r in records],
                       device=mask.device)  # the learner tests move the shared model to CUDA when there is one
    expected = torch.log_softmax(seen[-1][:, -width - 1 : -1].float() / 0.5, dim=-1).gather(-1, ids.unsqueeze(-1))
    assert torch.allclose(logps * mask, expected.squeeze(-1) * mask, atol=1e-5)
    raw, _ = turn_logps(model, processor, records)
    assert not torch.allclose(logps * mask, raw * mask, atol=1e-3)


def test_model_frame_follows_the_processor_limits(setup):
    _, _, _, processor = setup
    w, h = model_frame_size(processor, (1080, 2400))
    assert w % 28 == 0 and h % 28 == 0 and w * h <= 112 * 112


def test_multi_turn_recipe_validation():
    with pytest.raises(RecipeError, match="multi_turn: .* is read by SemiOnlineRecipe's loop only; engine 'vlm-verl'"):
        load_recipe(RECIPE, [], engine="vlm-verl")
    with pytest.raises(RecipeError, match="patch_threshold"):
        load_recipe(RECIPE, ["multi_turn.patch_threshold=-3"])


def test_resume_continues_from_the_last_checkpoint(tmp_path):
    from zoo.train import run

    small = ["data.kwargs.n=2", "multi_turn.episodes_per_step=1", "algorithm.max_completion_length=4",
             "training.save_steps=1"]  # fmt: skip
    out = run(RECIPE, [*small, "training.steps=1"], output_dir=str(tmp_path / "run"))
    assert (out / "checkpoint-1" / "semi_online_state.pt").is_file()
    out = run(RECIPE, [*small, "training.steps=2"], output_dir=str(tmp_path / "run"), resume=True)
    steps = [line.split(",")[0] for line in (out / "metrics.csv").read_text().splitlines()[1:]]
    assert steps == ["1", "2"] and (out / "checkpoint-2").is_dir() and (out / "final").is_dir()
    state = torch.load(out / "checkpoint-2" / "semi_online_state.pt", weights_only=False)
    assert state["step"] == 2


def test_collect_tops_the_filtered_batch_up(setup):
    """An episode whose copies all fare alike is filtered out; the step rolls out more until it has its quota."""
    from zoo.engines.vlm.semi_online_engine import UniformSampler, collect
    from zoo.engines.vlm.semi_online_rollout import Generation, Turn

    recipe, samples, model, processor = setup
    recipe = load_recipe(RECIPE, ["multi_turn.filter_std_threshold=0.3", "multi_turn.episodes_per_step=2"])
    learner = SemiOnlineLearner(recipe, model, processor)
    episodes = group_episodes(samples)
    outcomes = iter([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0]])  # per batch: copies 0-1 of episode 0, 2-3 of 1

    def roll(batch):  # one-step stub rollout: copy k of episode g scores outcome[g * 2 + k]
        scores = next(outcomes)
        return [StepRecord(group=g, trajectory=g * 2 + k, step=0, sample=e[0], turn=Turn([], []),
                           generation=Generation("x", (1,)), reward=scores[g * 2 + k], match=bool(scores[g * 2 + k]),
                           patched=False, finished=True) for g, e in enumerate(batch) for k in range(2)]  # fmt: skip

    batch, generated, gen_batches = collect(roll, UniformSampler(episodes, random.Random(0)), learner)
    assert gen_batches == 2 and len(generated) == 8
    # batch 1 keeps episode 1 (group 1); batch 2 keeps its second episode (group 2 + 1 = 3); both groups whole
    assert sorted({r.group for r in batch}) == [1, 3] and len(batch) == 4
    assert len({r.trajectory for r in generated}) == 8  # ids offset per rollout batch


def test_rollout_metrics_count_equal_groups_and_action_types():
    """Two (episode, step) groups of two copies: one split (1.0 vs 0.1), one all-equal; a lone turn counts in neither."""
    from zoo.data import Sample
    from zoo.engines.vlm.semi_online_engine import _rollout_metrics
    from zoo.engines.vlm.semi_online_rollout import Generation, Turn

    def record(group: int, traj: int, step: int, kind: str, reward: float) -> StepRecord:
        sample = Sample(id=f"{group}-{step}", images=[], prompt="", target={"action": {"action": kind}})
        return StepRecord(group, traj, step, sample, Turn([], []), Generation(""), reward, reward == 1.0, False, False)

    records = [record(0, 0, 0, "click", 1.0), record(0, 1, 0, "click", 0.1),
               record(1, 2, 0, "type", 0.1), record(1, 3, 0, "type", 0.1), record(1, 2, 1, "terminate", 1.0)]  # fmt: skip
    metrics = _rollout_metrics(records)
    assert metrics["frac_equal_groups"] == 0.5
    by_type = [metrics[f"step_success_{k}"] for k in ("click", "type", "terminate")]
    assert by_type == [0.5, 0.0, 1.0]
    assert metrics["step_success"] == 2 / 5 and metrics["turns"] == 5


def test_sampling_never_emits_vision_placeholders(setup):
    """An answer holding <|image_pad|> would break the next turn (image tokens vs features): those ids are suppressed."""
    _, _, model, processor = setup
    suppressed = VLMPolicy(model, processor).generation["suppress_tokens"]
    assert processor.tokenizer.convert_tokens_to_ids(processor.image_token) in suppressed


def test_mini_batches_cut_the_rows_in_order():
    from zoo.engines.vlm.semi_online_engine import mini_batches

    assert mini_batches(list(range(10)), 4) == [[0, 1], [2, 3, 4], [5, 6], [7, 8, 9]]
    assert mini_batches([4, 7], 4) == [[4], [7]] and mini_batches([], 4) == []
    assert mini_batches(list(range(5)), 1) == [list(range(5))]
    with pytest.raises(RecipeError, match="multi_turn.mini_batches=0"):
        load_recipe(RECIPE, ["multi_turn.mini_batches=0"])


def test_four_mini_batches_step_against_the_rollout_logps_and_clip(setup, monkeypatch):
    """UI-S1's 4 optimiser steps per batch (train_example.sh fixed_num_mini_batches=4): the first mini-batch
    sees ratio 1, the later ones the policy moved by the earlier steps, scored against the log-probabilities
    taken before the first step; with a tiny clip range the clipped term is taken on some tokens."""
    from zoo.engines.vlm import semi_online_engine

    _, samples, model, processor = setup
    recipe = load_recipe(RECIPE, ["multi_turn.mini_batches=4", "training.lr=0.01", "training.batch_size=64",
                                  "algorithm.clip_low=0.0001", "algorithm.clip_high=0.0001"])  # fmt: skip
    records = _alternating_records(samples, model, processor)
    assert len(records) >= 4
    learner = SemiOnlineLearner(recipe, copy.deepcopy(model), processor)
    seen = []  # per micro-batch (one per mini-batch here): max |ratio - 1| over its answer tokens
    add = semi_online_engine._PolicyStats.add

    def spy(self, logps, old, mask, loss_stats):
        seen.append(float(((logps - old).exp() - 1).abs()[mask.bool()].max()))
        add(self, logps, old, mask, loss_stats)

    monkeypatch.setattr(semi_online_engine._PolicyStats, "add", spy)
    metrics = learner.update(records)
    assert len(seen) == 4 and metrics["optimizer_steps"] == 4.0
    assert seen[0] < 1e-5 and min(seen[1:]) > 1e-3, seen
    assert metrics["clip_frac"] > 0 and metrics["ratio_max"] > 1 and metrics["ratio_mean"] != 1.0
    assert all(state["step"] == 4 for state in learner.optimizer.state.values())

    one = SemiOnlineLearner(load_recipe(RECIPE, ["training.batch_size=64"]), copy.deepcopy(model), processor)
    single = one.update(records)  # the default: one on-policy step, the ratio exactly 1
    assert single["optimizer_steps"] == 1.0 and single["clip_frac"] == 0.0 and single["ratio_max"] == 1.0


def straight_and_resumed(tmp_path: Path, overrides: list[str], steps: int) -> tuple[Path, Path]:
    """The smoke recipe run ``steps`` steps straight, and run one step then ``--resume``-d to ``steps``."""
    from zoo.train import run

    straight = run(RECIPE, [*overrides, f"training.steps={steps}"], output_dir=str(tmp_path / "straight"))
    run(RECIPE, [*overrides, "training.steps=1"], output_dir=str(tmp_path / "resumed"))
    resumed = run(RECIPE, [*overrides, f"training.steps={steps}"], output_dir=str(tmp_path / "resumed"), resume=True)
    return straight, resumed


def test_resume_with_mini_batches_is_exact(tmp_path):
    """Two steps of 2 mini-batches straight, and one step then ``--resume`` to two: same metrics, same weights."""
    small = ["data.kwargs.n=2", "multi_turn.episodes_per_step=1", "algorithm.max_completion_length=4",
             "training.save_steps=1", "multi_turn.mini_batches=2"]  # fmt: skip
    straight, resumed = straight_and_resumed(tmp_path, small, steps=2)
    assert [r["optimizer_steps"] for r in metric_rows(straight)] == ["2.0", "2.0"]
    assert metric_rows(resumed) == metric_rows(straight)
    assert_same_tensors(straight / "final" / "model.safetensors", resumed / "final" / "model.safetensors")
