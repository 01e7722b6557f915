"""A recipe naming its entry (``model.entry``) trains on exactly the prompt ``zoo.load`` sends for the same sample.

The GUI grounding recipes name ``gui-grounding-tiny``; their dataset yields raw instructions. The
tokens the GRPO trainer builds for a sample (TRL's own ``prepare_multimodal_messages`` and the
processor's chat template, as ``GRPOTrainer._tokenize_prompts`` runs them) and the SFT loop's prompt
must equal the pipeline's for the same image and question, image tokens included (pixel limits).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from trl.data_utils import prepare_multimodal_messages

import zoo
from zoo.engines.vlm.contract import with_contract
from zoo.engines.vlm.policy_model import load_policy, pixel_limits
from zoo.engines.vlm.sft_engine import ExampleStream
from zoo.engines.vlm.trl_data import to_trl_dataset
from zoo.images import load_image
from zoo.recipe import RecipeError, load_recipe

ROOT = Path(__file__).resolve().parents[2]
GRPO = ROOT / "domains/gui/recipes/gui-g1-tiny-cpu.yaml"
SFT = ROOT / "domains/gui/recipes/gui-g1-tiny-sft.yaml"


@pytest.fixture(scope="module")
def pipe():
    return zoo.load("gui-grounding-tiny")


def _pipeline_ids(pipe, image, question: str) -> list[int]:
    _, resized = pipe.prepare(image)
    text = pipe.processor.apply_chat_template(pipe.messages(resized, question), add_generation_prompt=True,
                                              tokenize=False)  # fmt: skip
    return pipe.processor(text=[text], images=[resized], return_tensors="pt")["input_ids"][0].tolist()


def _trainer_ids(processor, samples) -> list[list[int]]:
    dataset = to_trl_dataset(samples, processor=processor)
    prompts = [prepare_multimodal_messages(row["prompt"], images=row["images"]) for row in dataset]
    tokenized = processor.apply_chat_template(conversation=prompts, add_generation_prompt=True, tokenize=True,
                                              return_dict=True)  # fmt: skip
    return [list(ids) for ids in tokenized["input_ids"]]


def test_the_grpo_trainer_tokenises_what_the_pipeline_tokenises(pipe) -> None:
    recipe = load_recipe(GRPO, ["data.kwargs.n=3"])
    assert recipe.model.entry == "gui-grounding-tiny"
    samples = recipe.data.load()
    _, processor = load_policy(recipe, samples)
    assert pixel_limits(recipe) == pipe.pixel_limits  # the frame the model sees, in training and at inference
    trained = _trainer_ids(processor, [with_contract(s, recipe.model.contract()) for s in samples])
    asked = [_pipeline_ids(pipe, load_image(s.images[0]), s.question) for s in samples]
    assert trained == asked
    # without the entry's contract the trainer would see the bare instruction: the check can fail
    assert _trainer_ids(processor, samples) != asked


def test_the_sft_loop_prompts_as_the_pipeline_does(pipe) -> None:
    recipe = load_recipe(SFT, ["data.stream=false", "data.kwargs.n=2"])
    stream = ExampleStream(recipe)
    for sample in stream.samples:
        messages = stream.example(sample).messages
        text = pipe.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        _, resized = pipe.prepare(load_image(sample.images[0]))
        expected = pipe.processor.apply_chat_template(pipe.messages(resized, sample.question),
                                                      add_generation_prompt=True, tokenize=False)  # fmt: skip
        assert text == expected


def test_the_contract_is_decided_once() -> None:
    with pytest.raises(RecipeError, match="model.max_pixels=401408: model.entry='gui-grounding-tiny' decides it"):
        load_recipe(GRPO, ["model.max_pixels=401408"])
    with pytest.raises(RecipeError, match="data.system_prompt and model.entry='gui-grounding-tiny' both set"):
        load_recipe(GRPO, ["data.system_prompt=You are a helpful assistant."])
    with pytest.raises(RecipeError, match="model.entry: unknown model 'gui-grounding-tine'"):
        load_recipe(GRPO, ["model.entry=gui-grounding-tine"])
    with pytest.raises(RecipeError, match="is not a vision-language entry"):
        load_recipe(GRPO, ["model.entry=flow-grpo-tiny-colour"])
