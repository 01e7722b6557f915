"""Code shipped with a model runs only after an explicit opt-in, however the model is opened.

The "attack" directory is a real tiny Qwen2.5-VL checkpoint whose ``config.json`` maps
``AutoModelForImageTextToText`` to its own ``evil.py``; that file leaves a marker when imported,
so each test sees whether the code ran, not only whether an error was raised.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from safetensors.torch import save_file

import zoo
from zoo.cli import main
from zoo.engines.vlm.policy_model import policy_source
from zoo.engines.vlm.recipe import VLMRecipe
from zoo.load import WrongArchitectureError
from zoo.recipe import RecipeError
from zoo.remote_code import RemoteCodeError, declared_code
from zoo.tiny import build_tiny_vlm

EVIL = """\
import os
open(os.environ["ZOO_TEST_MARKER"], "w").write("ran")
from transformers import Qwen2_5_VLForConditionalGeneration


class EvilModel(Qwen2_5_VLForConditionalGeneration):  # a subclass: transformers marks it as remote code
    pass
"""


@pytest.fixture(scope="module")
def plain_dir(tmp_path_factory) -> Path:
    model, processor = build_tiny_vlm("qwen2_5_vl")
    out = tmp_path_factory.mktemp("plain") / "model"
    model.save_pretrained(out)
    processor.save_pretrained(out)
    # the tensors under the class's own names: transformers renames save_pretrained's legacy Qwen-VL
    # keys for its built-in classes only, not for a class from a repository's code
    save_file({k: v.clone() for k, v in model.state_dict().items()}, out.parent / "own-names.safetensors")
    return out


@pytest.fixture
def evil_dir(plain_dir, tmp_path, monkeypatch) -> Path:
    """``plain_dir`` plus an ``auto_map`` naming ``evil.py``; transformers' module cache kept in ``tmp_path``."""
    import transformers.dynamic_module_utils as dynamic

    out = tmp_path / "evil"
    out.mkdir()
    for file in plain_dir.iterdir():
        (out / file.name).write_bytes(file.read_bytes())
    (out / "model.safetensors").write_bytes((plain_dir.parent / "own-names.safetensors").read_bytes())
    config = json.loads((out / "config.json").read_text())
    config["auto_map"] = {"AutoModelForImageTextToText": "evil.EvilModel"}
    (out / "config.json").write_text(json.dumps(config))
    (out / "evil.py").write_text(EVIL)
    monkeypatch.setenv("ZOO_TEST_MARKER", str(tmp_path / "ran"))
    monkeypatch.setattr(dynamic, "HF_MODULES_CACHE", str(tmp_path / "modules"))
    return out


def ran(evil_dir: Path) -> bool:
    return (evil_dir.parent / "ran").exists()


def test_declared_code_reads_every_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen2_5_vl"}))
    assert declared_code(tmp_path) == []
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"auto_map": {"AutoTokenizer": ["tok.T", None]}}))
    assert declared_code(tmp_path) == ["tokenizer_config.json: auto_map {'AutoTokenizer': ['tok.T', None]}"]

    pipe = tmp_path / "pipe"
    (pipe / "unet").mkdir(parents=True)
    index = {"_class_name": "StableDiffusionPipeline", "unet": ["my_unet", "MyUNet"], "vae": ["diffusers", "AutoencoderKL"]}
    (pipe / "model_index.json").write_text(json.dumps(index))
    assert declared_code(pipe) == [], "a module name with no file beside it imports nothing from the folder"
    (pipe / "unet" / "my_unet.py").write_text("")
    assert declared_code(pipe) == ["model_index.json: component 'unet' from unet/my_unet.py"]


def test_directory_with_auto_map_needs_the_opt_in(evil_dir):
    with pytest.raises(RemoteCodeError, match=r"auto_map.*evil\.EvilModel.*trust_remote_code=True"):
        zoo.load(str(evil_dir), device="cpu")
    with pytest.raises(RemoteCodeError):  # naming the entry whose prompt it follows changes nothing
        zoo.load(str(evil_dir), device="cpu", entry="gui-g1-3b")
    assert not ran(evil_dir)

    pipe = zoo.load(str(evil_dir), device="cpu", trust_remote_code=True)
    assert ran(evil_dir), "with the opt-in, transformers was asked to run the directory's code"
    assert pipe.entry.trust_remote_code


def test_cli_run_and_eval_refuse_without_the_flag(evil_dir, tmp_path, capsys):
    image = tmp_path / "x.png"
    from PIL import Image

    Image.new("RGB", (32, 32)).save(image)
    assert main(["run", str(evil_dir), "--image", str(image), "--prompt", "hi", "--device", "cpu"]) == 1
    assert main(["eval", str(evil_dir), "--entry", "gui-g1-3b", "--data", "synthetic-tiny", "--limit", "1",
                 "--device", "cpu", "--out", str(tmp_path / "eval")]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert err.count("--trust-remote-code") == 2, err
    assert not ran(evil_dir)


def recipe(name: str, **model) -> VLMRecipe:
    return VLMRecipe.from_dict({"name": "r", "engine": "vlm-trl", "model": {"name": name, **model},
                                "data": {"name": "synthetic-colour"}, "rewards": ["format"]})  # fmt: skip


def test_train_directory_follows_the_load_rules(evil_dir, plain_dir, tmp_path):
    with pytest.raises(RecipeError, match="model.trust_remote_code"):
        policy_source(recipe(str(evil_dir)))
    assert not ran(evil_dir)
    assert policy_source(recipe(str(evil_dir), trust_remote_code=True)) == (str(evil_dir.resolve()), None)

    pickled = tmp_path / "pickled"
    pickled.mkdir()
    for file in plain_dir.iterdir():
        if file.suffix != ".safetensors":
            (pickled / file.name).write_bytes(file.read_bytes())
    (pickled / "pytorch_model.bin").write_bytes(b"pickle")
    with pytest.raises(RecipeError, match=r"safetensors only") as err:
        policy_source(recipe(str(pickled)))
    assert isinstance(err.value.__cause__, WrongArchitectureError)
