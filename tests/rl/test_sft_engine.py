"""The ``vlm-sft`` engine: a resumed run equals an uninterrupted one, the time budget stops a run,
and bad recipes fail early. (Its first steps equal those of the release SFT loop it replaced:
same losses to the last digit, checked when it was ported; the loop itself is unchanged.)"""

from __future__ import annotations

import csv

import pytest
import torch
from safetensors.torch import load_file

from tests.engines.run_dirs import Payload, assert_same_tensors, interrupted_copy, metric_rows, rewrite_state
from zoo.engines.reading import load_recipe
from zoo.engines.vlm import sft_engine
from zoo.recipe import RecipeError
from zoo.runs import UnsafeStateError, latest_checkpoint, read_state

RECIPE = "domains/gui/recipes/gui-g1-tiny-sft.yaml"
SMALL = [
    "model.tiny.hidden=32", "model.tiny.layers=1", "model.tiny.vision_hidden=32", "model.tiny.vocab_size=300",
    "data.corpus_kwargs.n=16", "training.batch_size=4", "training.logging_steps=1", "training.save_steps=2",
]  # fmt: skip


def recipe(*overrides: str):
    return load_recipe(RECIPE, [*SMALL, *overrides])


def losses(out) -> list[float]:
    with (out / "metrics.csv").open() as f:
        return [float(r["loss"]) for r in csv.DictReader(f)]


def test_resumed_run_equals_uninterrupted(tmp_path):
    straight = sft_engine.train(recipe("training.steps=6"), tmp_path / "straight")
    part = tmp_path / "resumed"
    sft_engine.train(recipe("training.steps=4"), part)  # as if killed after the step-4 checkpoint
    assert latest_checkpoint(part).name == "checkpoint-4"
    sft_engine.train(recipe("training.steps=6"), part, resume=True)

    assert len(losses(straight)) == 6 and losses(part) == losses(straight)  # no duplicate rows, same numbers
    a, b = load_file(straight / "final/model.safetensors"), load_file(part / "final/model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_resume_mid_epoch_of_a_fixed_dataset_equals_uninterrupted(tmp_path):
    """Review 1.8: without ``data.stream`` a run cycles through seeded epochs; killed after ``checkpoint-4``
    (16 of 40 samples into the epoch) and resumed, it continues the same permutation."""
    fixed = ("data.stream=false", "data.kwargs.n=40", "training.steps=6")
    straight = sft_engine.train(recipe(*fixed), tmp_path / "straight")
    state = read_state(straight / "checkpoint-4" / sft_engine.STATE_FILE)
    assert len(state["examples"]["order"]) == 40 - 4 * 4
    part = interrupted_copy(straight, tmp_path / "resumed", 4)
    sft_engine.train(recipe(*fixed), part, resume=True)

    assert metric_rows(part) == metric_rows(straight) and len(losses(part)) == 6
    assert_same_tensors(straight / "final/model.safetensors", part / "final/model.safetensors")


def test_a_state_file_that_needs_unpickling_is_refused_and_nothing_runs(tmp_path):
    """Review 3.13: a crafted ``sft_state.pt`` is one sentence (``UnsafeStateError``), not a torch traceback."""
    out, marker = tmp_path / "handed", tmp_path / "PWNED"
    sft_engine.train(recipe("training.steps=2"), out)
    path = out / "checkpoint-2" / sft_engine.STATE_FILE
    rewrite_state(path, {**read_state(path), "note": Payload(marker)})
    with pytest.raises(UnsafeStateError, match=r"refused to read .*sft_state\.pt.*Nothing of it was run"):
        sft_engine.train(recipe("training.steps=4"), out, resume=True)
    assert not marker.exists()


def test_lr_factor_warms_up_holds_then_decays_linearly_to_zero():
    from zoo.engines.vlm.sft import lr_factor

    got = [lr_factor(s, warmup=3, total=10, decay=4) for s in range(10)]
    assert got == pytest.approx([1 / 3, 2 / 3, 1, 1, 1, 1, 1, 0.75, 0.5, 0.25])
    assert [lr_factor(s, warmup=3, total=10, decay=0) for s in (0, 2, 9)] == pytest.approx([1 / 3, 1, 1])


def test_decay_resumed_from_a_constant_rate_checkpoint_equals_a_straight_decay_run(tmp_path):
    """The warm-up-stable-decay schedule equals the constant one until its decay starts, so a decay can be
    appended to a finished constant-rate run by resuming it (how a release settles its SFT start)."""
    wsd = ("training.warmup_steps=2", "training.steps=6", "training.decay_steps=2")
    straight = sft_engine.train(recipe(*wsd), tmp_path / "straight")
    part = tmp_path / "resumed"
    sft_engine.train(recipe("training.warmup_steps=2", "training.steps=4"), part)  # constant rate to step 4
    sft_engine.train(recipe(*wsd), part, resume=True)

    with (straight / "metrics.csv").open() as f:
        lrs = [float(r["lr"]) for r in csv.DictReader(f)]
    peak = recipe().training.lr
    assert lrs == pytest.approx([peak] * 4 + [peak / 2, 0.0])  # the rate of the next step, logged after each
    assert losses(part) == losses(straight)
    a, b = load_file(straight / "final/model.safetensors"), load_file(part / "final/model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("overrides", [("training.steps=4", "training.decay_steps=5"),
                                       ("training.decay_steps=2", "training.max_minutes=1")])  # fmt: skip
def test_decay_needs_a_step_count_it_can_reach(overrides):
    with pytest.raises(RecipeError, match="decay_steps"):
        recipe(*overrides)


def test_time_budget_stops_the_run_and_is_recorded(tmp_path):
    out = sft_engine.train(recipe("training.steps=1000", "training.max_minutes=0.0001"), tmp_path / "run")
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert len(rows) == 1 and float(rows[-1]["cpu_minutes"]) >= 0.0001  # stopped after the step that used it up
    assert (out / "final" / "model.safetensors").is_file() and latest_checkpoint(out).name == "checkpoint-1"


def test_recipe_without_answer_format_is_rejected():
    with pytest.raises(RecipeError, match="answer_format"):
        recipe("data.answer_format=")


def test_unknown_answer_format_names_close_matches(tmp_path):
    with pytest.raises(Exception, match="qwen-bbox-json"):
        sft_engine.train(recipe("data.answer_format=qwen-bbox-jsn", "training.steps=1"), tmp_path / "run")


def test_multi_turn_sft_streams_steps_in_their_expert_dialogue():
    import random

    from zoo.engines.reading import load_recipe
    from zoo.engines.vlm.sft_engine import ExampleStream
    from zoo.recipe import RecipeError

    recipe = load_recipe("domains/gui/recipes/ui-s1-tiny-sft.yaml")
    batch = ExampleStream(recipe)(random.Random(0), 6)
    assert len(batch) == 6
    for example in batch:
        assert example.messages[-1]["role"] == "user" and example.target.startswith("<think>")
        assert 1 <= len(example.images) <= 2
        assert sum(p.get("type") == "image" for m in example.messages for p in m["content"]) == len(example.images)
    with pytest.raises(RecipeError, match="multi_turn needs data.stream"):
        load_recipe("domains/gui/recipes/ui-s1-tiny-sft.yaml", ["data.stream=false"])


def test_added_tokens_are_whole_tokens_of_a_tiny_model_and_are_added_to_a_saved_one(tmp_path):
    """``model.added_tokens`` (an action codebook): built into a tiny tokenizer; added to a checkpoint that lacks
    them, its embedding rows starting at the mean of the old ones; a checkpoint that has them is left alone."""
    from domains.driving.action_tokens import TOKENS
    from zoo.engines.vlm.policy_model import load_policy

    target = "model.added_tokens=domains.driving.action_tokens:TOKENS"
    model, processor = load_policy(recipe(target), corpus=["<d12><c-3> go"])
    assert processor.tokenizer("<d12><c-3>")["input_ids"] == processor.tokenizer.convert_tokens_to_ids(["<d12>", "<c-3>"])
    assert model.get_input_embeddings().num_embeddings == len(processor.tokenizer)

    plain, plain_processor = load_policy(recipe(), corpus=["go"])
    plain.save_pretrained(tmp_path / "plain")
    plain_processor.save_pretrained(tmp_path / "plain")
    old = plain.get_input_embeddings().weight.detach().clone()
    grown, grown_processor = load_policy(recipe(f"model.name={tmp_path / 'plain'}", target))
    weight = grown.get_input_embeddings().weight.detach()
    assert len(grown_processor.tokenizer) == weight.shape[0] == old.shape[0] + len(TOKENS)
    assert torch.equal(weight[: old.shape[0]], old)
    assert torch.allclose(weight[old.shape[0]:].mean(0), old.mean(0), atol=0.05)
    assert grown_processor.tokenizer.tokenize("<d80>") == ["<d80>"]

    grown.save_pretrained(tmp_path / "grown")
    grown_processor.save_pretrained(tmp_path / "grown")
    again, _ = load_policy(recipe(f"model.name={tmp_path / 'grown'}", target))
    assert again.get_input_embeddings().num_embeddings == weight.shape[0]
    with pytest.raises(RecipeError, match="not an importable"):
        load_policy(recipe("model.added_tokens=domains.driving.action_tokens:NOPE"), corpus=["go"])
