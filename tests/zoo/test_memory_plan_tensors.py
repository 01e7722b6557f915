"""The memory plan held to the tensors of a real training step, for every engine that trains weights:
``zoo train RECIPE --plan``'s weights, gradients, AdamW moments, KL reference and EMA per GPU equal, byte for byte,
what the engine's own setup holds right after its first optimiser step (``tests/zoo/memory_tensors.py`` builds and
counts it) on a tiny Qwen2.5-VL saved as a model folder (``vlm-semi-online``, ``vlm-sft``, ``vlm-trl``: bf16 compute
over fp32 masters, a frozen vision tower, a KL reference; and LoRA runs) or a tiny SD3 or LCM pipeline saved as one
(``diffusion``: an fp32 denoiser, its reference and EMA beside bf16 text encoders; and a LoRA run; RLCM's LoRA on the
LCM's UNet, and the UNet trained whole with an EMA).

In one process each engine runs as under ``ddp`` (TRL's accelerate without a launch config is plain, DDP's semantics
for one process); as rank 0 of a two-process run over gloo each engine that shards its model itself runs under its
FSDP config (``fsdp-qwen2.5-vl``, ``fsdp-sd3``), all three in one ``torchrun`` job. The tiny VLM's vocabulary is odd,
so FSDP2's ``torch.chunk`` split leaves rank 0 one row more than rank 1 and the plan must count rank 0's ⌈rows/N⌉.
A sharded run must also hold nothing of its model or reference gathered once the step is done: the plan prices
gathered units as copies that are freed, not as memory a step leaves behind.

Not compared: the plan's copies (gathered units, autocast's cache, DDP's buckets, which do not exist with one process,
and other communication buffers) and activations, estimates of transient memory (``zoo/memory_plan.py`` gives their
formulas); and its frozen part (text encoders, VAE, buffers), loaded once and untouched by a step.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.engines.launch import ENV, ROOT, TORCHRUN, needs_torchrun
from tests.zoo.memory_tensors import SHARDED, one_step_bytes, recipe, save_models
from zoo import memory_plan

HELD = ("params", "grads", "optim", "reference", "ema")
LORA = ("training.lora.enabled=true", "training.lora.r=4")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny models every test trains, saved once for the module."""
    return save_models(tmp_path_factory.mktemp("plan-tensors"))


def planned(run: object, launch: str, processes: int) -> dict[str, int]:
    """The plan's bytes per GPU of ``HELD`` for ``run`` under ``launch`` over ``processes``, and nothing of a sharded
    model left gathered once the step is done (the plan prices gathered units as copies that are freed)."""
    _, rows, skipped = memory_plan.plan(run, processes=processes)
    found = next((r for r in rows if r.config == launch), None)
    assert found is not None, skipped.get(launch)
    return {**{key: found.parts[key] for key in HELD}, "gathered": 0}


@pytest.mark.parametrize(
    ("case", "overrides", "reference_width"),
    [("vlm-semi-online", (), 2),  # UI-S1's reference in the compute dtype, bf16
     ("vlm-semi-online", LORA, 2),  # ... beside the adapters too
     ("vlm-sft", (), 0),
     ("vlm-trl", (), 4),  # TRL builds it in the policy's dtype: the fp32 masters
     ("vlm-trl", LORA, 0),  # TRL scores with the adapters off
     ("diffusion", (), 4),  # a copy of the fp32 denoiser
     ("diffusion", LORA, 0),  # the adapters off
     ("diffusion-unet", (), 0),  # RLCM's LoRA r8 on an LCM UNet, its float32 base frozen
     ("diffusion-unet", ("training.lora.enabled=false", "training.ema_decay=0.9"), 0)],  # every UNet weight, an EMA
    ids=["semi-online", "semi-online-lora", "sft", "trl", "trl-lora", "diffusion", "diffusion-lora", "unet-lora",
         "unet"],
)  # fmt: skip
def test_one_process_holds_the_bytes_the_plan_says(
    models: Path, tmp_path: Path, case: str, overrides: tuple[str, ...], reference_width: int
) -> None:
    """Each engine in one process holds what the plan's ``ddp`` row says for one process; its KL reference is the
    model's parameters in the dtype the engine builds it in (``reference_width`` bytes each), known apart from the
    plan."""
    run = recipe(case, models, "ddp", tmp_path, overrides)
    real = one_step_bytes(run)
    assert real == planned(run, "ddp", 1)
    assert real["reference"] == reference_width * memory_plan.workload(run).params


@pytest.fixture(scope="module")
def sharded_ranks(models: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, dict[str, int]]]:
    """Each rank's counts, by engine, from one two-process ``torchrun`` job that runs every engine of ``SHARDED``
    (one launch for all: a launch costs seconds)."""
    out = tmp_path_factory.mktemp("plan-tensors-sharded")
    command = [str(TORCHRUN), "--standalone", "--nproc_per_node", "2", "-m", "tests.zoo.memory_tensors", str(out),
               str(models)]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, **ENV, "TMPDIR": str(out)},
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]


@needs_torchrun
@pytest.mark.parametrize("engine", SHARDED)
def test_rank_0_of_a_two_process_fsdp2_run_holds_the_bytes_the_plan_says(
    models: Path, tmp_path: Path, sharded_ranks: list[dict[str, dict[str, int]]], engine: str
) -> None:
    """Rank 0 holds the plan's per-GPU bytes under the engine's FSDP config; rank 1 no more, and less where the tiny
    VLM's odd vocabulary splits unevenly (the SD3 transformer's widths are even)."""
    launch = SHARDED[engine]
    expected = planned(recipe(engine, models, launch, tmp_path), launch, 2)
    rank0, rank1 = (ranks[engine] for ranks in sharded_ranks)
    assert rank0 == expected
    assert all(rank1[key] <= expected[key] for key in HELD)
    assert (rank1 != rank0) == engine.startswith("vlm-")
