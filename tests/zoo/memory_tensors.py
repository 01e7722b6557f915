"""The bytes a training step of each engine that trains weights really holds, per kind of tensor, for
``tests/zoo/test_memory_plan_tensors.py`` to hold the memory plan to.

Each engine is built by its own code (model loading, precision, sharding, KL reference, EMA, AdamW) from one of its
recipes pointed at a tiny model saved where the plan can size it offline, takes one optimiser step, and is counted
right after that step (:func:`at_first_step`), before its loop drops the gradients.

Run in the test's process for one rank, or as ``torchrun --nproc_per_node 2 -m tests.zoo.memory_tensors OUT MODELS``
for the sharded runs (:data:`SHARDED`, ``MODELS`` a folder :func:`save_models` wrote), where each rank writes its
counts, by engine, to ``OUT/rank<r>.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch

#: Each engine's recipe (the diffusion engine's twice: a transformer and a UNet denoiser), and what it is set to (beside
#: ``model.name``, ``launch`` and the output folder) so that every kind of tensor the plan prices exists, at a size a
#: CPU steps in a second: bf16 compute over fp32 masters, a frozen vision tower and (RL) a KL reference for the VLM
#: engines; a KL reference, an EMA and bf16 text encoders and VAE for the diffusion engine; RLCM's LoRA on an LCM UNet.
RECIPES = {
    "vlm-semi-online": ("domains/gui/recipes/ui-s1-smoke.yaml",
                        ("model.dtype=bfloat16", "algorithm.beta=0.04", "training.freeze_vision=true")),
    "vlm-sft": ("domains/gui/recipes/gui-g1-tiny-sft.yaml",
                ("model.dtype=bfloat16", "training.freeze_vision=true", "training.batch_size=2")),
    "vlm-trl": ("domains/gui/recipes/gui-g1-tiny-cpu.yaml",
                ("model.dtype=bfloat16", "algorithm.beta=0.04", "training.freeze_vision=true", "data.kwargs.n=2",
                 "algorithm.num_generations=2", "algorithm.max_completion_length=4", "training.batch_size=2",
                 "training.steps=1")),
    "diffusion": ("domains/image/recipes/flow-grpo-tiny-colour.yaml",
                  ("model.dtype=bfloat16", "algorithm.group_size=2", "algorithm.num_steps=2",
                   "training.prompts_per_step=1", "training.train_batch_size=2", "training.ema_decay=0.9")),
    "diffusion-unet": ("domains/image/recipes/rlcm-tiny-smoke.yaml",
                       ("model.dtype=bfloat16", "algorithm.num_steps=2",
                        "training.prompts_per_step=1", "training.grad_accum=2")),
}  # fmt: skip
#: The launch config each engine that shards its model itself runs under as rank 0 of two processes.
SHARDED = {"vlm-semi-online": "fsdp-qwen2.5-vl", "vlm-sft": "fsdp-qwen2.5-vl", "diffusion": "fsdp-sd3"}


def recipe(case: str, models: Path, launch: str, out: Path, overrides: tuple[str, ...] = ()) -> Any:
    """``case``'s recipe (:data:`RECIPES`) training its tiny model under ``models`` (:func:`save_models`) under
    ``launch``, writing what its loop writes to ``out``."""
    from zoo.engines.reading import load_recipe

    path, settings = RECIPES[case]
    return load_recipe(path, [f"model.name={model_dirs(models)[case]}", f"launch={launch}",
                              f"training.output_dir={out}", *settings, *overrides])  # fmt: skip


def model_dirs(models: Path) -> dict[str, Path]:
    """The folder under ``models`` of the tiny model each case of :data:`RECIPES` trains."""
    folders = {"diffusion": "sd3", "diffusion-unet": "lcm"}
    return {case: models / folders.get(case, "qwen2.5-vl") for case in RECIPES}


def save_models(models: Path) -> Path:
    """``models`` holding a tiny Qwen2.5-VL (the engines' ``tiny:qwen2_5_vl``, with an odd vocabulary that FSDP2 splits
    unevenly), a tiny ``StableDiffusion3Pipeline`` (the engine's ``tiny:sd3`` transformer and VAE, two tiny CLIP
    encoders) and a tiny ``LatentConsistencyModelPipeline`` (:func:`save_tiny_lcm`), each saved as a model folder with
    the configs the plan sizes offline (``tiny:`` names it refuses)."""
    from lab.image.release import build_pipeline
    from zoo.tiny import build_tiny_vlm

    folders = model_dirs(models)
    model, processor = build_tiny_vlm("qwen2_5_vl", hidden=64, layers=2, vision_hidden=32, vocab_size=401)
    model.save_pretrained(folders["vlm-sft"])
    processor.save_pretrained(folders["vlm-sft"])
    build_pipeline(folders["diffusion"], seed=0)
    save_tiny_lcm(folders["diffusion-unet"])
    return models


def save_tiny_lcm(folder: Path) -> Path:
    """The engine's ``tiny:lcm`` UNet (with its guidance input), VAE and LCM scheduler as a diffusers
    ``LatentConsistencyModelPipeline`` folder, with a tiny CLIP text encoder as wide as the UNet's cross-attention and
    no safety checker."""
    from diffusers import LatentConsistencyModelPipeline
    from transformers import CLIPTextConfig, CLIPTextModel

    from tests.tiny_pipelines import tiny_clip_tokenizer
    from zoo.engines.diffusion.models import build_tiny

    tiny = build_tiny("tiny:lcm", seed=0, sample_size=8)
    width = tiny.denoiser.config.cross_attention_dim
    encoder = CLIPTextModel(CLIPTextConfig(hidden_size=width, intermediate_size=2 * width, num_attention_heads=2,
                                           num_hidden_layers=1, vocab_size=60, max_position_embeddings=16,
                                           bos_token_id=0, eos_token_id=1, pad_token_id=1))  # fmt: skip
    tokenizer = tiny_clip_tokenizer(folder / "_tokenizer")
    pipe = LatentConsistencyModelPipeline(vae=tiny.vae, text_encoder=encoder, tokenizer=tokenizer, unet=tiny.denoiser,
                                          scheduler=tiny.scheduler, safety_checker=None, feature_extractor=None,
                                          requires_safety_checker=False)  # fmt: skip
    pipe.save_pretrained(folder, safe_serialization=True)
    shutil.rmtree(folder / "_tokenizer")
    return folder


def local_bytes(tensor: torch.Tensor) -> int:
    """Bytes this rank stores for ``tensor`` (its own shard when it is an FSDP2 ``DTensor``)."""
    local = tensor.to_local() if hasattr(tensor, "to_local") else tensor
    return local.numel() * local.element_size()


def total(tensors: Iterable[torch.Tensor | None]) -> int:
    """Bytes this rank stores for ``tensors`` (``None``, a parameter without a gradient, holds none)."""
    return sum(local_bytes(t) for t in tensors if t is not None)


def gathered(params: list[torch.Tensor]) -> int:
    """Bytes of the parameters of an FSDP2-sharded model that lie whole on this rank now, a unit all-gathered and not
    resharded (FSDP2 keeps its shard beside it); 0 for a model that is not sharded."""
    if not any(hasattr(p, "to_local") for p in params):
        return 0
    return total(p for p in params if not hasattr(p, "to_local"))


def held(params: Iterable[torch.Tensor], optimizer: torch.optim.Optimizer, reference: Iterable[torch.Tensor] = (),
         ema: Iterable[torch.Tensor] = ()) -> dict[str, int]:  # fmt: skip
    """What this rank holds of a model's ``params``, their gradients, AdamW's moments (its ``step`` counters are CPU
    scalars, not device memory), the KL ``reference``'s weights and the ``ema``, by the plan's names for them; and
    ``gathered``, what of the model and the reference a sharded run still holds gathered after the step, which the
    plan prices as transient copies only (such a unit counts whole under its own name, its shard unseen meanwhile)."""
    params, reference = list(params), list(reference)
    moments = [v for state in optimizer.state.values() for k, v in state.items() if k != "step"]
    return {"params": total(params), "grads": total(p.grad for p in params), "optim": total(moments),
            "reference": total(reference), "ema": total(ema),
            "gathered": gathered(params) + gathered(reference)}  # fmt: skip


def at_first_step(optimizer: torch.optim.Optimizer, count: Callable[[], dict[str, int]]) -> dict[str, int]:
    """A dict that ``count()`` fills right after ``optimizer``'s first step, while the gradients are still held (the
    loops drop them after the step)."""
    counts: dict[str, int] = {}

    def hook(*_: Any) -> None:
        if not counts:
            counts.update(count())

    optimizer.register_step_post_hook(hook)
    return counts


def semi_online_step(run: Any) -> dict[str, int]:
    """``vlm-semi-online``: the engine's learner (its loading, precision, sharding, frozen-dtype reference and AdamW),
    one optimiser step on a text batch (a rollout would add nothing the plan counts)."""
    from zoo.distributed import DataParallel
    from zoo.engines import ENGINES
    from zoo.engines.vlm.policy_model import load_policy, policy_precision
    from zoo.engines.vlm.semi_online_engine import SemiOnlineLearner

    parallel = DataParallel(cuda=False)
    precision = policy_precision(run, cuda=False)
    model, processor = load_policy(run, precision=precision)
    learner = SemiOnlineLearner(run, model, processor, parallel, precision=precision,
                                sharding=ENGINES.get(run.engine).sharding(run.launch))  # fmt: skip
    reference = learner.reference.parameters() if learner.reference is not None else ()
    counts = at_first_step(learner.optimizer, lambda: held(learner.model.parameters(), learner.optimizer, reference))
    ids = processor.tokenizer(["tap the blue button"] * 2, return_tensors="pt")["input_ids"]
    with precision.autocast("cpu"):
        loss = learner.model(input_ids=ids, labels=ids).loss
    loss.backward()
    parallel.sum_gradients(learner.params)
    learner.optimizer.step()
    return counts


def sft_step(run: Any) -> dict[str, int]:
    """``vlm-sft``: the model and :class:`~zoo.engines.vlm.sft.SFTLoop` as ``sft_engine._train`` builds them (its
    sharding, precision and frozen vision tower; the learning-rate schedule, which holds no memory, left at the loop's
    defaults), then one :meth:`~zoo.engines.vlm.sft.SFTLoop.step` on the recipe's own data."""
    from zoo.distributed import DataParallel
    from zoo.engines import ENGINES
    from zoo.engines.vlm.policy_model import load_policy, policy_precision
    from zoo.engines.vlm.sft import SFTLoop
    from zoo.engines.vlm.sft_engine import ExampleStream

    sharding = ENGINES.get(run.engine).launched(run.launch)
    precision = policy_precision(run, cuda=False)
    model, processor = load_policy(run, precision=precision)
    loop = SFTLoop(model, processor, ExampleStream(run), batch_size=run.training.batch_size,
                   freeze_vision=run.training.freeze_vision, parallel=DataParallel(), precision=precision,
                   sharding=sharding)  # fmt: skip
    counts = at_first_step(loop.optimizer, lambda: held(loop.model.parameters(), loop.optimizer))
    loop.step()
    return counts


def trl_step(run: Any) -> dict[str, int]:
    """``vlm-trl``: the engine's :func:`~zoo.engines.vlm.trl_engine.build_trainer` (the fp32 policy under accelerate's
    bf16 autocast, TRL's reference), then one ``trainer.train()`` step of the trainer's own AdamW."""
    from zoo.engines.vlm.trl_engine import build_trainer

    trainer = build_trainer(run, Path(run.training.output_dir))
    optimizer = trainer.create_optimizer()  # the one train() steps: it keeps an optimizer already made
    reference = trainer.ref_model.parameters() if trainer.ref_model is not None else ()
    counts = at_first_step(optimizer, lambda: held(trainer.model.parameters(), optimizer, reference))
    trainer.train()
    return counts


def diffusion_step(run: Any) -> dict[str, int]:
    """``diffusion``: the engine's :func:`~zoo.engines.diffusion.setup.build_run` (the fp32 denoiser, LoRA or a full
    fine-tune's reference, its own FSDP2 sharding, the EMA), then one :func:`~zoo.engines.diffusion.trainer.train_round`
    (rollouts, rewards, the KL term, an optimiser step)."""
    from zoo.engines.diffusion.setup import build_run
    from zoo.engines.diffusion.trainer import train_round

    live = build_run(run, Path(run.training.output_dir))
    optimizer = getattr(live.optimizer, "optimizer", live.optimizer)  # accelerate's wrapper steps the torch AdamW
    reference = live.reference_model.parameters() if live.reference_model is not None else ()
    ema = live.ema.shadow_params if live.ema is not None else ()
    counts = at_first_step(optimizer, lambda: held(live.model.denoiser.parameters(), optimizer, reference, ema))
    train_round(live, 0)
    return counts


#: How each engine is built, stepped and counted (by ``run.engine``).
STEPS: dict[str, Callable[[Any], dict[str, int]]] = {
    "vlm-semi-online": semi_online_step, "vlm-sft": sft_step, "vlm-trl": trl_step, "diffusion": diffusion_step,
}  # fmt: skip


def one_step_bytes(run: Any) -> dict[str, int]:
    """The bytes this rank holds of each kind of tensor right after ``run``'s first optimiser step, by its engine."""
    counts = STEPS[run.engine](run)
    assert counts, f"{run.name}: the engine took no optimiser step"
    return counts


def main(out: str, models: str) -> None:
    """One rank of a ``torchrun`` job: every :data:`SHARDED` engine's counts to ``out/rank<r>.json``."""
    from zoo.launch import read

    counts = {}
    for engine, launch in SHARDED.items():
        os.environ["ACCELERATE_MIXED_PRECISION"] = read(launch).mixed_precision  # as `accelerate launch` sets it
        counts[engine] = one_step_bytes(recipe(engine, Path(models), launch, Path(out) / engine))
    rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
    (Path(out) / f"rank{rank}.json").write_text(json.dumps(counts))


if __name__ == "__main__":
    main(*sys.argv[1:])
