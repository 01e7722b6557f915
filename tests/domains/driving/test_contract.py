"""The driving loader yields the scene's raw question and the recipes name ``driving-vla-tiny`` (issue #42): the
prompt its trainer tokenises is the one ``zoo.load("driving-vla-tiny")`` tokenises, and the one it trained on."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from trl.data_utils import prepare_multimodal_messages

import zoo
from domains.driving.data import synthetic_driving
from zoo.engines.reading import load_checked, load_recipe
from zoo.engines.vlm.contract import with_contract
from zoo.engines.vlm.policy_model import load_policy, pixel_limits
from zoo.engines.vlm.sft_engine import ExampleStream
from zoo.engines.vlm.trl_data import to_trl_dataset
from zoo.images import load_image
from zoo.recipe import RecipeError

ROOT = Path(__file__).resolve().parents[3]
RECIPES = ROOT / "domains" / "driving" / "recipes"
VLA_RECIPES = ("driving-vla-tiny-sft", "driving-vla-tiny-sft-control", "driving-vla-tiny-cpu", "driving-vla-grpo",
               "driving-vla-grpo-smoke")  # fmt: skip


def _old_question(speed: float, command: str) -> str:
    """The question the loader wrote before (and writes now), spelled out: the whole user turn."""
    return (f"Ego speed {speed:.1f} m/s. Command: {command}. Plan the next 4 s: 8 waypoints (x,y,heading) every 0.5 s "
            "in the ego frame (x forward, y left, metres, radians).")  # fmt: skip


def test_the_loader_yields_the_raw_question_and_the_entry_sends_it_whole():
    spec = zoo.info("driving-vla-tiny").spec
    for sample in synthetic_driving(n=4, seed=3, size=56):
        scene = sample.target["scene"]
        assert sample.prompt == _old_question(scene["ego_speed"], scene["command"])
        assert with_contract(sample, spec).prompt == [{"role": "user", "content": sample.prompt}]  # no system prompt


def test_the_vla_recipes_name_the_tiny_entry_and_its_pixel_limits():
    for stem in VLA_RECIPES:
        recipe = load_recipe(RECIPES / f"{stem}.yaml")
        assert recipe.model.entry == "driving-vla-tiny", stem
        expected = (56 * 56, 224 * 224) if stem == "driving-vla-grpo" else (56 * 56, 112 * 112)
        assert pixel_limits(recipe) == expected, stem


def test_the_base_model_recipe_keeps_its_224_px_scenes_only_with_a_cited_reason(tmp_path):
    raw = yaml.safe_load((RECIPES / "driving-vla-grpo.yaml").read_text(encoding="utf-8"))
    assert raw["data"]["kwargs"]["size"] ** 2 == raw["model"]["max_pixels"]  # the scenes, unresized
    del raw["provenance"]
    (tmp_path / "uncited.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(RecipeError, match="model.max_pixels=50176: model.entry='driving-vla-tiny' decides it"):
        load_checked(tmp_path / "uncited.yaml")


@pytest.fixture(scope="module")
def pipe():
    return zoo.load("driving-vla-tiny")


def test_the_grpo_trainer_tokenises_what_the_shipped_pipeline_tokenises(pipe):
    checkpoint = str(ROOT / "checkpoints" / "driving-vla-tiny")  # the recipe's start, runs/.../final, stands in
    recipe = load_recipe(RECIPES / "driving-vla-tiny-cpu.yaml", ["data.kwargs.n=2", f"model.name={checkpoint}"])
    samples = recipe.data.load()
    _, processor = load_policy(recipe, samples)
    assert pixel_limits(recipe) == pipe.pixel_limits
    dataset = to_trl_dataset([with_contract(s, recipe.model.contract()) for s in samples], processor=processor)
    prompts = [prepare_multimodal_messages(row["prompt"], images=row["images"]) for row in dataset]
    trained = processor.apply_chat_template(conversation=prompts, add_generation_prompt=True, tokenize=True,
                                            return_dict=True)["input_ids"]  # fmt: skip
    for ids, sample in zip(trained, samples, strict=True):
        _, resized = pipe.prepare(load_image(sample.images[0]))
        text = pipe.processor.apply_chat_template(pipe.messages(resized, sample.question), add_generation_prompt=True,
                                                  tokenize=False)  # fmt: skip
        assert list(ids) == pipe.processor(text=[text], images=[resized], return_tensors="pt")["input_ids"][0].tolist()


def test_the_sft_loop_prompts_as_the_shipped_pipeline_does(pipe):
    stream = ExampleStream(load_recipe(RECIPES / "driving-vla-tiny-sft.yaml", ["data.stream=false", "data.kwargs.n=2"]))
    for sample in stream.samples:
        _, resized = pipe.prepare(load_image(sample.images[0]))
        render = pipe.processor.apply_chat_template
        assert (render(stream.example(sample).messages, add_generation_prompt=True, tokenize=False)
                == render(pipe.messages(resized, sample.question), add_generation_prompt=True, tokenize=False))  # fmt: skip
