"""Every perception recipe names the entry whose prompt it trains with (``model.entry``), as issue #42 decides.

The loaders yield raw questions; the entry wraps them as ``zoo.load`` does (the trainer-equals-pipeline check
over every recipe naming an entry is ``tests/engines/test_contract.py``). The smoke recipes name the entry whose
template their synthetic task used to write itself, and the 56 px images are left as they were by that entry's
pixel limits; the recipes that reproduce a released model name it and cite the authors' prompt.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from zoo.engines.reading import load_checked, load_recipe
from zoo.engines.vlm.policy_model import pixel_limits
from zoo.recipe import RecipeError

RECIPES = Path(__file__).parents[3] / "domains" / "perception" / "recipes"
ENTRIES = {
    "vlm-r1-rec": "vlm-r1-rec-3b",
    "vision-r1": "vision-r1-7b",
    "vlm-r1-rec-smoke": "vlm-r1-rec-3b",
    "visual-rft-detection-smoke": "vlm-r1-ovd-3b",
    "vision-r1-smoke": "vlm-r1-ovd-3b",
    "curr-reft-smoke": "curr-reft-7b",
    "scs-smoke": "curr-reft-7b",
    "shuffle-r1-smoke": "curr-reft-7b",
    "r1-reward-smoke": "r1-reward-7b",
}


def test_every_recipe_names_its_entry():
    assert {p.stem for p in RECIPES.glob("*.yaml")} == set(ENTRIES)
    for stem, entry in ENTRIES.items():
        recipe = load_recipe(RECIPES / f"{stem}.yaml")
        assert recipe.model.entry == entry and recipe.model.variant is None, stem
        assert recipe.data.system_prompt is None, stem


@pytest.mark.parametrize("stem", [s for s in ENTRIES if s.endswith("-smoke")])
def test_smoke_recipes_keep_the_tiny_images_unresized(stem):
    from qwen_vl_utils import smart_resize

    low, high = pixel_limits(load_recipe(RECIPES / f"{stem}.yaml"))  # the entry's limits
    assert smart_resize(56, 56, factor=28, min_pixels=low, max_pixels=high) == (56, 56)
    # the shuffle-r1 entries' minimum would upscale them (so shuffle-r1-smoke asks through curr-reft-7b's prompt)
    assert smart_resize(56, 56, factor=28, min_pixels=262144, max_pixels=4194304) != (56, 56)


def test_reproducing_recipes_cite_the_authors_prompt():
    rec = load_recipe(RECIPES / "vlm-r1-rec.yaml")
    assert rec.provenance["model.entry"].startswith("om-ai-lab/VLM-R1@ec920b2:src/open-r1-multimodal/src/open_r1/"
                                                    "grpo_rec.py:190-201")  # fmt: skip
    assert pixel_limits(rec) == (3136, 12845056)  # the entry's: the Qwen2.5-VL processor defaults VLM-R1 keeps
    vision = load_recipe(RECIPES / "vision-r1.yaml")
    assert vision.provenance["model.entry"].startswith("jefferyZhan/Griffon@9866875:Vision-R1/vision_r1/"
                                                       "visionr1_qwen.py:438-447")  # fmt: skip
    # Vision-R1 trains at other limits than its entry infers at (784 .. 12800*28*28): cited, so allowed
    assert pixel_limits(vision) == (3136, 401408)
    assert {"model.min_pixels", "model.max_pixels"} <= set(vision.provenance)


def test_a_smoke_recipe_at_other_pixel_limits_than_its_entry_needs_a_reason():
    with pytest.raises(RecipeError, match="model.min_pixels=262144: model.entry='curr-reft-7b' decides it"):
        load_checked(RECIPES / "shuffle-r1-smoke.yaml", ["model.min_pixels=262144"])
