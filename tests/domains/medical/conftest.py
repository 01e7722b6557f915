"""A tiny random open_clip model wrapped as the zoo's Patho-CLIP pipeline, for the medical evaluations."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import zoo
from zoo.hub import ResolvedModel


@pytest.fixture(scope="module")
def tiny_clip_pipe(tmp_path_factory: pytest.TempPathFactory):
    import open_clip

    from zoo.pipelines.clip import ClipPipeline

    torch.manual_seed(0)
    vision = {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16}
    text = {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}
    model = open_clip.CLIP(16, vision, text).eval()
    preprocess = open_clip.image_transform(32, is_train=False)
    tokenizer = open_clip.get_tokenizer("ViT-B-16", context_length=16)
    resolved = ResolvedModel(Path(tmp_path_factory.mktemp("clip")), "local", "local")
    return ClipPipeline(model, preprocess, tokenizer, zoo.info("patho-clip-b"), resolved)
