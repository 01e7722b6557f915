"""The demo's parts that need no server: card text, refusals, examples, drawing of actions."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from zoo.demo.card import card_summary
from zoo.demo.errors import InputError, guarded
from zoo.demo.examples import EXAMPLES, EXAMPLES_DIR, example_for


def test_the_card_escapes_angle_brackets_and_links_the_paper() -> None:
    import zoo

    text = card_summary(zoo.info("flow-grpo-tiny-colour"), "checkpoints @ local")
    assert "a &lt;colour&gt; square" in text and "<colour>" not in text
    assert "**weights** checkpoints @ local" in text
    paper = next(n for n in zoo.list_models() if zoo.info(n).paper)
    assert f"https://arxiv.org/abs/{zoo.info(paper).paper}" in card_summary(zoo.info(paper))


def test_guarded_turns_a_refusal_into_the_status_line_and_passes_results_through() -> None:
    def handler(x: int) -> tuple[int, int]:
        if x < 0:
            raise InputError("type a positive number")
        return x, 2 * x

    run = guarded(handler, 2)
    assert run(3) == ("", 3, 6)
    assert run(-1) == ("**Could not run:** type a positive number", None, None)
    assert guarded(lambda: 1 / 0, 1)()[0] == "**Could not run:** ZeroDivisionError: division by zero"


def test_examples_exist_and_read_their_question_from_the_release() -> None:
    for name, examples in EXAMPLES.items():
        for example in examples:
            assert example.image is None or example.image_path() is not None, name
    meta = json.loads((EXAMPLES_DIR / "screen.json").read_text())
    assert example_for("gui-grounding-tiny").prompt() == meta["instruction"]
    assert example_for("no-such-entry").prompt() == "" and example_for("no-such-entry").image_path() is None


def test_a_gui_action_point_is_drawn_and_text_parses_are_not() -> None:
    pytest.importorskip("gradio", reason="the demo extra")
    from zoo.demo.vlm import draw, parsed_fields
    from zoo.outputs import Prediction

    blank = Image.new("RGB", (100, 100), "white")
    clicked = draw(blank, Prediction(text="", action={"action": "click", "coordinate": [70, 30]}), "")
    typed = draw(blank, Prediction(text="", action={"action": "type", "text": "taxi"}), "")
    assert tuple(np.asarray(clicked)[30, 70]) != (255, 255, 255)
    assert np.array_equal(np.asarray(typed), np.asarray(blank))
    assert json.loads(parsed_fields(Prediction(text="x", bbox=[1.0, 2.0, 3.0, 4.0]))) == {"bbox": [1.0, 2.0, 3.0, 4.0]}


def test_class_names_and_targets_are_refused_with_what_to_type() -> None:
    pytest.importorskip("gradio", reason="the demo extra")
    from zoo.demo.clip import class_names
    from zoo.demo.reward import read_target, render_kind

    assert class_names(" cat, dog ,") == ["cat", "dog"]
    with pytest.raises(InputError, match="two or more"):
        class_names("cat")
    assert read_target("") == {} and read_target('{"answer": "B"}') == {"answer": "B"}
    with pytest.raises(InputError, match="JSON object"):
        read_target("[1, 2]")
    import rewards

    assert render_kind(rewards.get("svg-ssim")) == "svg" and render_kind(rewards.get("gui-g1")) is None


def test_a_servers_outputs_stay_in_its_own_private_folder_and_go_with_it(monkeypatch):
    """review-reliability 7.10: every output of ``zoo demo`` stayed in gradio's shared cache (0644), served by any
    running demo, after the server stopped."""
    import os
    import stat

    from zoo.demo.server import private_outputs

    monkeypatch.setenv("GRADIO_TEMP_DIR", "/elsewhere")
    with private_outputs() as folder:
        assert os.environ["GRADIO_TEMP_DIR"] == str(folder)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        (folder / "upload.png").write_bytes(b"x")
    assert not folder.exists() and os.environ["GRADIO_TEMP_DIR"] == "/elsewhere"


def test_an_idle_queue_looks_for_work_as_gradio_does_on_windows_not_every_millisecond(caplog) -> None:
    """Gradio's queue looks for work every millisecond while it has none: 9% of a core for a page nobody uses. The
    attributes are Gradio's private ones, so the pinned Gradio must still have them (a rename fails here, not
    silently)."""
    import logging
    from types import SimpleNamespace

    gr = pytest.importorskip("gradio")
    from zoo.demo.server import IDLE_QUEUE_POLL_S, PROGRESS_POLL_S, poll_idle_queue_less

    with gr.Blocks() as app:
        gr.Markdown("idle")
    app.queue(default_concurrency_limit=1)
    queue = app._queue
    assert (queue.sleep_when_free, queue.progress_update_sleep_when_free) < (IDLE_QUEUE_POLL_S, PROGRESS_POLL_S)
    poll_idle_queue_less(app)
    assert (queue.sleep_when_free, queue.progress_update_sleep_when_free) == (IDLE_QUEUE_POLL_S, PROGRESS_POLL_S)
    with caplog.at_level(logging.INFO, logger="zoo.demo.server"):
        poll_idle_queue_less(SimpleNamespace(_queue=object()))  # a Gradio whose queue renamed it: the log says so
    assert "polls at Gradio's own intervals" in caplog.text
