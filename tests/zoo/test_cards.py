"""Model cards: rendered per kind from entry + measured numbers, validated locally (front matter, RL tags, usage)."""

import dataclasses
import re

import pytest
from huggingface_hub import ModelCard

import zoo
from zoo.card_kinds import (
    CARD_KINDS,
    UNRELEASED,
    CardKind,
    CardKindError,
    SnippetOrigin,
    card_kind,
    kind_of,
    register_card_kind,
    spec_key,
)
from zoo.cards import CARDS_DIR, CardError, check_usage, render_card, validate_card, write_card
from zoo.kinds import SPECS, ClipSpec, DiffusionSpec, PolicySpec, VLMSpec
from zoo.records import Comparison, CurvePoint, EvaluationRow, Section, Stage, TrainingRecord
from zoo.registry import ModelEntry

RECORD = TrainingRecord(
    entry="gui-g1-3b",
    summary="A grounding model retrained here.",
    reproduce="python -m lab.gui.release all",
    stages=(Stage("SFT start", "start", "domains/gui/recipes/gui-g1-tiny-sft.yaml", None, 100, 2.5, "hit", 0.3,
                  (CurvePoint(50, 0.2), CurvePoint(100, 0.3))),
            Stage("GRPO, seed 0", "rl", "domains/gui/recipes/gui-g1-tiny-cpu.yaml", 0, 10, 1.0, "hit", 0.4)),
    comparisons=(Comparison("GRPO - SFT start, seed 0", 0.1, 0.02, "held-out hit rate", 1000),
                 Comparison("GRPO - control, seed 0", 0.01, None, "held-out hit rate", 1000)),
    evaluation=(EvaluationRow("image-text-to-text", "synthetic", "synthetic-screens", "accuracy", 0.4,
                              dataset_split="heldout"),),
    sections=(Section("Results", "| stage | hit |\n|---|---|\n| GRPO | 0.400 |"),),
    base_model="Qwen/Qwen2.5-VL-3B-Instruct",
)  # fmt: skip


def test_card_of_a_record_carries_its_numbers_and_the_kinds_usage():
    card = render_card(zoo.info("gui-g1-3b"), RECORD)
    meta = ModelCard(str(card)).data.to_dict()
    assert meta["license"] == "other" and meta["base_model"] == "Qwen/Qwen2.5-VL-3B-Instruct"
    (result,) = meta["model-index"][0]["results"]
    assert result["metrics"][0]["value"] == 0.4 and result["dataset"]["split"] == "heldout"
    text = card.text
    assert text.index("A grounding model") < text.index("## Use") < text.index("## Results") < text.index("## Training record")
    assert 'zoo.load("gui-g1-3b")' in text  # no section showed how to load it: the kind's usage is added
    assert "| GRPO, seed 0 | `domains/gui/recipes/gui-g1-tiny-cpu.yaml` | 0 | 10 | 1.0 | hit 0.400 |" in text
    assert "| GRPO - SFT start, seed 0 | +0.1000 | 0.0200 | held-out hit rate | 1000 | yes |" in text
    assert "| GRPO - control, seed 0 | +0.0100 |  | held-out hit rate | 1000 | — |" in text  # no spread measured


def test_a_records_own_snippet_gives_way_to_the_kinds_usage_for_where_the_card_is_read():
    """One generator: the record's first Python block is replaced by the kind's usage, its prose stays; pushed to a
    repository, the usage loads that repository and fetches the example from it."""
    own = Section("Use", "```python\npred = pipe(obs)\n```\n\nThe screen is one of the held-out ones.")
    record = dataclasses.replace(RECORD, sections=(own, *RECORD.sections))
    text = render_card(zoo.info("gui-g1-3b"), record, SnippetOrigin("someone/g1")).text
    assert "pipe(obs)" not in text and text.count("```python") == 1 and "The screen is one of the held-out" in text
    assert 'zoo.load("hf-hub:someone/g1", entry="gui-g1-3b")' in text
    assert 'image = hf_hub_download("someone/g1", "examples/screen.png")' in text
    assert 'zoo.load("gui-g1-3b")' in render_card(zoo.info("gui-g1-3b"), record).text  # read in a checkout


def test_a_record_of_another_entry_is_refused():
    with pytest.raises(CardError, match="records entry 'gui-g1-3b'"):
        render_card(zoo.info("ui-s1-7b"), RECORD)


def test_unevaluated_entry_quotes_no_numbers_and_medical_states_out_of_scope(tmp_path):
    path = write_card("patho-r1", tmp_path)
    text = path.read_text()
    assert path == tmp_path / "patho-r1-7b" / "README.md"
    assert "Not evaluated by this project yet" in text and "Not a medical device" in text
    assert "base_model:" not in text  # a free-text base model is not a Hub id, so it stays out of metadata


def test_validation_catches_broken_cards():
    with pytest.raises(CardError, match="license"):
        validate_card(ModelCard("---\ntags: [a]\n---\n# x"))
    with pytest.raises(CardError, match="unrendered"):
        validate_card(ModelCard("---\nlicense: mit\ntags: [a]\n---\n# {{ name }}"))


# --- every registered entry, and every kind, gets a card true to its kind ---------------------------

def _usage(card: ModelCard) -> str:
    return card.text.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("name", zoo.list_models())
def test_every_registered_card_renders_and_validates(name, tmp_path):
    entry = zoo.info(name)
    card = ModelCard(write_card(name, tmp_path).read_text())
    validate_card(card, entry)  # front matter as ModelCardData, library, RL tags, usage names
    assert card.data.license and card.data.tags
    if not entry.released:
        # no local checkpoint path (a URL that happens to contain "/checkpoints/" is fine)
        assert "zoo.load" not in _usage(card) and not re.search(r"(?<![\w/.-])checkpoints/", card.text)
        assert "not released" in card.text and "in the style of the paper" in card.text
    if entry.revision is None and entry.repo_id:
        assert entry.revision_note and entry.revision_note in card.text


def test_every_kind_has_its_own_card_template():
    assert all(spec_key(spec) in CARD_KINDS for spec in SPECS.values())  # and domains add their own classes
    built_in = [kind_of(spec) for spec in SPECS.values()]
    assert len({k.library_name for k in built_in}) == len(built_in)


def test_every_registered_entry_has_a_card_kind_whatever_was_imported_first():
    """The domains' own spec classes (image adapters, judges, StarVector) are rows found by the registry itself."""
    assert {type(zoo.info(name).spec) for name in zoo.list_models()} - {spec for spec in SPECS.values()}
    for name in zoo.list_models():
        assert isinstance(card_kind(zoo.info(name)), CardKind)


def test_an_unknown_kind_fails_loudly_instead_of_reusing_a_template():
    @dataclasses.dataclass(frozen=True)
    class OwnDiffusionSpec(DiffusionSpec):  # a new kind: its parent's card would describe the wrong pipeline
        pass

    entry = ModelEntry("sd-x", "o/sd", OwnDiffusionSpec(), "sd3", "x", "image_edit", "t2i")
    with pytest.raises(CardKindError, match="no model-card template for 'sd-x' .*OwnDiffusionSpec"):
        render_card(entry, {})


def test_a_spec_class_keeps_its_first_card_kind():
    with pytest.raises(ValueError, match="VLMSpec already has a different card kind"):
        register_card_kind(VLMSpec, dataclasses.replace(kind_of(VLMSpec), label="another"))
    assert register_card_kind(VLMSpec, kind_of(VLMSpec)) is kind_of(VLMSpec)  # the same row again: a no-op


@pytest.mark.parametrize(
    "spec, library, call",
    [(DiffusionSpec(num_inference_steps=10), "diffusers", "image_output = pipe("),
     (PolicySpec(observation_dim=4, action_dim=2), None, "pipe.act(observation)")],
    ids=["diffusion", "policy"],
)
def test_diffusion_and_policy_cards_use_their_own_calls(spec, library, call):
    entry = ModelEntry("m-x", "o/m", spec, "arch", "x", "robot", "task", license="mit", revision_note="test")
    card = render_card(entry, {})
    assert card.data.library_name == library and call in _usage(card)
    assert "qwen-vl-utils" not in card.text and "image-text-to-text" not in str(card.data.to_dict())


def test_clip_card_is_an_open_clip_card():
    card = render_card(zoo.info("patho-clip-b"), {})
    meta = card.data.to_dict()
    assert meta["library_name"] == "open_clip" and "grpo" not in meta["tags"]
    assert "qwen-vl-utils" not in card.text and "pixels" not in card.text
    assert "probabilities = pipe(image, labels)" in _usage(card) and "pipe.embed_images([image])" in _usage(card)
    assert "template set" in card.text and "weights_only=True" in card.text


def test_patho_r1_card_mentions_cod_and_no_coordinates():
    card = render_card(zoo.info("patho-r1-7b"), {})
    assert 'system="cod"' in _usage(card)
    assert "returns coordinates" not in card.text and "emits no coordinates" in card.text


def test_dolphin_v1_is_not_tagged_as_rl_tuned_and_cites_its_paper():
    v1, r1 = (render_card(zoo.info(n), {}) for n in ("dolphin-v1", "dolphin-r1"))
    assert "grpo" not in v1.data.tags and "reinforcement-learning" not in v1.data.tags
    assert "reinforcement-learning" in r1.data.tags
    assert "arXiv:2509.25748" in v1.text and "U4R" not in v1.text


def test_ui_s1_card_shows_weights_and_code_licences_and_its_pin():
    card = render_card(zoo.info("ui-s1-7b"), {})
    assert card.data.license == "apache-2.0" and "code: mit" in card.text
    assert "8f38d44a4cfde16061067bb7b0caf767e6ebb578" in card.text


@pytest.mark.parametrize(
    "code, kind, message",
    [("import zoo\npipe = zoo.load('x')\npipe.generate_code()", kind_of(VLMSpec), "pipe.generate_code"),
     ("import zoo\npipe = zoo.load('x')\npred = pipe('a.png', 'q')\npred.trajectory_xyz", kind_of(VLMSpec),
      "pred.trajectory_xyz"),
     ("import zoo\npipe = zoo.load('x')\npipe.embed_images(['a.png'])", kind_of(VLMSpec), "embed_images"),
     ("import zoo\npipe = zoo.load('dolphin-r1')", UNRELEASED, "no weights"),
     ("import zoo\nzoo.fine_tune('x')", kind_of(ClipSpec), "zoo.fine_tune"),
     ("pipe('a prompt')", UNRELEASED, "pipe(...)"),
     ("from huggingface_hub import hf_hub_download\nhf_hub_download(repo, 'examples/screen.png')", kind_of(VLMSpec),
      "written out as strings"),
     ("from huggingface_hub import hf_hub_download\nhf_hub_download('o/m', 'examples/no-such.png')", kind_of(VLMSpec),
      "no file of examples/"),
     ("from huggingface_hub import hf_hub_download\nhf_hub_download('o/m', 'examples/../zoo/cli.py')", kind_of(VLMSpec),
      "no file of examples/"),
     ("from huggingface_hub import hf_hub_download\nhf_hub_download('o/m', 'screen.png')", kind_of(VLMSpec),
      "no file of examples/"),
     ("from huggingface_hub import hf_hub_download\nhf_hub_download('not an id', 'examples/screen.png')",
      kind_of(VLMSpec), "no Hub repository id")],
    ids=["vlm-method", "output-field", "clip-method-on-vlm", "load-unreleased", "zoo-function", "pipe-unreleased",
         "download-unwritten", "download-no-example", "download-outside", "download-not-examples", "download-bad-repo"],
)
def test_usage_check_names_what_does_not_exist(code, kind, message):
    with pytest.raises(CardError, match=message):
        check_usage(code, kind, "x")


def test_card_kind_is_chosen_by_spec_class_and_release():
    entry = zoo.info("patho-clip-b")
    assert card_kind(entry) is kind_of(ClipSpec)
    assert card_kind(dataclasses.replace(entry, released=False)) is UNRELEASED


def test_validation_refuses_a_vlm_card_for_a_clip_entry():
    vlm_card = render_card(zoo.info("patho-r1-7b"), {})
    with pytest.raises(CardError, match="library_name"):
        validate_card(vlm_card, zoo.info("patho-clip-b"))


@pytest.mark.parametrize("name", sorted(p.name for p in CARDS_DIR.iterdir() if (p / "README.md").is_file()))
def test_every_committed_card_is_what_zoo_card_renders_now(name: str) -> None:
    """A card quotes its entry and recipes (settings cited, licence, revision): a change to either must come with
    `zoo card --all`, or the published card would describe another model than the one loaded."""
    assert str(render_card(zoo.info(name))) == (CARDS_DIR / name / "README.md").read_text(encoding="utf-8")


def test_a_reproduction_lists_the_authors_run_differences_from_its_typed_rows() -> None:
    """The card lists the recipe's ``authors_run`` rows that differ (what is no field, another snapshot) as written,
    and not the rows that agree with the authors' (the batch) or only name the release."""
    from zoo.cards import _reproduction_text
    from zoo.engines.batches import authors_run_rows
    from zoo.engines.reading import load_recipe
    from zoo.provenance import reproducing_recipes

    [path] = reproducing_recipes("vlm-r1-rec-3b")
    rows = authors_run_rows(load_recipe(path))
    text = _reproduction_text(zoo.info("vlm-r1-rec-3b"))
    assert any(row.kind == "differs" for row in rows) and any(not row.differs for row in rows)
    for row in rows:
        assert (f"- {row.sentence()}" in text) == row.differs, row
