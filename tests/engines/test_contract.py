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
from tests.engines.token_ids import pipeline_ids, trainer_ids
from zoo.engines.reading import load_checked, load_recipe
from zoo.engines.vlm.contract import with_contract
from zoo.engines.vlm.policy_model import load_policy, pixel_limits
from zoo.engines.vlm.sft_engine import ExampleStream
from zoo.engines.vlm.trl_data import to_trl_dataset
from zoo.images import load_image
from zoo.recipe import RecipeError

ROOT = Path(__file__).resolve().parents[2]
GRPO = ROOT / "domains/gui/recipes/gui-g1-tiny-cpu.yaml"
SFT = ROOT / "domains/gui/recipes/gui-g1-tiny-sft.yaml"


@pytest.fixture(scope="module")
def pipe():
    return zoo.load("gui-grounding-tiny")



def test_the_grpo_trainer_tokenises_what_the_pipeline_tokenises(pipe) -> None:
    recipe = load_recipe(GRPO, ["data.kwargs.n=3"])
    assert recipe.model.entry == "gui-grounding-tiny"
    samples = recipe.data.load()
    _, processor = load_policy(recipe, samples)
    assert pixel_limits(recipe) == pipe.pixel_limits  # the frame the model sees, in training and at inference
    trained = trainer_ids(processor, [with_contract(s, recipe.model.contract()) for s in samples])
    asked = [pipeline_ids(pipe, load_image(s.images[0]), s.question) for s in samples]
    assert trained == asked
    # without the entry's contract the trainer would see the bare instruction: the check can fail
    assert trainer_ids(processor, samples) != asked


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
        load_checked(GRPO, ["model.max_pixels=401408"])
    with pytest.raises(RecipeError, match="data.system_prompt and model.entry='gui-grounding-tiny' both set"):
        load_checked(GRPO, ["data.system_prompt=You are a helpful assistant."])
    with pytest.raises(RecipeError, match="model.entry: unknown model 'gui-grounding-tine'"):
        load_checked(GRPO, ["model.entry=gui-grounding-tine"])
    with pytest.raises(RecipeError, match="is not a vision-language entry"):
        load_checked(GRPO, ["model.entry=flow-grpo-tiny-colour"])


def _shipped_recipes(keep) -> list[Path]:
    """The shipped recipes (``domains/*/recipes``) whose YAML ``keep`` accepts."""
    import yaml

    paths = sorted(ROOT.glob("domains/*/recipes/*.yaml"))
    return [path for path in paths if keep(yaml.safe_load(path.read_text(encoding="utf-8")))]


def _names_entry(raw: dict) -> bool:
    return bool((raw.get("model") or {}).get("entry"))


def _multi_turn(raw: dict) -> bool:
    return raw.get("engine") == "vlm-semi-online" or bool((raw.get("data") or {}).get("multi_turn"))


def _recipes_naming_an_entry() -> list[Path]:
    """Every shipped single-turn VLM recipe with ``model.entry``: each domain's converted recipes join this test by
    naming one (trajectories: test_multi_turn_... below)."""
    return _shipped_recipes(lambda raw: raw.get("engine") in ("vlm-trl", "vlm-sft", "vlm-verl")
                            and _names_entry(raw) and not _multi_turn(raw))  # fmt: skip


def _offline(path: Path):
    """The recipe with a few samples, or a skip when its data is the authors' release (not in this checkout)."""
    recipe = load_recipe(path)
    overrides = ["data.stream=false"] if recipe.engine == "vlm-sft" else []
    overrides += ["data.kwargs.n=2"] if "n" in recipe.data.kwargs or recipe.engine == "vlm-sft" else []
    recipe = load_recipe(path, overrides)
    try:
        samples = recipe.data.load()[:2]
    except (FileNotFoundError, ValueError) as err:
        if "does not exist" in str(err) or "not found" in str(err) or "not a datasets folder" in str(err):
            pytest.skip(f"{path.name} trains on the authors' data, not in this checkout: {err}")
        raise
    return recipe, samples


def _asked(recipe, sample, image) -> list[dict]:
    """The messages ``zoo.load(recipe.model.entry)`` builds for ``sample``, with the recipe's prompt variant."""
    from types import SimpleNamespace

    from zoo.pipelines.vlm import VLMPipeline
    from zoo.registry import info

    fake = SimpleNamespace(entry=info(recipe.model.entry))
    messages = VLMPipeline.messages(fake, image, sample.question, recipe.model.variant, sample.meta.get("template"))
    if not sample.images:  # text-only samples (text-to-CAD): the same turn without the image
        messages[-1]["content"] = [part for part in messages[-1]["content"] if part["type"] != "image"]
    return messages


@pytest.mark.parametrize("path", _recipes_naming_an_entry(), ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_every_recipe_naming_an_entry_trains_on_what_its_pipeline_asks(path: Path, pipe) -> None:
    """Text and image positions after the chat template (Qwen2.5-VL's, as the tiny and real models share it)."""
    recipe, samples = _offline(path)
    def render(messages: list[dict]) -> str:
        return pipe.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    images = [load_image(s.images[0]) if s.images else None for s in samples]
    asked = [render(_asked(recipe, s, image)) for s, image in zip(samples, images)]
    if recipe.engine == "vlm-sft":
        stream = ExampleStream(recipe)
        trained = [render(stream.example(s).messages) for s in samples]
    else:
        dataset = to_trl_dataset([with_contract(s, recipe.model.contract()) for s in samples])
        trained = [render(prepare_multimodal_messages(row["prompt"], images=row["images"]) if "images" in row
                          else row["prompt"]) for row in dataset]  # fmt: skip
    assert trained == asked
    spec = recipe.model.contract()
    for key, limit in zip(("min_pixels", "max_pixels"), pixel_limits(recipe)):
        assert limit == getattr(spec, key) or f"model.{key}" in recipe.provenance, key  # another resolution is cited


def test_a_variant_trains_with_the_entrys_named_system_prompt() -> None:
    from zoo.registry import info

    recipe = load_recipe(GRPO, ["model.entry=patho-r1-7b", "model.variant=cod", "model.min_pixels=null",
                                "model.max_pixels=null"])  # fmt: skip
    assert recipe.model.contract().system == info("patho-r1-7b").spec.variants["cod"]
    sample = with_contract(recipe.data.load()[0], recipe.model.contract())
    assert sample.prompt[0] == {"role": "system", "content": info("patho-r1-7b").spec.variants["cod"]}
    with pytest.raises(RecipeError, match="model.variant='cot-long': patho-r1-7b publishes cod, cot"):
        load_checked(GRPO, ["model.entry=patho-r1-7b", "model.variant=cot-long"])
    with pytest.raises(RecipeError, match="model.variant='cod' names a prompt of model.entry, which is not set"):
        load_checked(GRPO, ["model.entry=null", "model.variant=cod"])


def test_other_pixel_limits_than_the_entrys_need_a_citation(tmp_path: Path) -> None:
    import yaml

    raw = yaml.safe_load(GRPO.read_text(encoding="utf-8"))
    raw["model"]["max_pixels"] = 401408
    raw["provenance"] = {**raw.get("provenance", {}), "model.max_pixels": "zoo: a test of a cited resolution"}
    cited = tmp_path / "cited.yaml"
    cited.write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert pixel_limits(load_recipe(cited))[1] == 401408
    with pytest.raises(RecipeError, match="cite under provenance: why the authors train at another resolution"):
        load_checked(GRPO, ["model.max_pixels=401408"])


# --- the multi-turn loops (UI-S1's semi-online RL, the multi-turn SFT): the entry's contract per turn ---


def _multi_turn_recipes() -> list[Path]:
    """Every shipped recipe of a multi-turn loop that names an entry."""
    return _shipped_recipes(lambda raw: _multi_turn(raw) and _names_entry(raw))


@pytest.mark.parametrize("path", _multi_turn_recipes(), ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_a_multi_turn_recipe_asks_its_first_turn_as_the_pipeline_asks_the_goal(path: Path, pipe) -> None:
    """The first turn of every trajectory (system prompt, the entry's user text, the screenshot where the entry
    puts it) renders as ``zoo.load(entry)`` renders the goal; later turns are the entry's ``next-turn``
    template (or its user template again), the history and the screenshots kept being the loop's."""
    from zoo.engines.vlm.contract import NEXT_TURN, with_turn_contract
    from zoo.engines.vlm.semi_online_rollout import expert_turns, group_episodes

    recipe = load_recipe(path)
    if "n" in recipe.data.kwargs:
        recipe = load_recipe(path, ["data.kwargs.n=2"])
    try:
        samples = list(recipe.data.load() if recipe.engine == "vlm-semi-online" else
                       zoo.data.load_dataset(recipe.data.name, **{**recipe.data.kwargs, "n": 2, "seed": 3}))  # fmt: skip
    except (FileNotFoundError, ValueError) as err:
        if "does not exist" in str(err) or "not found" in str(err):
            pytest.skip(f"{path.name} trains on the authors' data, not in this checkout: {err}")
        raise
    spec = recipe.model.contract()
    episode = group_episodes([with_turn_contract(s, spec) for s in samples])[0]
    turns = expert_turns(episode, lambda s: "answer", image_first=spec.image_first)

    def render(messages: list[dict]) -> str:
        return pipe.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    goal = samples[0].question
    first = render(_asked(recipe, samples[0], load_image(samples[0].images[0])))
    assert render(turns[0].messages) == first
    later = spec.user_text(goal, NEXT_TURN if NEXT_TURN in spec.templates else None)
    assert turns[1].messages[-1]["content"][0 if not spec.image_first else -1]["text"] == later
    assert [m["role"] for m in turns[1].messages].count("system") == (1 if spec.system else 0)


def test_the_image_first_refusal_is_the_single_turn_loops_only() -> None:
    gui_agent = ["model.entry=gui-agent-tiny", "model.min_pixels=null", "model.max_pixels=null"]
    with pytest.raises(RecipeError, match="puts the image after the text; engine vlm-trl places images first"):
        load_checked(GRPO, gui_agent)
    with pytest.raises(RecipeError, match="puts the image after the text; the single-turn SFT loop places"):
        load_checked(SFT, gui_agent)
    assert load_recipe(ROOT / "domains/gui/recipes/ui-s1-smoke.yaml").model.entry == "ui-s1-7b"
    assert load_recipe(ROOT / "domains/gui/recipes/ui-s1-tiny-sft.yaml").model.entry == "gui-agent-tiny"
