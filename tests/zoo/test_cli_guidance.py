"""What the `zoo` command tells a newcomer: close names, availability, refused inputs, progress of an evaluation."""

from __future__ import annotations

import importlib
import io
import json
import re

import pytest

from zoo.cli import main


def test_an_unknown_model_gets_close_names_or_where_to_find_them(capsys) -> None:
    assert main(["info", "patho"]) == 2
    said = capsys.readouterr().err
    assert "Did you mean: patho-clip-b, patho-clip-l, patho-r1?" in said  # names (aliases too) holding what was typed
    assert main(["info", "no-such-model"]) == 2  # nothing is close: the error says where the names are
    said = capsys.readouterr().err
    assert re.search(r"unknown model 'no-such-model'\. \(registered: \d+ names\); `zoo list` shows every model", said)


def test_recipe_keys_and_model_names_share_one_close_match_helper() -> None:
    from zoo.engines.reading import load_recipe
    from zoo.recipe import RecipeError
    from zoo_common.registry import close_matches

    assert close_matches("lrr", ["lr", "lora", "seed"]) == ["lr", "lora"]
    assert close_matches("gui", ["gui-g1-3b", "ui-s1-7b", "gui-agent-tiny"]) == ["gui-agent-tiny", "gui-g1-3b"]
    with pytest.raises(RecipeError, match=r"Did you mean training\.lr"):
        load_recipe("domains/gui/recipes/gui-g1-tiny-cpu.yaml", overrides=["training.lrr=1"])


def test_list_says_which_models_run_here_and_still_fits_the_terminal(capsys, monkeypatch) -> None:
    from zoo.availability import AVAILABILITIES, availability
    from zoo.registry import info

    monkeypatch.setenv("COLUMNS", "100")
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["NAME", "KIND", "DOMAIN", "AVAILABILITY"] and max(map(len, lines)) <= 100
    row = next(line for line in lines if line.startswith("gui-grounding-tiny "))
    assert "runs offline here" in row
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["availability"] for r in rows} <= set(AVAILABILITIES)
    assert all(r["availability"] == availability(info(r["name"])) for r in rows)
    assert main(["list", "--wide"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[3:7] == ["AVAILABILITY", "LICENCE", "GATED", "WEIGHTS"]


@pytest.mark.parametrize(("argv", "said"), [
    (["run", "flow-grpo-tiny-colour", "--prompt", "  "], "draws a text prompt; pass --prompt TEXT (not empty)"),
    (["run", "flow-grpo-tiny-colour"], "draws a text prompt; pass --prompt TEXT (not empty)"),
])  # fmt: skip
def test_run_refuses_a_blank_prompt_to_draw_before_loading(argv: list[str], said: str, monkeypatch) -> None:
    def never(*args, **kwargs):
        raise AssertionError("the model was loaded before the arguments were checked")

    monkeypatch.setattr(importlib.import_module("zoo.load"), "load", never)
    with pytest.raises(SystemExit, match=said.replace("(", r"\(").replace(")", r"\)")):
        main(argv)


@pytest.mark.parametrize("seed", ["99999999999999999999", "-1", "one"])
def test_run_refuses_a_seed_no_generator_takes(seed: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["run", "gui-grounding-tiny", "--image", "x.png", "--prompt", "go", "--seed", seed])
    assert exit_.value.code == 2 and "argument --seed" in capsys.readouterr().err


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal (tqdm shows its bar only there)."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal", [True, False])
def test_eval_shows_a_progress_bar_on_a_terminal_only(terminal: bool, tmp_path, monkeypatch, capsys) -> None:
    stderr = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr("sys.stderr", stderr)
    argv = ["eval", "gui-grounding-tiny", "--data", "synthetic-tiny", "--limit", "2", "--device", "cpu",
            "--out", str(tmp_path / "eval")]  # fmt: skip
    assert main(argv) == 0
    assert ("\reval: " in stderr.getvalue()) is terminal  # the bar drawn (it clears itself when done)
