"""The diffusion engine's FSDP2 sharding (``launch: fsdp-sd3``: one shard unit per JointTransformerBlock of the tiny
SD3 transformer), two processes under ``torchrun`` with gloo on the CPU, against the replicated (DDP) run.

Every weight trains, with an EMA, rewarded by ``prompt-colour``, which scores no image of the training prompt
"a square" (it names no colour): a rank that drew it keeps no transition after the zero-advantage filter while the
other keeps all of its own, so both runs go through rounds in which the ranks hold different numbers of micro-batches
and the rank short of rows runs zero-weighted fillers in lockstep (before, such a DDP run stopped in the first such
round, its ranks waiting in different collectives). The sharded run keeps its EMA in CPU memory
(``training.ema_device: cpu``), the replicated one beside the weights.

In one process: a LoRA recipe or an offload config under FSDP is refused at ``--dry-run``; the EMA kept on the CPU is
the one kept beside the weights; ``model.dtype`` is the text encoders' and the VAE's, the denoiser stays float32.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.engines.launch import killed_after, needs_torchrun
from tests.engines.launch import torchrun as launch
from tests.engines.run_dirs import assert_same_tensors, metric_rows
from tests.engines.test_diffusion_engine import SMOKE, recipe
from tests.engines.test_diffusion_multiprocess import SETTINGS
from tests.engines.test_diffusion_pipeline_model import sd_pipeline_dir  # noqa: F401  (a fixture)
from zoo.engines import ENGINES
from zoo.engines.diffusion.checkpoint import STATE
from zoo.engines.diffusion.ema import ShardEMA
from zoo.engines.diffusion.models import load_model
from zoo.engines.diffusion.setup import build_run
from zoo.engines.diffusion.trainer import train_round
from zoo.runs import read_state
from zoo.sharding import ShardingError

COMMON = [*SETTINGS, "training.ema_decay=0.9", "prompts.train=[a red square, a square]", "rewards=[prompt-colour]"]
SHARDED = [*COMMON, "launch=fsdp-sd3", "training.ema_device=cpu"]


def torchrun(output_dir: Path, settings: list[str], *extra: str):
    """``torchrun --standalone --nproc_per_node 2 -m zoo.cli train`` of the smoke recipe."""
    return launch(SMOKE, output_dir, settings, *extra)


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("sharded") / "run"
    return out, torchrun(out, SHARDED).stderr


@pytest.fixture(scope="module")
def replicated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("replicated") / "run"
    torchrun(out, COMMON)
    return out


def assert_close_tensors(a: Path, b: Path) -> None:
    """Two safetensors files hold the same names, dtypes and shapes, and values equal to float32 tolerance."""
    first, second = load_file(str(a)), load_file(str(b))
    assert first.keys() == second.keys()
    for name in first:
        torch.testing.assert_close(first[name], second[name], rtol=1e-4, atol=1e-5, msg=name)


@needs_torchrun
def test_the_sharded_run_equals_the_replicated_run(sharded: tuple[Path, str], replicated: Path) -> None:
    """Every ``metrics.csv`` cell, the checkpoints' weights, AdamW state and EMA, and ``final/`` (the EMA's weights:
    so the EMA kept as CPU shards equals the EMA of the unsharded run) agree to float32 tolerance over four rounds."""
    out, log = sharded
    assert "FSDP2 over 2 ranks (JointTransformerBlock blocks, launch fsdp-sd3)" in log
    assert "compute float32 over float32 weights" in log  # torchrun: accelerate's mixed_precision is "no"
    ours, theirs = metric_rows(out), metric_rows(replicated)
    assert [r["step"] for r in ours] == ["0", "1", "2", "3", "4"]
    assert {r["kept_fraction"] for r in ours[1:]} >= {"0.5"}, "no round in which the ranks kept different rows"
    for mine, other in zip(ours, theirs, strict=True):
        assert mine.keys() == other.keys()
        for key, value in mine.items():
            if value != other[key]:  # equal strings cover "", "nan" and exact equality
                assert float(value) == pytest.approx(float(other[key]), rel=1e-4, abs=1e-6), (mine["step"], key)
    for name in ("checkpoint-2/trained.safetensors", "checkpoint-4/trained.safetensors", "final/trained.safetensors"):
        assert_close_tensors(out / name, replicated / name)
    state, reference = read_state(out / "checkpoint-4" / STATE), read_state(replicated / "checkpoint-4" / STATE)
    assert state["optimizer"]["param_groups"] == reference["optimizer"]["param_groups"]
    assert state["optimizer"]["state"].keys() == reference["optimizer"]["state"].keys()
    for name, moments in state["optimizer"]["state"].items():  # keyed by parameter name, whole tensors
        for key, value in moments.items():
            torch.testing.assert_close(value, reference["optimizer"]["state"][name][key], rtol=1e-4, atol=1e-6)
    assert state["ema"]["optimization_step"] == reference["ema"]["optimization_step"] > 0
    for mine, other in zip(state["ema"]["shadow_params"], reference["ema"]["shadow_params"], strict=True):
        torch.testing.assert_close(mine, other, rtol=1e-4, atol=1e-5)
    trained = load_file(str(out / "checkpoint-4" / "trained.safetensors"))
    assert not all(torch.equal(trained[k], v) for k, v in load_file(str(out / "final" / "trained.safetensors")).items())


@needs_torchrun
def test_a_killed_sharded_run_resumes_exactly(sharded: tuple[Path, str], tmp_path: Path) -> None:
    """``kill -9`` of the whole job once ``checkpoint-2`` is complete, then ``--resume`` with two processes: every
    metric and the final (EMA) weights equal the uninterrupted sharded run's bit for bit."""
    straight = sharded[0]
    resumed = tmp_path / "resumed"
    killed_after(SMOKE, resumed, SHARDED, 2)
    done = torchrun(resumed, SHARDED, "--resume")
    assert "checkpoint-2 (round 2)" in done.stderr
    assert metric_rows(resumed) == metric_rows(straight)
    for name in ("checkpoint-4/trained.safetensors", "final/trained.safetensors"):
        assert_same_tensors(straight / name, resumed / name)


@needs_torchrun
def test_bf16_compute_keeps_float32_shards_optimizer_state_and_ema(tmp_path: Path, monkeypatch) -> None:
    """What ``accelerate launch --config_file zoo/launch/fsdp-sd3.yaml`` sets (``mixed_precision: bf16``): the blocks
    compute in bfloat16 (FSDP2's mixed-precision policy), while the weights, AdamW's moments and the EMA the run
    saves stay float32."""
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "bf16")
    out = tmp_path / "bf16"
    log = torchrun(out, [*SHARDED, "training.steps=2"]).stderr
    assert "compute bfloat16 over float32 weights, FSDP2 over 2 ranks" in log
    state = read_state(out / "checkpoint-2" / STATE)
    assert {t.dtype for t in load_file(str(out / "checkpoint-2" / "trained.safetensors")).values()} == {torch.float32}
    assert {v.dtype for m in state["optimizer"]["state"].values() for v in m.values()} == {torch.float32}
    assert {t.dtype for t in state["ema"]["shadow_params"]} == {torch.float32}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (("launch=fsdp-sd3", "training.lora.enabled=true"), "launch it with ddp"),
        (("launch=fsdp-qwen2.5-vl-offload",), "offloads the shards"),
    ],
)
def test_what_the_engine_does_not_shard_is_refused_at_dry_run(tmp_path: Path, overrides: tuple[str, ...],
                                                               message: str) -> None:  # fmt: skip
    with pytest.raises(ShardingError, match=message):
        ENGINES.get("diffusion").run(recipe(*overrides), tmp_path, dry_run=True)


def test_the_ema_kept_on_the_cpu_equals_the_ema_kept_beside_the_weights(tmp_path: Path) -> None:
    """``training.ema_device: cpu`` holds the average in CPU memory, and it is the average kept beside the weights (on
    their device: the GPU where there is one, and this test then compares the two devices' arithmetic)."""
    torch.set_num_threads(1)
    run = build_run(recipe("training.ema_decay=0.9", "training.ema_device=cpu"), tmp_path)
    beside = ShardEMA(run.trainable, 0.9, warmup=True)
    assert run.ema.device == torch.device("cpu") and beside.device == run.trainable[0].device
    generator = torch.Generator().manual_seed(0)
    for _ in range(3):  # optimiser steps on made-up gradients: each EMA follows the same weights
        for param in run.trainable:
            param.grad = torch.randn(param.shape, generator=generator).to(param.device)
        run.optimizer_step()
        beside.after_optimizer_step(run.trainable)
    for mine, other in zip(run.ema.shadow_params, beside.shadow_params, strict=True):
        torch.testing.assert_close(mine, other.cpu(), rtol=0, atol=1e-7)


def test_the_frozen_parts_follow_model_dtype_and_the_denoiser_stays_float32(
    sd_pipeline_dir: Path,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
) -> None:
    """``model.dtype`` is the frozen parts' (the text encoders' and the VAE's); the trained denoiser is float32 and
    the prompt embeddings reach it in float32."""
    model = load_model(str(sd_pipeline_dir), dtype=torch.bfloat16)
    assert model.encoder.pipe.text_encoder.dtype == model.vae.dtype == torch.bfloat16
    assert model.denoiser.dtype == torch.float32
    overrides = ("algorithm.method=ddpo", f"model.name={sd_pipeline_dir}", "model.dtype=bfloat16",
                 "algorithm.group_size=2", "training.lora.enabled=true", "training.lora.r=2")
    run = build_run(recipe(*overrides), tmp_path)
    assert all(t.dtype == torch.float32 for t in run.encode(["a red square"]))
    assert train_round(run, 0)["train/grad_norm"] > 0
