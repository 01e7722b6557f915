"""Every path that reads a VLM's weights goes through :func:`zoo.load.load_vlm_weights`: pickled weights and
weights lacking a tensor are refused with a sentence, never loaded (a pickle can run code; transformers would
fill a missing tensor with random values and only log a warning)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file

import zoo
from zoo.engines.vlm.recipe import VLMRecipe
from zoo.hub import ResolvedModel
from zoo.tiny import build_tiny_vlm

#: The tensor removed from the truncated checkpoint (its name as saved; the error names it as loaded).
DROPPED = "model.layers.0.mlp.down_proj.weight"


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``good``: a tiny VLM as ``save_pretrained`` writes it; ``pickled``: the same with ``pytorch_model.bin``
    instead of ``model.safetensors``; ``truncated``: the same with :data:`DROPPED` deleted from its safetensors."""
    root = tmp_path_factory.mktemp("vlm-weights")
    model, processor = build_tiny_vlm("qwen2_5_vl")
    good = root / "good"
    model.save_pretrained(good)
    processor.save_pretrained(good)
    pickled = shutil.copytree(good, root / "pickled", ignore=shutil.ignore_patterns("*.safetensors"))
    torch.save(model.state_dict(), pickled / "pytorch_model.bin")
    truncated = shutil.copytree(good, root / "truncated")
    tensors = load_file(truncated / "model.safetensors")
    del tensors[DROPPED]
    save_file(tensors, truncated / "model.safetensors", metadata={"format": "pt"})
    return {"good": good, "pickled": pickled, "truncated": truncated}


def _recipe(name: str) -> VLMRecipe:
    return VLMRecipe.from_dict({"name": "r", "engine": "vlm-trl", "model": {"name": name},
                                "data": {"name": "synthetic-colour"}, "rewards": ["format"]})  # fmt: skip


def _direct(folder: Path) -> Any:
    from zoo.load import load_vlm_weights

    return load_vlm_weights(folder)


def _pipeline(folder: Path) -> Any:
    from zoo.pipelines.vlm import load_vlm_pipeline

    return load_vlm_pipeline(zoo.info("gui-grounding-tiny"), ResolvedModel(folder, "local", "local"), "cpu",
                             torch.float32)  # fmt: skip


def _training_start(folder: Path) -> Any:
    from zoo.engines.vlm.policy_model import load_policy

    return load_policy(_recipe(str(folder)))


def _loop_resume(folder: Path) -> Any:
    """The ``vlm-sft`` and semi-online (``ui-s1``) engines' ``--resume``."""
    from zoo.engines.vlm.policy_model import resumed_policy

    return resumed_policy(_recipe("tiny:qwen2_5_vl"), folder)


def _trainer_resume(folder: Path) -> Any:
    """``ZooGRPOTrainer``'s checkpoint restore as the HF Trainer calls it; it reads nothing of the trainer
    but its model, so a stand-in holding one is enough."""
    from zoo.engines.vlm.trainer import ZooGRPOTrainer

    model, _ = build_tiny_vlm("qwen2_5_vl")
    return ZooGRPOTrainer._load_from_checkpoint(SimpleNamespace(model=model), str(folder))


def _agent_release(folder: Path) -> Any:
    from lab.gui.agent_release import evaluate

    return evaluate(folder, n=1)


LOAD_PATHS: dict[str, Callable[[Path], Any]] = {
    "load_vlm_weights": _direct,
    "zoo.load pipeline": _pipeline,
    "training start": _training_start,
    "sft and semi-online resume": _loop_resume,
    "vlm-trl trainer resume": _trainer_resume,
    "gui agent release": _agent_release,
}


@pytest.mark.parametrize("path", LOAD_PATHS)
def test_pickled_weights_are_refused(checkpoints: dict[str, Path], path: str) -> None:
    with pytest.raises(ValueError, match=r"has no \*\.safetensors weights; the zoo loads safetensors only"):
        LOAD_PATHS[path](checkpoints["pickled"])


@pytest.mark.parametrize("path", LOAD_PATHS)
def test_a_missing_tensor_is_refused_by_name(checkpoints: dict[str, Path], path: str) -> None:
    with pytest.raises(ValueError, match=r"not in its weights \(e\.g\. \S*layers\.0\.mlp\.down_proj\.weight"):
        LOAD_PATHS[path](checkpoints["truncated"])


def test_a_good_checkpoint_loads_as_from_pretrained_loads_it(checkpoints: dict[str, Path]) -> None:
    from transformers import AutoModelForImageTextToText

    from zoo.load import load_vlm_weights

    ours, theirs = load_vlm_weights(checkpoints["good"]), AutoModelForImageTextToText.from_pretrained(checkpoints["good"])
    assert type(ours) is type(theirs)
    assert ours.get_input_embeddings().weight is ours.get_output_embeddings().weight  # tied, as saved
    mine, reference = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(reference)
    assert all(mine[k].dtype == reference[k].dtype and torch.equal(mine[k], reference[k]) for k in mine)
