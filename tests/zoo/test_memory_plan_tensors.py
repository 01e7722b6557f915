"""The memory plan held to the tensors of a real training step: ``zoo train RECIPE --plan``'s weights, gradients,
AdamW moments and KL reference per GPU equal, byte for byte, what the ``vlm-semi-online`` engine's own setup holds
after one optimiser step on a tiny Qwen2.5-VL saved as a model folder (bf16 compute over fp32 masters, a frozen vision
tower, a KL reference; and a LoRA run), in one process (``ddp``) and as rank 0 of a two-process FSDP2 run over gloo
(``fsdp-qwen2.5-vl``). The tiny model's vocabulary is odd, so FSDP2's ``torch.chunk`` split leaves rank 0 one row
more than rank 1 and the plan must count rank 0's ⌈rows/N⌉.

Not compared: the plan's copies (gathered units, autocast's cache, communication buffers) and activations, which are
estimates of transient memory, not tensors a step leaves behind (``zoo/memory_plan.py`` gives their formulas).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.engines.launch import ENV, ROOT, TORCHRUN, needs_torchrun
from tests.zoo.memory_tensors import one_step_bytes, recipe, save_tiny_model
from zoo import memory_plan

HELD = ("params", "grads", "optim", "reference")
LORA = ("training.lora.enabled=true", "training.lora.r=4")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("plan-tensors") / "tiny")


def planned(run: object, launch: str, processes: int) -> dict[str, int]:
    """The plan's bytes per GPU of ``HELD`` for ``run`` under ``launch`` over ``processes``."""
    _, rows, skipped = memory_plan.plan(run, processes=processes)
    found = next((r for r in rows if r.config == launch), None)
    assert found is not None, skipped.get(launch)
    return {key: found.parts[key] for key in HELD}


@pytest.mark.parametrize("overrides", [(), LORA], ids=["full-fine-tune", "lora"])
def test_one_process_holds_the_bytes_the_plan_says(tiny_model: Path, overrides: tuple[str, ...]) -> None:
    run = recipe(tiny_model, "ddp", overrides)
    real = one_step_bytes(run)
    assert real == planned(run, "ddp", 1)
    work = memory_plan.workload(run)
    assert real["reference"] == 2 * work.params  # the reference in bf16, beside the fp32 masters (and the LoRA base)


@needs_torchrun
def test_rank_0_of_a_two_process_fsdp2_run_holds_the_bytes_the_plan_says(tiny_model: Path, tmp_path: Path) -> None:
    launch = "fsdp-qwen2.5-vl"
    command = [str(TORCHRUN), "--standalone", "--nproc_per_node", "2", "-m", "tests.zoo.memory_tensors",
               str(tmp_path), str(tiny_model), launch]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, **ENV, "TMPDIR": str(tmp_path)},
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    expected = planned(recipe(tiny_model, launch), launch, 2)
    assert ranks[0] == expected
    assert all(ranks[1][key] <= expected[key] for key in HELD) and ranks[1] != ranks[0]
