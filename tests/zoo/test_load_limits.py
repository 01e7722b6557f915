"""Loading and running refuse what would silently cost too much or give a random model."""

from __future__ import annotations

import pytest
from PIL import Image
from safetensors.torch import load_file, save_file

import zoo
from zoo.cli import main
from zoo.load import WrongArchitectureError
from zoo.tiny import build_tiny_vlm


@pytest.fixture(scope="module")
def pipe():
    return zoo.load("gui-grounding-tiny", device="cpu")


def test_weights_of_another_model_are_an_error_not_a_random_model(tmp_path):
    model, processor = build_tiny_vlm("qwen2_5_vl")
    out = tmp_path / "model"
    model.save_pretrained(out)
    processor.save_pretrained(out)
    tensors = load_file(out / "model.safetensors")
    renamed = {f"other.{name}": value for name, value in tensors.items()}  # a file of some other model
    save_file(renamed, out / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(WrongArchitectureError, match=r"not in its weights.*randomly initialised"):
        zoo.load(str(out), device="cpu")

    partial = {k: v for k, v in tensors.items() if "embed_tokens" not in k}  # a truncated export
    save_file(partial, out / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(WrongArchitectureError, match=r"embed_tokens"):
        zoo.load(str(out), device="cpu")


def test_overlong_question_is_refused_before_tokenising(pipe, monkeypatch):
    image = Image.new("RGB", (64, 48), "white")

    def no_tokenising(*args, **kwargs):
        raise AssertionError("the processor must not see an over-long question")

    with monkeypatch.context() as patch:
        patch.setattr(pipe, "processor", no_tokenising)
        with pytest.raises(ValueError, match=r"1200000 characters long.*at most 20000"):
            pipe(image, "x" * 1_200_000)
        with pytest.raises(ValueError, match="characters long"):
            pipe([image, image], ["ok", "y" * 20_001])


def test_prompt_longer_than_the_context_is_refused(pipe):
    context = pipe.model.config.text_config.max_position_embeddings
    image = Image.new("RGB", (64, 48), "white")
    question = " ".join(["word"] * context)  # under the character limit, over the token context
    assert len(question) <= pipe.max_question_chars
    with pytest.raises(ValueError, match=rf"reads at most {context}"):
        pipe(image, question, max_new_tokens=4)
    assert pipe(image, "click the button", max_new_tokens=4).text is not None


def test_cli_run_reports_the_limit(tmp_path, capsys):
    image = tmp_path / "x.png"
    Image.new("RGB", (32, 32)).save(image)
    code = main(["run", "gui-grounding-tiny", "--image", str(image), "--prompt", "z" * 30_000, "--device", "cpu"])
    assert code == 1
    assert "30000 characters long" in capsys.readouterr().err
