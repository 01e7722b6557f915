"""The bytes a training step of the ``vlm-semi-online`` engine really holds, per kind of tensor, for
``tests/zoo/test_memory_plan_tensors.py`` to hold the memory plan to.

Run in the test's process for one rank, or as ``torchrun --nproc_per_node 2 -m tests.zoo.memory_tensors OUT MODEL
LAUNCH [OVERRIDE ...]`` for a sharded run, where each rank writes its counts to ``OUT/rank<r>.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch

#: The engine's smoke recipe, pointed at a saved tiny model (``model.name``) by :func:`recipe`.
RECIPE = "domains/gui/recipes/ui-s1-smoke.yaml"


def recipe(model_dir: Path, launch: str, overrides: tuple[str, ...] = ()) -> Any:
    """The smoke recipe training the tiny model in ``model_dir`` in bf16 over fp32 masters with a KL reference and a
    frozen vision tower, under ``launch``."""
    from zoo.recipe import load_recipe

    return load_recipe(RECIPE, [f"model.name={model_dir}", "model.dtype=bfloat16", "algorithm.beta=0.04",
                                "training.freeze_vision=true", f"launch={launch}", *overrides])  # fmt: skip


def save_tiny_model(folder: Path) -> Path:
    """A tiny Qwen2.5-VL (the engine's ``tiny:qwen2_5_vl``) saved as a model folder the plan and the engine read."""
    from zoo.tiny import build_tiny_vlm

    model, processor = build_tiny_vlm("qwen2_5_vl", hidden=64, layers=2, vision_hidden=32, vocab_size=401)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def local_bytes(tensor: torch.Tensor) -> int:
    """Bytes this rank stores for ``tensor`` (its own shard when it is an FSDP2 ``DTensor``)."""
    local = tensor.to_local() if hasattr(tensor, "to_local") else tensor
    return local.numel() * local.element_size()


def one_step_bytes(run: Any) -> dict[str, int]:
    """Build the engine's learner for ``run`` (its own model loading, precision, sharding, reference and AdamW), take
    one optimiser step on a text batch, and count the bytes of the weights, gradients, AdamW moments (its ``step``
    counters are CPU scalars, not device memory) and the reference's weights this rank holds."""
    from zoo.distributed import DataParallel
    from zoo.engines import ENGINES
    from zoo.engines.vlm.policy_model import load_policy, policy_precision
    from zoo.engines.vlm.semi_online_engine import SemiOnlineLearner

    parallel = DataParallel(cuda=False)
    precision = policy_precision(run, cuda=False)
    model, processor = load_policy(run, precision=precision)
    learner = SemiOnlineLearner(run, model, processor, parallel, precision=precision,
                                sharding=ENGINES.get(run.engine).sharding(run.launch))  # fmt: skip
    ids = processor.tokenizer(["tap the blue button"] * 2, return_tensors="pt")["input_ids"]
    with precision.autocast("cpu"):
        loss = learner.model(input_ids=ids, labels=ids).loss
    loss.backward()
    parallel.sum_gradients(learner.params)
    learner.optimizer.step()
    moments = [v for state in learner.optimizer.state.values() for k, v in state.items() if k != "step"]
    reference = learner.reference.parameters() if learner.reference is not None else ()
    params = list(learner.model.parameters())
    return {"params": sum(local_bytes(p) for p in params),
            "grads": sum(local_bytes(p.grad) for p in params if p.grad is not None),
            "optim": sum(local_bytes(m) for m in moments), "reference": sum(local_bytes(p) for p in reference)}  # fmt: skip


def main(out: str, model_dir: str, launch: str, *overrides: str) -> None:
    """One rank of a ``torchrun`` job: its counts to ``out/rank<r>.json``."""
    counts = one_step_bytes(recipe(Path(model_dir), launch, overrides))
    rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
    (Path(out) / f"rank{rank}.json").write_text(json.dumps(counts))


if __name__ == "__main__":
    main(*sys.argv[1:])
