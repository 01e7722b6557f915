"""``data.max_prompt_length`` / ``data.truncation`` in the semi-online loop: a turn longer than the limit (counted on
the processor's output, image tokens included) stops the run naming its sample, as UI-S1's rollout does; one within
it trains."""

from __future__ import annotations

import pytest

from rewards.base import RewardResult
from zoo.engines.reading import load_recipe
from zoo.engines.vlm.multiturn_policy import VLMPolicy
from zoo.engines.vlm.semi_online_rollout import Turn, group_episodes, semi_online_rollout
from zoo.images import load_image
from zoo.recipe import RecipeError
from zoo.train import run

RECIPE = "domains/gui/recipes/ui-s1-smoke.yaml"
SMALL = ["data.kwargs.n=2", "multi_turn.episodes_per_step=1", "algorithm.max_completion_length=4", "training.steps=1"]


@pytest.fixture(scope="module")
def first_turn():
    """``(model, processor, the first turn of an episode as the rollout builds it)`` of the smoke recipe's model."""
    from zoo.engines.vlm.policy_model import load_policy

    recipe = load_recipe(RECIPE)
    samples = recipe.data.load()
    model, processor = load_policy(recipe, samples)
    episode = group_episodes(samples)[0]
    records = semi_online_rollout([episode[:1]], VLMPolicy(model, processor, max_new_tokens=2),
                                  lambda texts, batch: [RewardResult(0.0, {"extract_match": 0.0}) for _ in texts],
                                  lambda s: "x", rollout_n=1, patch_threshold=0)  # fmt: skip
    return model, processor, records[0].turn


def _tokens(processor, turn: Turn) -> tuple[int, int]:
    """``(prompt tokens with each image expanded, text tokens alone)`` of ``turn``, through the processor's own API."""
    text = processor.apply_chat_template(turn.messages, add_generation_prompt=True, tokenize=False)
    images = [load_image(image) for image in turn.images]
    return len(processor(text=[text], images=images)["input_ids"][0]), len(processor.tokenizer(text)["input_ids"])


def test_a_turn_is_refused_above_the_limit_and_sampled_at_it(first_turn):
    model, processor, turn = first_turn
    length, text_only = _tokens(processor, turn)
    assert turn.sample_id and length > text_only, "the count includes the screenshot's tokens"
    (answer,) = VLMPolicy(model, processor, max_new_tokens=2, max_prompt_length=length)([turn])
    assert answer.token_ids
    with pytest.raises(RecipeError, match=rf"sample '{turn.sample_id}': this turn's prompt is {length} tokens .*"
                                          rf"above data.max_prompt_length={length - 1}"):  # fmt: skip
        VLMPolicy(model, processor, max_new_tokens=2, max_prompt_length=length - 1)([turn])


def test_the_engine_trains_within_the_limit_and_stops_above_it(tmp_path):
    out = run(RECIPE, [*SMALL, "data.max_prompt_length=4096"], output_dir=str(tmp_path / "fits"))
    assert (out / "final").is_dir() and len((out / "metrics.csv").read_text().splitlines()) == 2
    with pytest.raises(RecipeError, match=r"sample '.+': this turn's prompt is \d+ tokens \(image tokens included\), "
                                          r"above data.max_prompt_length=8;"):  # fmt: skip
        run(RECIPE, [*SMALL, "data.max_prompt_length=8"], output_dir=str(tmp_path / "too-long"))


@pytest.mark.parametrize(("override", "message"), [
    ("data.max_prompt_length=0", "a token count >= 1, or null"),
    ("data.truncation=left", "would part image tokens from their pixels"),
    ("data.truncation=middle", "is not one of"),
])  # fmt: skip
def test_bad_limits_are_named(override: str, message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        load_recipe(RECIPE, [override])


def test_the_trl_loop_takes_no_prompt_limit() -> None:
    """GUI-G1's trainer leaves its --max_prompt_length inert, and the vlm-trl engine reads none: the key is refused."""
    with pytest.raises(RecipeError, match="max_prompt_length"):
        load_recipe("domains/gui/recipes/gui-g1-tiny-cpu.yaml", ["data.max_prompt_length=1024"])
