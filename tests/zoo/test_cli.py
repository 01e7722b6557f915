"""The `zoo` command as a user types it (in-process, through zoo.cli.main)."""

import json

import pytest
from PIL import Image

from zoo.cli import main
from zoo.tiny import build_tiny_vlm


def test_list_and_info(capsys):
    assert main(["list", "--domain", "gui"]) == 0
    out = capsys.readouterr().out
    assert "gui-g1-3b" in out and "patho-r1" not in out
    assert main(["info", "patho-r1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "patho-r1-7b" and data["gated"] is True and data["kind"] == "vlm" and data["spec"]["parser"] == "parse_think_answer"


def test_list_fits_the_terminal_with_a_kind_column_and_wide_prints_everything(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["NAME", "KIND", "DOMAIN"] and max(map(len, lines)) <= 100
    assert any(line.split()[:2] == ["flow-grpo-tiny-colour", "diffusion"] for line in lines)
    assert main(["list", "--wide"]) == 0
    wide = capsys.readouterr().out
    assert "…" not in wide and max(map(len, wide.splitlines())) > 100  # every task whole


def test_unknown_name_exits_2_with_suggestion(capsys):
    assert main(["info", "gui-g2-3b"]) == 2
    assert "Did you mean: gui-g1-3b" in capsys.readouterr().err


def test_offline_run_prints_the_download_command_not_a_traceback(capsys, hf_cache, tmp_path):
    Image.new("RGB", (32, 32)).save(tmp_path / "x.png")
    assert main(["run", "ui-s1-7b", "--image", str(tmp_path / "x.png"), "--prompt", "open settings"]) == 1
    err = capsys.readouterr().err
    assert "hf download mPLUG/UI-S1-7B" in err and "Traceback" not in err


def test_run_local_directory_json_and_drawing(capsys, tmp_path):
    model, processor = build_tiny_vlm("qwen2_5_vl")
    model.save_pretrained(tmp_path / "model")
    processor.save_pretrained(tmp_path / "model")
    Image.new("RGB", (64, 48), "white").save(tmp_path / "x.png")
    argv = ["run", str(tmp_path / "model"), "--image", str(tmp_path / "x.png"), "--prompt", "hi", "--max-new-tokens", "5"]
    assert main([*argv, "--json", "--draw", str(tmp_path / "drawn.png")]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["source"] == "local" and "text" in result
    assert Image.open(tmp_path / "drawn.png").size == (64, 48)


def test_bad_image_is_a_named_error(capsys, tmp_path):
    model, processor = build_tiny_vlm("qwen2_5_vl")
    model.save_pretrained(tmp_path / "model")
    processor.save_pretrained(tmp_path / "model")
    (tmp_path / "bad.png").write_bytes(b"\x89PNG not really")
    assert main(["run", str(tmp_path / "model"), "--image", str(tmp_path / "bad.png"), "--prompt", "hi"]) == 1
    assert "not an image file" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["list", "info", "run", "train", "eval", "card"])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_info_shows_weights_and_code_licence_the_pin_and_why_not(capsys):
    assert main(["info", "ui-s1-7b"]) == 0
    out = capsys.readouterr().out
    assert "weights apache-2.0; code mit" in out and "8f38d44a4cfde16061067bb7b0caf767e6ebb578" in out
    assert "Hub card front matter of mPLUG/UI-S1-7B" in out  # where the licence was read
    assert main(["info", "patho-r1-3b"]) == 0
    out = capsys.readouterr().out
    assert "revision      -  (not pinned: no full commit hash of WenchuanZhang/Patho-R1-3B" in out
    assert "licence       cc-by-nc-nd-4.0\n" in out  # one licence when weights and code do not differ


def test_eval_options_reach_the_domain_evaluation_or_are_named_errors():
    from domains.gui.evaluate import run as gui_run
    from domains.medical.evaluate import run as medical_run
    from zoo.cli import _eval_options

    assert _eval_options(medical_run, ["response_source=answer", "max_new_tokens=512"]) == {
        "response_source": "answer", "max_new_tokens": 512}  # fmt: skip
    with pytest.raises(ValueError, match="takes no such option"):
        _eval_options(gui_run, ["response_source=answer"])
    with pytest.raises(ValueError, match="KEY=VALUE"):
        _eval_options(medical_run, ["response_source"])


@pytest.mark.parametrize("given", [[], ["--prompt", "   ", "--image", "x.png"], ["--prompt", "where?"]])
def test_run_refuses_missing_or_blank_arguments_before_loading_the_model(given, monkeypatch):
    import importlib

    def never(*args, **kwargs):
        raise AssertionError("the model was loaded before the arguments were checked")

    monkeypatch.setattr(importlib.import_module("zoo.load"), "load", never)  # the module, not zoo.load the function
    with pytest.raises(SystemExit, match=r"gui-grounding-tiny answers .*pass --(prompt TEXT \(not empty\)|image PATH)"):
        main(["run", "gui-grounding-tiny", *given])
