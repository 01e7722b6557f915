"""What the pages refuse or flag, checked without a browser: typed numbers out of range, uploads named without the
server's path, answers that point outside the image, the reward tab's own rewards, the shipped checkpoints' examples."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from PIL import Image

from zoo.demo import inputs
from zoo.demo.errors import InputError, Noted, guarded
from zoo.demo.examples import EXAMPLES, examples_for


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (100000, "steps 100000 is out of range: type a whole number from 1 to 100"),
        (-5, "steps -5 is out of range: type a whole number from 1 to 100"),
        (2.5, "steps 2.5 is out of range"),
        (float("inf"), "steps inf is out of range"),
        (None, "steps is empty: type a whole number from 1 to 100"),
    ],
)
def test_a_number_out_of_range_is_refused_with_the_range(value: float | None, said: str) -> None:
    with pytest.raises(InputError, match=said.replace(".", r"\.")):
        inputs.whole_number(value, "steps", 1, 100)


def test_a_scale_out_of_range_is_refused_with_the_range() -> None:
    assert inputs.number(4.5, "guidance scale", 0.0, 20.0) == 4.5
    with pytest.raises(InputError, match="guidance scale 35 is out of range: type a number from 0 to 20"):
        inputs.number(35, "guidance scale", 0.0, 20.0)


def test_seeds_are_whole_numbers_every_generator_takes() -> None:
    """The review's seeds: 99999999999999999999 overflowed inside torch; -1 failed in gymnasium as a server error."""
    assert inputs.seed(0) == 0 and inputs.seed(float(inputs.SEED_MAX)) == inputs.SEED_MAX
    for bad in (99999999999999999999, -1):
        with pytest.raises(InputError, match=f"from 0 to {inputs.SEED_MAX}"):
            inputs.seed(bad)
    assert inputs.SEED_MAX + 20 < 2**32  # seed + i of a press stays in numpy's and gymnasium's 32-bit range


def test_a_noted_answer_keeps_its_outputs_and_shows_the_note() -> None:
    assert guarded(lambda: Noted("look here", (1, 2)), 2)() == ("**Note:** look here", 1, 2)


def test_an_upload_is_named_by_its_file_name_never_the_servers_path(tmp_path: Path) -> None:
    pytest.importorskip("gradio", reason="the demo extra")
    from zoo.demo.upload import read_upload
    from zoo.images import ImageError

    broken = tmp_path / "gradio" / "0123abcd" / "broken.png"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"these bytes are no picture")
    with pytest.raises(ImageError) as caught:
        read_upload(str(broken))
    assert str(caught.value).startswith("broken.png: ") and str(tmp_path) not in str(caught.value)
    with pytest.raises(ImageError, match="upload an image first"):
        read_upload(None)


def test_the_upload_component_hands_over_the_path_unread(tmp_path: Path) -> None:
    """Gradio's own reading of a broken file failed before the handler, as a bare "Error" toast."""
    pytest.importorskip("gradio", reason="the demo extra")
    from gradio.data_classes import ImageData

    from zoo.demo.upload import image_upload

    broken = tmp_path / "broken.png"
    broken.write_bytes(b"these bytes are no picture")
    component = image_upload()
    assert component.get_block_name() == "image"  # drawn by gradio's image widget, with its preview
    assert component.preprocess(ImageData(path=str(broken), orig_name="broken.png")) == str(broken)
    assert component.preprocess(None) is None


@pytest.fixture(scope="module")
def pointing_below() -> object:
    """The shipped GUI checkpoint whose parser reads the review's answer, ``[{"bbox_2d": [4, 7339, 47, 77]}]``, whatever
    the model wrote: the pipeline's own mapping to original pixels and geometry check then run on it."""
    import zoo

    pipe = zoo.load("gui-grounding-tiny", device="cpu")
    spec = dataclasses.replace(pipe.entry.spec, parser=lambda text, question: {"bbox": [4, 7339, 47, 77]})
    pipe.entry = dataclasses.replace(pipe.entry, spec=spec)
    return pipe


def test_a_box_outside_the_image_is_noted_on_the_page_and_kept_in_the_fields(pointing_below, tmp_path: Path) -> None:
    pytest.importorskip("gradio", reason="the demo extra")
    from zoo.demo.vlm import DEFAULT, answer

    picture = tmp_path / "screen.png"
    Image.new("RGB", (800, 600), "white").save(picture)
    status, drawn, _, _, fields = guarded(answer, 4)(pointing_below, str(picture), "click Go", DEFAULT, DEFAULT)
    parsed = json.loads(fields)
    assert parsed["bbox"][1] > 600 and "inverted or empty" in parsed["geometry_warning"]  # the parse is kept
    assert status.startswith("**Note:** the model's answer points nowhere on this image")
    assert parsed["geometry_warning"] in status and drawn.size == (800, 600)


def test_zoo_run_json_carries_the_geometry_warning(pointing_below, tmp_path: Path, monkeypatch, capsys) -> None:
    import importlib

    from zoo.cli import main

    monkeypatch.setattr(importlib.import_module("zoo.load"), "load", lambda *args, **kwargs: pointing_below)
    picture = tmp_path / "screen.png"
    Image.new("RGB", (800, 600), "white").save(picture)
    assert main(["run", "gui-grounding-tiny", "--image", str(picture), "--prompt", "click Go", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["geometry_warning"] == "box inverted or empty (800x600 image)" and "parse_error" not in result


def test_a_blank_question_is_refused_before_the_model_runs(pointing_below, tmp_path: Path) -> None:
    pytest.importorskip("gradio", reason="the demo extra")
    from zoo.demo.vlm import DEFAULT, answer

    picture = tmp_path / "screen.png"
    Image.new("RGB", (80, 60), "white").save(picture)
    status, *outputs = guarded(answer, 4)(pointing_below, str(picture), " \n ", DEFAULT, DEFAULT)
    assert status == "**Could not run:** type a question: gui-grounding-tiny answers one about the image"
    assert outputs == [None] * 4


@pytest.mark.parametrize(("entry", "own"), [
    ("gui-grounding-tiny", ["gui-g1"]), ("flow-grpo-tiny-colour", ["prompt-colour"]),
    ("driving-vla-tiny", ["driving-pdms"]), ("fetch-push-bc-tiny", []),
])  # fmt: skip
def test_the_reward_tab_opens_on_the_rewards_the_models_recipes_train_with(entry: str, own: list[str]) -> None:
    pytest.importorskip("gradio", reason="the demo extra")
    import zoo
    from zoo.demo.reward import entry_rewards

    assert entry_rewards(entry, zoo.info(entry).domain) == own


def test_every_shipped_checkpoint_with_inputs_has_a_few_examples_that_the_page_takes() -> None:
    import zoo
    from zoo.hub import CHECKPOINTS_DIR

    shipped = [n for n in zoo.list_models() if (CHECKPOINTS_DIR / n).is_dir()]
    for name in shipped:
        entry = zoo.info(name)
        examples = examples_for(name)
        assert len(examples) >= 2, name
        for example in examples:
            assert 0 <= example.seed <= inputs.SEED_MAX, name
            if entry.kind == "vlm":
                assert example.image_path() is not None, name
                # a question where the entry's template asks one (svg-scenes-tiny's picture is the whole task)
                assert bool(example.prompt().strip()) == entry.spec.asks_a_question(), name
            if entry.kind == "diffusion":
                assert example.prompt().strip(), name
    assert set(EXAMPLES) <= set(shipped)
