"""The medical loaders yield raw questions; the entries the recipes name wrap them as the loaders used to.

Before issue #42 the pathology loaders wrote Patho-R1's CoT system prompt into every sample and the synthetic
ultrasound loader the zoo's reasoning system prompt; now ``patho-r1-7b`` and ``dolphin-r1`` carry them and the
recipes name those entries (``model.entry``), so training asks what ``zoo.load``/``zoo eval --entry`` asks.
The expected strings below are copied from their sources, not imported, so a changed constant fails here.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image

import domains.medical.rewards  # noqa: F401  (registers the rewards)
import zoo
from domains.medical import data as mdata
from domains.medical.evaluate import evaluate
from domains.medical.prompts import parse_us_answer
from rewards.base import REWARDS
from tests.domains.medical import u2_cases
from zoo.engines.reading import load_checked, load_recipe
from zoo.engines.vlm.contract import with_contract
from zoo.engines.vlm.policy_model import pixel_limits, set_pixel_limits
from zoo.engines.vlm.trl_data import to_trl_dataset
from zoo.kinds import VLMSpec
from zoo.outputs import Prediction
from zoo.pipelines.vlm import VLMPipeline
from zoo.recipe import RecipeError
from zoo.registry import ModelEntry

RECIPES = Path(__file__).parents[3] / "domains" / "medical" / "recipes"

#: Patho-R1's Chain-of-Thought system prompt (Wenchuan-Zhang/Patho-R1@3494816:README.md:76).
PATHO_COT = (
    "You are a pathology expert, your task is to answer question step by step. Use the following format:"
    "<think> Your step-by-step reasoning </think><answer> Your final answer </answer>"
)
#: Its Chain-of-Draft variant (Wenchuan-Zhang/Patho-R1@3494816:README.md:72).
PATHO_COD = (
    "You are a pathology expert, your task is to think step by step, but only keep a minimum draft for each "
    "thinking step, with 5 words at most. Return the answer at the end of the response after a separator. "
    "Use the following format:<think> Your step-by-step reasoning </think><answer> Your final answer </answer>"
)
#: The zoo's own reasoning system prompt of the ultrasound recipe (the synthetic-ultrasound loader's former
#: ``system=`` default; Dolphin's prompts are unpublished, arXiv 2509.25748).
US_REASONING = (
    "You are an ultrasound expert. Reason step by step, then give the final answer in the exact output "
    "format the question asks for. Use the following format:"
    "<think> Your step-by-step reasoning </think><answer> Your final answer </answer>"
)


def _pathmmu(tmp_path: Path) -> Path:
    (tmp_path / "images").mkdir()
    Image.new("RGB", (40, 30)).save(tmp_path / "images" / "a.png")
    items = [{"No": 7, "question": "What feature is shown?", "img": "a.png", "answer": "B",
              "options": ["(A) Granuloma", "(B) Plasma cells (eccentric)", "(C) Neutrophils"]}]  # fmt: skip
    (tmp_path / "data.json").write_text(json.dumps({"PubMed": {"val": items, "test_tiny": items}}))
    return tmp_path


def _rows(samples, spec=None) -> list[list[dict]]:
    """What the GRPO loop tokenises (the TRL rows' chat messages)."""
    return [row["prompt"] for row in to_trl_dataset([with_contract(s, spec) for s in samples])]


def _raw(sample) -> bool:
    """One user turn: an image placeholder then the question; no system prompt."""
    return sample.prompt == [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": sample.question}]}
    ]


def test_the_loaders_yield_raw_questions(tmp_path: Path) -> None:
    patho = mdata.synthetic_pathology(3, seed=0)
    assert all(_raw(s) for s in patho)
    options = " /n ".join(f"{k}. {v}" for k, v in patho[0].target["options"].items())
    assert (
        patho[0].question == f"Which tissue pattern does this H&E patch show? /n {options}"
    )  # Patho-R1's layout: data
    assert all(_raw(s) for s in mdata.synthetic_ultrasound(4, task="mixed"))
    [pathmmu] = mdata.load_pathmmu(_pathmmu(tmp_path), "PubMed_test_tiny")
    assert _raw(pathmmu)
    assert pathmmu.question == "What feature is shown? /n A. Granuloma /n B. Plasma cells (eccentric /n C. Neutrophils"
    table = u2_cases.write_release_tsv(
        {"class_label": ["benign"], "prompt": ["Benign or malignant?"]}, tmp_path / "t.tsv"
    )
    [u2] = mdata.load_u2bench_tsv(table, "cla", prompts="row")
    assert _raw(u2) and u2.question == "Benign or malignant?"
    for loader in (mdata.synthetic_pathology, mdata.synthetic_ultrasound, mdata.load_pathmmu, mdata.pathmmu_samples,
                   mdata.load_u2bench_tsv):  # fmt: skip
        assert "system" not in inspect.signature(loader).parameters  # the entry decides the system prompt


def test_patho_r1_wraps_the_raw_questions_as_the_loaders_did(tmp_path: Path) -> None:
    """Patho-R1's README asks with the CoT system prompt and the question as the user text (README.md:74-84)."""
    spec = zoo.info("patho-r1-7b").spec
    assert zoo.info("patho-r1-3b").spec == spec
    samples = [*mdata.synthetic_pathology(3, seed=0), *mdata.load_pathmmu(_pathmmu(tmp_path), "PubMed_val")]
    before = [[{"role": "system", "content": PATHO_COT}, {"role": "user", "content": s.question}] for s in samples]
    assert _rows(samples, spec) == before
    assert _rows(samples) != before  # without the entry: the bare question, so the comparison can fail
    for stem in ("patho-r1-grpo", "patho-r1-dapo"):  # the real recipes, on a PathMMU file of this test's
        recipe = load_recipe(RECIPES / f"{stem}.yaml", [f"data.kwargs.path={tmp_path}"])
        assert _rows(recipe.data.load(), recipe.model.contract()) == before[3:]
    cod = with_contract(samples[0], VLMSpec(system=spec.system_prompt("cod")))
    assert cod.prompt[0] == {"role": "system", "content": PATHO_COD}


def test_dolphin_r1_wraps_the_raw_questions_as_the_loader_did() -> None:
    samples = mdata.synthetic_ultrasound(8, task="mixed", seed=0)
    before = [[{"role": "system", "content": US_REASONING}, {"role": "user", "content": s.question}] for s in samples]
    assert _rows(samples, zoo.info("dolphin-r1").spec) == before
    assert _rows(samples, zoo.info("dolphin-v1").spec) == [[row[1]] for row in before]  # v1: no RL stage, no prompt
    assert not zoo.info("dolphin-r1").released  # no weights: the entry is the contract of the zoo's own recipe


@pytest.mark.parametrize(
    ("stem", "entry"),
    [("patho-r1-grpo", "patho-r1-7b"), ("patho-r1-dapo", "patho-r1-7b"), ("patho-r1-grpo-smoke", "patho-r1-7b"),
     ("patho-r1-dapo-smoke", "patho-r1-7b"), ("dolphin-r1-ultrasound", "dolphin-r1"),
     ("dolphin-r1-ultrasound-smoke", "dolphin-r1")],
)  # fmt: skip
def test_each_recipe_names_its_entry(stem: str, entry: str) -> None:
    recipe = load_recipe(RECIPES / f"{stem}.yaml")
    assert (recipe.model.entry, recipe.model.variant, recipe.data.system_prompt) == (entry, None, None)
    assert recipe.model.contract() == zoo.info(entry).spec
    assert (recipe.model.min_pixels, recipe.model.max_pixels) == (None, None)  # the entry's limits


@pytest.mark.parametrize("stem", ["patho-r1-grpo-smoke", "patho-r1-dapo-smoke", "dolphin-r1-ultrasound-smoke"])
def test_the_smoke_runs_see_the_images_they_saw_before(stem: str) -> None:
    """The entry's pixel limits (3136..12845056) replace the tiny processor's own (3136..12544): the 28 px patches
    and 56 px frames are resized to 56x56 (4 image tokens) under both."""
    from zoo.tiny import build_tiny_vlm

    recipe = load_recipe(RECIPES / f"{stem}.yaml")
    _, own = build_tiny_vlm("qwen2_5_vl", seed=0)
    _, limited = build_tiny_vlm("qwen2_5_vl", seed=0)
    set_pixel_limits(limited, *pixel_limits(recipe))
    assert pixel_limits(recipe) == (3136, 12845056) != (own.image_processor.size["shortest_edge"],
                                                        own.image_processor.size["longest_edge"])  # fmt: skip
    images = [s.images[0] for s in recipe.data.load()]
    before, after = (p.image_processor(images=images, return_tensors="pt") for p in (own, limited))
    assert after["image_grid_thw"].tolist() == before["image_grid_thw"].tolist() == [[1, 4, 4]] * len(images)
    assert bool((after["pixel_values"] == before["pixel_values"]).all())


def test_the_contract_is_the_entrys_only() -> None:
    path = RECIPES / "patho-r1-grpo-smoke.yaml"
    cod = load_recipe(path, ["model.variant=cod"])
    assert cod.model.contract().system == PATHO_COD
    with pytest.raises(RecipeError, match="model.variant='cot-long': patho-r1-7b publishes cod, cot"):
        load_checked(path, ["model.variant=cot-long"])
    with pytest.raises(RecipeError, match="model.variant='cod': dolphin-r1 publishes no prompt variants"):
        load_checked(RECIPES / "dolphin-r1-ultrasound-smoke.yaml", ["model.variant=cod"])
    with pytest.raises(RecipeError, match="data.system_prompt and model.entry='dolphin-r1' both set"):
        load_checked(RECIPES / "dolphin-r1-ultrasound-smoke.yaml", [f"data.system_prompt={US_REASONING}"])
    with pytest.raises(RecipeError, match="model.max_pixels=12544: model.entry='patho-r1-7b' decides it"):
        load_checked(path, ["model.max_pixels=12544"])


def _messages(entry: ModelEntry, question: str) -> list[dict]:
    return VLMPipeline.messages(SimpleNamespace(entry=entry), "image", question)


def test_evaluation_asks_the_benchmark_prompt_wrapped_by_the_evaluated_entry(tmp_path: Path) -> None:
    """``zoo eval`` passes each sample's question to the pipeline: a registered entry wraps it as it trained; a local
    directory without ``--entry`` (the generic spec ``zoo.load`` builds for it) gets the benchmark's prompt bare."""
    [pathmmu] = mdata.load_pathmmu(_pathmmu(tmp_path), "PubMed_test_tiny")
    [us] = mdata.synthetic_ultrasound(1, task="localization")
    text = lambda q: {"role": "user", "content": [{"type": "image", "image": "image"}, {"type": "text", "text": q}]}
    assert _messages(zoo.info("patho-r1-7b"), pathmmu.question) == [{"role": "system", "content": PATHO_COT},
                                                                    text(pathmmu.question)]  # fmt: skip
    assert _messages(zoo.info("dolphin-r1"), us.question) == [{"role": "system", "content": US_REASONING},
                                                              text(us.question)]  # fmt: skip
    local = ModelEntry(name="runs/x/final", repo_id=None, spec=VLMSpec(), architecture="qwen2_5_vl", base_model="?",
                       domain="unlisted", task="unlisted vlm model")  # fmt: skip
    assert _messages(local, us.question) == [text(us.question)]
    assert us.question.startswith("You are a radiologist analyzing an ultrasound image about a synthetic phantom.\n")


@pytest.mark.parametrize(
    ("text", "answer", "score"),
    [("<think>lesion up left</think><answer>upper left</answer>", "upper left", 1.0),
     ("upper left", "upper left", 1.0),  # no tags: the whole text, as without a parser
     ("  Upper left \n", "Upper left", 1.0),
     ("<answer>upper left", "<answer>upper left", 0.0)],  # an unclosed tag is no answer span, for either
)  # fmt: skip
def test_dolphin_r1_reads_the_answer_its_rewards_score(text: str, answer: str, score: float) -> None:
    assert zoo.info("dolphin-r1").spec.parser is parse_us_answer
    assert parse_us_answer(text)["answer"] == answer
    [sample] = mdata.synthetic_ultrasound(1, task="localization", seed=0)
    sample = replace(sample, target={"position": "upper left", "task": "localization"})
    reward = REWARDS.get("us-localization")
    assert reward([text], [sample])[0].score == reward([answer], [sample])[0].score == score


def test_u2bench_scores_the_answer_span_of_a_dolphin_r1_reply(tmp_path: Path) -> None:
    """A reply in the trained format is scored on its ``<answer>``: right where the raw text would fail."""
    cells = {"class_label": ["benign", "malignant"], "prompt": ["Benign or malignant?"] * 2}
    table = u2_cases.write_release_tsv(cells, tmp_path / "t.tsv")
    replies = [
        "<think>smooth margins</think><answer>benign</answer>",
        "<think>irregular</think><answer>benign</answer>",
    ]
    parsed = [Prediction.from_parsed(r, parse_us_answer(r)) for r in replies]
    assert evaluate(parsed, "u2bench-cla", str(table))["acc"] == 0.5
    assert evaluate(parsed, "u2bench-cla", str(table), response_source="raw")["acc"] == 0.0
