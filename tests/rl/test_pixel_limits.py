"""``model.min_pixels``/``model.max_pixels`` of the VLM engines, end to end on a tiny Qwen2.5-VL.

The frame the policy sees (its processor's smart resize) is the frame box rewards map predictions
from: :mod:`zoo.engines.vlm.trl_data` writes it into each sample's ``target["resized_size"]``, the
way Vision-R1 reads it from ``image_grid_thw`` (jefferyZhan/Griffon@9866875:
Vision-R1/vision_r1/trainer/qwen_trainer.py:373-374), and a checkpoint carries it to evaluation.
"""

from __future__ import annotations

import json

import pytest
from PIL import Image

import zoo
from rewards.adapters import to_trl
from zoo.data import Sample
from zoo.engines import ENGINES
from zoo.engines.vlm.policy_model import load_policy, pixel_limits
from zoo.engines.vlm.recipe import ModelConfig, VLMRecipe
from zoo.engines.vlm.trl_data import to_trl_dataset
from zoo.hub import ResolvedModel
from zoo.pipelines.vlm import VLMPipeline
from zoo.recipe import DataConfig, RecipeError, RewardSpec

#: run_qwen_vision_r1.sh:24 (jefferyZhan/Griffon@9866875) trains at this many pixels at most.
VISION_R1_MAX_PIXELS = 401408
#: 1200 x 900 = 1,080,000 pixels: larger than 401,408, so the processor shrinks it.
BIG = (1200, 900)
GROUND_TRUTH = [{"bbox": [120.0, 90.0, 600.0, 450.0], "label": "cat"}, {"bbox": [700.0, 300.0, 1100.0, 850.0], "label": "dog"}]


def _recipe(engine: str = "vlm-trl", **model: object) -> VLMRecipe:
    """A recipe of ``engine``'s own class (:data:`zoo.engines.ENGINES`)."""
    cls = ENGINES.get(engine).recipe_class()
    return cls(name="pixels", engine=engine, data=DataConfig(name="perception-synthetic"),
               rewards=(RewardSpec(name="vision-r1-precision"),), model=ModelConfig(**model))  # fmt: skip


def _seen(processor: object, size: tuple[int, int]) -> list[int]:
    """``[w, h]`` the processor actually feeds the model: its ``image_grid_thw`` times the patch size."""
    batch = processor(text=["<|vision_start|><|image_pad|><|vision_end|>x"], images=[Image.new("RGB", size)],
                      return_tensors="pt")  # fmt: skip
    _, grid_h, grid_w = batch["image_grid_thw"][0].tolist()
    patch = processor.image_processor.patch_size
    return [grid_w * patch, grid_h * patch]


def _answer_in_frame(seen: list[int]) -> str:
    """Vision-R1 JSON with the ground-truth boxes written in the model's frame (integers, as the model writes)."""
    sx, sy = seen[0] / BIG[0], seen[1] / BIG[1]
    items = [{"bbox_2d": [round(b[0] * sx), round(b[1] * sy), round(b[2] * sx), round(b[3] * sy)], "label": o["label"]}
             for o in GROUND_TRUTH for b in [o["bbox"]]]  # fmt: skip
    return json.dumps(items)


def _precision(dataset: object, answer: str) -> float:
    row = dataset[0]
    return to_trl("vision-r1-precision")(["p"], [answer], target=[row["target"]])[0]


@pytest.fixture(scope="module")
def big_sample() -> Sample:
    return Sample("big", (Image.new("RGB", BIG, (90, 90, 90)),), "detect",
                  {"objects": GROUND_TRUTH, "image_size": list(BIG)})  # fmt: skip


@pytest.mark.parametrize("max_pixels", [VISION_R1_MAX_PIXELS, 200704])
def test_a_large_image_is_scored_in_the_frame_the_processor_feeds(big_sample, max_pixels):
    _, processor = load_policy(_recipe(name="tiny:qwen2_5_vl", max_pixels=max_pixels), [big_sample])
    seen = _seen(processor, BIG)
    assert seen[0] * seen[1] <= max_pixels < BIG[0] * BIG[1]
    dataset = to_trl_dataset([big_sample], processor=processor)
    assert json.loads(dataset[0]["target"])["resized_size"] == seen
    # boxes written in the processor's frame map back onto the ground truth (GIoU 1 up to integer rounding in a small frame)
    assert _precision(dataset, _answer_in_frame(seen)) == pytest.approx(1.0, abs=0.05)
    # the same boxes written as if the image had been shown at full size land elsewhere
    assert _precision(dataset, _answer_in_frame(list(BIG))) < 0.6


def test_without_limits_the_processor_keeps_its_own_and_the_reward_follows_it(big_sample):
    _, processor = load_policy(_recipe(name="tiny:qwen2_5_vl"), [big_sample])
    seen = _seen(processor, BIG)
    dataset = to_trl_dataset([big_sample], processor=processor)
    assert json.loads(dataset[0]["target"])["resized_size"] == seen
    assert _precision(dataset, _answer_in_frame(seen)) == pytest.approx(1.0, abs=0.05)


def test_a_saved_checkpoint_is_evaluated_at_its_training_resolution(big_sample, tmp_path):
    model, processor = load_policy(_recipe(name="tiny:qwen2_5_vl", max_pixels=VISION_R1_MAX_PIXELS), [big_sample])
    trained_frame = _seen(processor, BIG)
    processor.save_pretrained(tmp_path)
    from transformers import AutoProcessor

    reloaded = AutoProcessor.from_pretrained(tmp_path)
    assert reloaded.image_processor.size["longest_edge"] == VISION_R1_MAX_PIXELS
    # vision-r1-7b's spec allows up to 12800*28*28 pixels; the checkpoint's processor narrows it to its own
    pipe = VLMPipeline(model, reloaded, zoo.info("vision-r1-7b"), ResolvedModel(tmp_path, "local", "local"))
    _, resized = pipe.prepare(big_sample.images[0])
    assert list(resized.size) == trained_frame == _seen(reloaded, resized.size)  # one resize, the training one


def test_limits_default_to_the_entry_spec_and_the_recipe_overrides_them():
    spec = zoo.info("vision-r1-7b").spec
    assert pixel_limits(_recipe(name="vision-r1-7b")) == (spec.min_pixels, spec.max_pixels)
    assert pixel_limits(_recipe(name="vision-r1-7b", max_pixels=VISION_R1_MAX_PIXELS)) == (spec.min_pixels, 401408)
    assert pixel_limits(_recipe(name="Qwen/Qwen2.5-VL-7B-Instruct")) == (None, None)  # not an entry: the processor's
    assert pixel_limits(_recipe(name="tiny:qwen2_5_vl", min_pixels=3136)) == (3136, None)


@pytest.mark.parametrize(("model", "match"), [({"max_pixels": 0}, "positive integer"),
                                              ({"min_pixels": True}, "positive integer"),
                                              ({"min_pixels": 5000, "max_pixels": 4000}, "above model.max_pixels")])
def test_bad_limits_are_one_recipe_error(model, match):
    with pytest.raises(RecipeError, match=match):
        ModelConfig(**model)


def test_a_minimum_above_the_processors_maximum_is_refused(big_sample):
    with pytest.raises(RecipeError, match="set both"):
        load_policy(_recipe(name="tiny:qwen2_5_vl", min_pixels=10**8), [big_sample])


def test_verl_takes_the_limits_for_a_hub_model_too():
    """The export hands the recipe's pixel limits to both of verl's resizes (``zoo.engines.vlm.verl_prompts``:
    the parquet's images and ``data.mm_processor_kwargs``), so a Hub model's recipe keeps them."""
    for name in ("Qwen/Qwen2.5-VL-7B-Instruct", "tiny:qwen2_5_vl"):
        recipe = _recipe(engine="vlm-verl", name=name, max_pixels=VISION_R1_MAX_PIXELS)
        assert recipe.model.max_pixels == VISION_R1_MAX_PIXELS
