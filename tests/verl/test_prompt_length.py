"""The verl export sizes ``data.max_prompt_length`` from its prompts and sets the model's patch size (main venv, no
verl needed; ``test_verl_reads_export.py`` checks the same files with verl's own dataset code).

verl 0.9.1 defaults to 512 prompt tokens, image tokens included, and 14-pixel patches; the export used to keep both
and switch verl's length filter on, which dropped every GUI-sized screenshot without an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from zoo.engines.reading import load_recipe
from zoo.engines.vlm.recipe import VerlRecipe
from zoo.engines.vlm.verl_engine import parquet_rows
from zoo.engines.vlm.verl_prompts import ImageSettings, image_settings, image_tokens, prompt_tokens
from zoo.recipe import RecipeError
from zoo.train import run

ROOT = Path(__file__).resolve().parents[2]
GUI_RECIPE = ROOT / "domains" / "gui" / "recipes" / "gui-g1-tiny-cpu.yaml"
#: Synthetic screens of real GUI sizes (390 x 844 to 1440 x 900) at GUI-G1's pixel limits (3136 to 12845056).
SCREENS = ("data.kwargs.task=screens", "data.kwargs.n=6", "model.entry=gui-g1-3b")
GUI_G1_LIMITS = {"min_pixels": 3136, "max_pixels": 12845056}
PATCH = {"qwen2_5_vl": 14, "qwen3_vl": 16}


@pytest.fixture(scope="module", params=sorted(PATCH))
def screens(request, tmp_path_factory) -> tuple[str, Any, Path]:
    """``(arch, recipe, verl folder)`` of a tiny ``arch`` model's export of GUI-sized screenshots."""
    out = tmp_path_factory.mktemp(f"verl-{request.param}")
    run(str(GUI_RECIPE), [*SCREENS, f"model.name=tiny:{request.param}", f"training.output_dir={out}"],
        engine="vlm-verl", dry_run=True)  # fmt: skip
    return request.param, load_recipe(out / "recipe.yaml", engine="vlm-verl"), out / "verl"


def trl_token_counts(recipe: Any, folder: Path) -> list[int]:
    """Each sample's prompt tokens as the ``vlm-trl`` engine builds them (TRL's message preparation, the policy's
    processor with its pixel limits, image tokens included)."""
    from transformers import AutoProcessor
    from trl.data_utils import prepare_multimodal_messages

    from zoo.engines.vlm.contract import with_contract
    from zoo.engines.vlm.trl_data import sample_to_row

    processor = AutoProcessor.from_pretrained(folder / "model")
    counts = []
    for sample in recipe.data.load():
        row = sample_to_row(with_contract(sample, recipe.model.contract()), recipe.data.system_prompt, processor)
        messages = prepare_multimodal_messages(row["prompt"], images=row["images"])
        ids = processor.apply_chat_template(conversation=[messages], add_generation_prompt=True, tokenize=True,
                                            return_dict=True)["input_ids"][0]  # fmt: skip
        counts.append(len(ids))
    return counts


def test_max_prompt_length_is_the_longest_prompt_with_its_image_tokens(screens) -> None:
    _, recipe, folder = screens
    args = yaml.safe_load((folder / "verl_args.yaml").read_text())
    counts = trl_token_counts(recipe, folder)
    assert max(counts) > 512, "these screenshots alone exceed verl's default max_prompt_length"
    # the processor is on this machine, so the count is exact, not just a bound
    assert int(args["data.max_prompt_length"]) == max(counts)
    assert args["data.filter_overlong_prompts"] == "false", "verl must stop on an overlong prompt, not drop it"


def test_patch_size_and_pixel_limits_are_the_models(screens) -> None:
    arch, _, folder = screens
    args = yaml.safe_load((folder / "verl_args.yaml").read_text())
    assert args["data.image_patch_size"] == str(PATCH[arch])
    assert {key: int(args[f"++data.mm_processor_kwargs.{key}"]) for key in GUI_G1_LIMITS} == GUI_G1_LIMITS
    images = [image for row in pq.read_table(folder / "train.parquet").to_pylist() for image in row["images"]]
    assert images and all({key: image[key] for key in GUI_G1_LIMITS} == GUI_G1_LIMITS for image in images)


def hub_recipe(name: str) -> VerlRecipe:
    return VerlRecipe.from_dict({
        "name": "hub-model", "engine": "vlm-verl",
        "model": {"name": name, "entry": "gui-g1-3b"},
        "data": {"name": "gui-synthetic", "kwargs": {"task": "screens", "n": 6}},
        "rewards": [{"name": "gui-g1"}], "algorithm": {"num_generations": 4}, "training": {"batch_size": 4},
    })  # fmt: skip


def test_without_the_processor_the_length_is_an_upper_bound(hf_cache) -> None:
    """Qwen2.5-VL-3B is neither in the (empty) cache nor a directory: its patch comes from the config the zoo knows
    (zoo.model_size.KNOWN), its image tokens from the smart-resize rule; they equal those a processor of the same
    patch and limits counts, and the text bound is above its tokenizer's count."""
    from zoo.tiny import build_tiny_vlm

    hub = hub_recipe("Qwen/Qwen2.5-VL-3B-Instruct")
    bound = image_settings(hub, "Qwen/Qwen2.5-VL-3B-Instruct")
    assert (bound.processor, bound.patch_size, bound.merge_size) == (None, 14, 2)
    assert (bound.min_pixels, bound.max_pixels) == tuple(GUI_G1_LIMITS.values())
    exact = ImageSettings(14, 2, *GUI_G1_LIMITS.values(), processor=build_tiny_vlm("qwen2_5_vl", **GUI_G1_LIMITS)[1])
    for row in parquet_rows(hub.data.load(), "gui-g1", "gui-synthetic"):
        assert [image_tokens(im.size, bound) for im in row["images"]] == [image_tokens(im.size, exact)
                                                                         for im in row["images"]]  # fmt: skip
        assert prompt_tokens(row, bound) >= prompt_tokens(row, exact)


def test_a_model_sized_by_nothing_on_this_machine_names_the_download(hf_cache) -> None:
    with pytest.raises(RecipeError, match=r"hf download Qwen/Qwen3-VL-8B-Instruct --include '\*\.json'"):
        image_settings(hub_recipe("Qwen/Qwen3-VL-8B-Instruct"), "Qwen/Qwen3-VL-8B-Instruct")


def test_image_tokens_follow_the_patch_size() -> None:
    """A 1440 x 900 screenshot: 51 x 32 merged patches of 28 pixels for Qwen2.5-VL, 45 x 28 of 32 for Qwen3-VL."""
    limits = tuple(GUI_G1_LIMITS.values())
    assert image_tokens((1440, 900), ImageSettings(14, 2, *limits)) == 51 * 32
    assert image_tokens((1440, 900), ImageSettings(16, 2, *limits)) == 45 * 28


def test_the_recipes_limit_and_truncation_are_passed_and_a_longer_prompt_is_refused(tmp_path) -> None:
    """``data.max_prompt_length`` set: verl gets it (not the longest prompt) with ``data.truncation``; a prompt above it
    stops the export, naming its sample, since the tiny model's processor counts exactly."""
    small = [*SCREENS[:1], "data.kwargs.n=2", "model.entry=gui-g1-3b", "model.name=tiny:qwen2_5_vl"]

    def export(name: str, *limit: str) -> dict[str, str]:
        run(str(GUI_RECIPE), [*small, *limit, f"training.output_dir={tmp_path / name}"], engine="vlm-verl", dry_run=True)
        return yaml.safe_load((tmp_path / name / "verl" / "verl_args.yaml").read_text())

    longest = int(export("no-limit")["data.max_prompt_length"])  # the longest prompt, counted exactly
    args = export("fits", "data.max_prompt_length=1000000")
    assert (args["data.max_prompt_length"], args["data.truncation"]) == ("1000000", "error")
    assert "data.max_prompt_length=1000000" in (tmp_path / "fits" / "verl" / "run_verl.sh").read_text()
    with pytest.raises(RecipeError, match=rf"sample '.+': its prompt is {longest} tokens \(image tokens included\), "
                                          rf"above data.max_prompt_length={longest - 1} "):  # fmt: skip
        export("too-long", f"data.max_prompt_length={longest - 1}")


def test_counted_as_upper_bounds_a_longer_prompt_is_a_warning(caplog) -> None:
    """Without the processor the counts are bounds, not proof: the export keeps the recipe's limit and warns."""
    from zoo.engines.vlm.recipe import PromptDataConfig
    from zoo.engines.vlm.verl_prompts import prompt_limit

    rows = parquet_rows(hub_recipe("Qwen/Qwen2.5-VL-3B-Instruct").data.load(), "gui-g1", "gui-synthetic")
    with caplog.at_level("WARNING"):
        assert prompt_limit(PromptDataConfig(name="gui-synthetic", max_prompt_length=10), rows,
                            ImageSettings(14, 2, *GUI_G1_LIMITS.values())) == 10  # fmt: skip
    assert f"{len(rows)} prompt(s) may exceed data.max_prompt_length=10" in caplog.text
