"""The loaders yield raw questions and the entries' contract wraps them (issue #42): each recipe names the entry
whose prompt it trains with, and the wrapped prompt is exactly the one the loaders wrote before."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

import zoo
from domains.visual_code import data
from tests.engines.token_ids import pipeline_ids, trainer_ids
from zoo.engines.reading import load_checked, load_recipe
from zoo.engines.vlm.contract import with_contract
from zoo.engines.vlm.policy_model import load_policy, pixel_limits
from zoo.engines.vlm.sft_engine import ExampleStream
from zoo.engines.vlm.trl_data import to_trl_dataset
from zoo.images import load_image
from zoo.recipe import RecipeError

RECIPES = Path(data.__file__).parent / "recipes"

# The texts the loaders wrote before they yielded raw questions, spelled out (not read from the constants).
# DocTron-hub/MSRL@203465d:README.md:245-248, byte for byte (it opens and closes on its own line).
OLD_MSRL = """
You are an expert Python developer who specializes in writing matplotlib code based on a given picture. I found a very nice picture in a STEM paper, but there is no corresponding source code available. I need your help to generate the Python code that can reproduce the picture based on the picture I provide.
Now, please give me the matplotlib code that reproduces the picture below, starting with "```python" and ending with "```".
"""
# zoo: the zoo's own SVG and CadQuery prompts (RLRF's is unpublished, CAD-RL publishes none).
OLD_SVG = ("Convert the picture into SVG code. Answer with a single <svg> element whose viewBox matches the picture, "
           "and nothing else.")  # fmt: skip
OLD_CAD = ("Write CadQuery Python code that builds the part described below. Import cadquery as cq and leave the "
           'final solid in a variable named result. Answer with one block starting with "```python" and ending with '
           '"```".\n\n{description}')  # fmt: skip


def _user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def _spec(name: str):
    return zoo.info(name).spec


def test_loaders_yield_raw_questions(tmp_path):
    (chart,) = data.synthetic_charts(n=1, seed=1, size=28)
    (svg,) = data.synthetic_svgs(n=1, seed=1, size=28)
    (cad,) = data.synthetic_cad(n=1, seed=1)
    assert chart.prompt == "" and svg.prompt == "" and chart.images and svg.images  # the picture is the task
    assert cad.prompt == cad.target["description"] and cad.images == ()  # text-to-CAD: the description, no image
    Image.new("RGB", (8, 8)).save(tmp_path / "x.png")
    (tmp_path / "x.py").write_text("import matplotlib\n")
    assert data.load_chartmimic(tmp_path)[0].prompt == ""
    pq.write_table(pa.Table.from_pylist([{"Filename": "a.svg", "Svg": '<svg viewBox="0 0 4 4"/>'}]), tmp_path / "s.parquet")
    assert data.load_svg_stack(tmp_path / "s.parquet", size=8)[0].prompt == ""
    with (tmp_path / "t.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, ["uid", "expert"])
        writer.writeheader()
        writer.writerow({"uid": "0/1", "expert": "A 10 mm cube."})
    assert data.load_text2cad(tmp_path / "t.csv")[0].prompt == "A 10 mm cube."


@pytest.mark.parametrize(("entries", "make", "old"), [
    (("msrl", "msrl-sft"), lambda: data.synthetic_charts(n=2, seed=2, size=28), lambda s: OLD_MSRL),
    (("rlrf", "svg-scenes-tiny"), lambda: data.synthetic_svgs(n=2, seed=2, size=28), lambda s: OLD_SVG),
    (("cad-rl",), lambda: data.synthetic_cad(n=2, seed=2), lambda s: OLD_CAD.format(description=s.target["description"])),
], ids=["msrl", "svg", "cad"])  # fmt: skip
def test_the_entrys_contract_wraps_a_raw_question_into_the_old_prompt(entries, make, old):
    for sample in make():
        for name in entries:
            # the GRPO loops (with_contract) and the SFT loop (user_text) both build the old text
            assert with_contract(sample, _spec(name)).prompt == _user(old(sample)), name
            assert _spec(name).user_text(sample.question) == old(sample)
        assert with_contract(sample, None).prompt != _user(old(sample))  # the entry is what adds the prompt


def test_plot2codes_conditional_asking_is_msrls_prompt_then_the_instruction_on_its_own_line(tmp_path):
    rows = [{"image": {"bytes": _png(), "path": None}, "code": "x", "instruction": "Draw bars."}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "p.parquet")
    (sample,) = data.load_plot2code(tmp_path / "p.parquet", with_instruction=True)
    # before: MSRL_PROMPT + f"\n{row['instruction']}" written by the loader
    assert with_contract(sample, _spec("msrl")).prompt == _user(OLD_MSRL + "\nDraw bars.")


def _png() -> bytes:
    import io

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (255, 0, 0)).save(buffer, format="PNG")
    return buffer.getvalue()


RECIPE_ENTRIES = {
    "svg-tiny-sft": "svg-scenes-tiny", "svg-tiny-sft-control": "svg-scenes-tiny", "svg-tiny-grpo": "svg-scenes-tiny",
    "msrl-chart-grpo-smoke": "msrl-sft", "rlrf-svg-grpo": "rlrf", "rlrf-svg-grpo-smoke": "rlrf",
    "cad-rl-style-grpo": "cad-rl", "cad-rl-style-grpo-smoke": "cad-rl",
    # VinciCoder's rows carry the authors' whole instruction: msrl-sft's template would prompt twice
    "msrl-chart-grpo": None,
}  # fmt: skip


def test_every_recipe_names_the_entry_whose_prompt_it_trains_with():
    assert sorted(RECIPE_ENTRIES) == sorted(p.stem for p in RECIPES.glob("*.yaml"))
    for stem, entry in RECIPE_ENTRIES.items():
        assert load_recipe(RECIPES / f"{stem}.yaml").model.entry == entry, stem


def test_a_smoke_recipe_keeps_its_tiny_images_only_with_a_cited_reason(tmp_path):
    raw = yaml.safe_load((RECIPES / "msrl-chart-grpo-smoke.yaml").read_text(encoding="utf-8"))
    recipe = load_recipe(RECIPES / "msrl-chart-grpo-smoke.yaml")
    assert pixel_limits(recipe) == (56 * 56, 112 * 112)  # the tiny model's own: 28-px charts seen at 56 x 56
    assert recipe.provenance["model.min_pixels"].startswith("zoo:")
    del raw["provenance"]
    (tmp_path / "uncited.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(RecipeError, match="model.min_pixels=3136: model.entry='msrl-sft' decides it"):
        load_checked(tmp_path / "uncited.yaml")


def test_text_to_cad_trains_on_the_description_in_cad_rls_prompt_without_an_image():
    recipe = load_recipe(RECIPES / "cad-rl-style-grpo-smoke.yaml", ["data.kwargs.n=2"])
    samples = recipe.data.load()
    dataset = to_trl_dataset([with_contract(s, recipe.model.contract()) for s in samples])
    assert "images" not in dataset.column_names
    assert [row["prompt"] for row in dataset] == [_user(OLD_CAD.format(description=s.question)) for s in samples]


# --- the shipped svg-scenes-tiny: its recipes' trainer tokenises what zoo.load's pipeline tokenises ------------


@pytest.fixture(scope="module")
def pipe():
    return zoo.load("svg-scenes-tiny")



def test_svg_tiny_grpo_tokenises_what_the_shipped_pipeline_tokenises(pipe):
    recipe = load_recipe(RECIPES / "svg-tiny-grpo.yaml", ["data.kwargs.n=2"])
    samples = recipe.data.load()
    _, processor = load_policy(recipe, samples)
    assert pixel_limits(recipe) == pipe.pixel_limits == (112 * 112, 112 * 112)
    trained = trainer_ids(processor, [with_contract(s, recipe.model.contract()) for s in samples])
    assert trained == [pipeline_ids(pipe, load_image(s.images[0]), s.question) for s in samples]
    assert trainer_ids(processor, samples) != trained  # without the entry the policy would see no prompt


def test_svg_tiny_sft_prompts_as_the_shipped_pipeline_does(pipe):
    def render(messages: list[dict]) -> str:
        return pipe.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    for name in ("svg-tiny-sft", "svg-tiny-sft-control"):
        stream = ExampleStream(load_recipe(RECIPES / f"{name}.yaml", ["data.stream=false", "data.kwargs.n=2"]))
        for sample in stream.samples:
            _, resized = pipe.prepare(load_image(sample.images[0]))
            trained = render(stream.example(sample).messages)
            assert trained == render(pipe.messages(resized, sample.question)) and OLD_SVG in trained


def test_the_full_recipes_train_on_the_old_prompts(tmp_path):
    """rlrf-svg-grpo and cad-rl-style-grpo on small files in SVG-Stack's and Text2CAD's formats (their data is not
    in the checkout): the GRPO loop's prompts are the ones the loaders wrote before."""
    pq.write_table(pa.Table.from_pylist([{"Filename": "a.svg", "Svg": '<svg viewBox="0 0 4 4"/>'}]), tmp_path / "s.parquet")
    recipe = load_recipe(RECIPES / "rlrf-svg-grpo.yaml", [f"data.kwargs.path={tmp_path / 's.parquet'}"])
    assert [with_contract(s, recipe.model.contract()).prompt for s in recipe.data.load()] == [_user(OLD_SVG)]
    with (tmp_path / "t.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, ["uid", "expert"])
        writer.writeheader()
        writer.writerow({"uid": "0/1", "expert": "A 10 mm cube."})
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "0_1.py").write_text("result = 1\n")
    recipe = load_recipe(RECIPES / "cad-rl-style-grpo.yaml",
                         [f"data.kwargs.path={tmp_path / 't.csv'}", f"data.kwargs.code_dir={tmp_path / 'code'}"])  # fmt: skip
    (sample,) = recipe.data.load()
    assert with_contract(sample, recipe.model.contract()).prompt == _user(OLD_CAD.format(description="A 10 mm cube."))
