"""The policy a VLM recipe trains: a tiny model built offline, a local directory, a zoo entry or a Hub base model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.recipe import RecipeError

if TYPE_CHECKING:
    from zoo.data import Sample
    from zoo.engines.vlm.recipe import VLMRecipe
    from zoo.engines.vlm.sft_engine import SFTRecipe


def load_policy(
    recipe: VLMRecipe | SFTRecipe, samples: list[Sample] | None = None, corpus: list[str] | None = None
) -> tuple[Any, Any]:
    """``(model, processor)`` for ``recipe.model.name``: ``tiny:<arch>``, a local directory or a zoo name.

    A ``tiny:`` model's tokenizer learns ``corpus`` (default: the prompts and targets of ``samples``)
    unless ``model.tiny`` gives its own.
    """
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    name = recipe.model.name
    if name.startswith("tiny:"):
        from zoo.tiny import DEFAULT_CORPUS, build_tiny_vlm

        kwargs = dict(recipe.model.tiny)
        kwargs.setdefault("seed", recipe.training.seed)
        if "corpus" not in kwargs:
            kwargs["corpus"] = [DEFAULT_CORPUS, *(corpus if corpus is not None else _corpus(samples or []))]
        arch = name.split(":", 1)[1]
        if arch not in ("qwen2_5_vl", "qwen3_vl"):
            raise RecipeError(f"model.name={name!r}: tiny models are tiny:qwen2_5_vl or tiny:qwen3_vl")
        return build_tiny_vlm(arch, **kwargs)
    dtype = {"auto": "auto", "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if recipe.model.dtype not in dtype:
        raise RecipeError(f"model.dtype={recipe.model.dtype!r}; choose one of {list(dtype)}")
    source, revision = policy_source(recipe)
    model = AutoModelForImageTextToText.from_pretrained(source, dtype=dtype[recipe.model.dtype], revision=revision)
    return model, AutoProcessor.from_pretrained(source, revision=revision)


def policy_source(recipe: VLMRecipe) -> tuple[str, str | None]:
    """``(path or repo id, revision)`` of a non-tiny ``recipe.model.name``.

    A local directory is used as is; a zoo name is resolved as :func:`zoo.load` resolves it; a name
    that is neither but has the shape ``owner/name`` is a Hub repository (the instruct base models
    the recipes start from, e.g. ``Qwen/Qwen2.5-VL-7B-Instruct``, are not zoo entries), loaded at
    ``model.revision``. Anything else is an unknown zoo name, with close matches.
    """
    from zoo_common.registry import UnknownNameError
    from zoo.hub import is_repo_id, resolve
    from zoo.registry import info

    name = recipe.model.name
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path), None
    try:
        entry = info(name)
    except UnknownNameError:
        if is_repo_id(name):
            return name, recipe.model.revision
        raise
    return str(resolve(entry, recipe.model.revision).path), None


def _corpus(samples: list[Sample]) -> list[str]:
    """Prompt and target text, so a tiny tokenizer learns the task's words as whole tokens."""
    texts = []
    for sample in samples[:512]:
        texts.append(sample.question)
        texts.extend(str(v) for v in sample.target.values())
    return texts
