"""Two-process diffusion runs (``torchrun --nproc_per_node 2``, gloo on the CPU), as a user launches them: replicated
(DDP), and sharded with FSDP2 (``launch: fsdp-sd3``: one shard unit per JointTransformerBlock of the tiny SD3
transformer) against the replicated run.

Every weight trains, with an EMA, rewarded by ``prompt-colour``, which scores no image of the training prompt
"a square" (it names no colour): a rank that drew it keeps no transition after the zero-advantage filter while the
other keeps all of its own, so both runs go through rounds in which the ranks hold different numbers of micro-batches
and the rank short of rows runs zero-weighted fillers in lockstep (before, such a DDP run stopped in the first such
round, its ranks waiting in different collectives). The sharded run keeps its EMA in CPU memory
(``training.ema_device: cpu``), the replicated one beside the weights.

The replicated run, one writer and whole-run rows: ``metrics.csv`` holds every step once, with values gathered over
both ranks (a reward term's mean too, over the images that term scored on either rank); the ranks end on
bit-identical weights. Resume (review 2.3): the run as a kill after ``checkpoint-2`` leaves it, resumed with two
processes, equals the uninterrupted run (every metrics cell but ``cpu_minutes``, ``final/`` bit for bit), and each
rank gets its own sampling generator back, so the ranks still draw different noise. Review 2.4: the killed run left a
half-written ``checkpoint-4`` (of 300 files, to widen the window), which the main process alone deletes.

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
from tests.engines.run_dirs import assert_same_tensors, interrupted_copy, logged_digest, metric_rows
from tests.engines.test_diffusion_engine import SMOKE, TINY, recipe
from tests.engines.test_diffusion_pipeline_model import sd_pipeline_dir  # noqa: F401  (a fixture)
from zoo.distributed import weights_digest
from zoo.engines import ENGINES
from zoo.engines.diffusion.checkpoint import STATE
from zoo.engines.diffusion.ema import ShardEMA
from zoo.engines.diffusion.models import load_model
from zoo.engines.diffusion.setup import build_run
from zoo.engines.diffusion.trainer import train_round
from zoo.runs import is_complete, read_state
from zoo.sharding import ShardingError

SETTINGS = [*TINY, "training.steps=4", "training.save_steps=2", "training.eval_every=2", "training.num_threads=1"]
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
def launched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The replicated run and what it logged."""
    out = tmp_path_factory.mktemp("replicated") / "run"
    return out, torchrun(out, COMMON).stderr


@pytest.fixture(scope="module")
def replicated(launched: tuple[Path, str]) -> Path:
    return launched[0]


@needs_torchrun
def test_the_replicated_ranks_end_with_bit_identical_trained_weights(launched: tuple[Path, str]) -> None:
    """Each rank hashes its trained tensors (the EMA's, which ``final/`` holds) at the end; the hashes are compared
    over the group (a difference raises) and the digest logged is that of the tensors rank 0 saved."""
    out, log = launched
    assert "weights identical on all 2 ranks" in log
    logged = logged_digest(log)
    saved = load_file(str(out / "final" / "trained.safetensors"))
    assert weights_digest(saved).startswith(logged)


@needs_torchrun
def test_two_processes_write_one_row_per_step_with_whole_run_values(replicated: Path) -> None:
    rows = metric_rows(replicated)
    assert [r["step"] for r in rows] == ["0", "1", "2", "3", "4"]
    per_process = 4 * 3  # group_size x num_steps images' denoiser calls of one process's one prompt
    assert all(int(r["sample_evals"]) == 2 * per_process for r in rows[1:])  # counted over both ranks
    # the reward is prompt-colour's alone, and both are means over every image the term scored on either rank: equal
    # in every round, those in which one rank drew "a square" (none of its images scored: half the round's) among them,
    # and both NaN where both ranks drew it
    assert "0.5" in {r["reward_missing"] for r in rows[1:]}, "no round in which one rank's images went unscored"
    for row in rows[1:]:
        term = float(row["rewards/prompt-colour/mean"])
        assert float(row["reward"]) == pytest.approx(term, abs=1e-6, nan_ok=True), row
    grids = sorted(p.name for p in (replicated / "samples").iterdir())
    assert grids == ["step-00000.png", "step-00002.png", "step-00004.png"]
    assert (replicated / "final" / "trained.safetensors").is_file() and (replicated / "reward_curve.png").is_file()


@needs_torchrun
def test_two_process_resume_equals_the_uninterrupted_run_with_distinct_noise(replicated: Path, tmp_path: Path) -> None:
    resumed = interrupted_copy(replicated, tmp_path / "resumed", 2, half_written=300)
    assert not is_complete(resumed / "checkpoint-4")
    done = torchrun(resumed, COMMON, "--resume")
    assert "resumed from" in done.stderr and "checkpoint-2 (round 2)" in done.stderr
    assert metric_rows(resumed) == metric_rows(replicated)
    assert_same_tensors(replicated / "final" / "trained.safetensors", resumed / "final" / "trained.safetensors")
    assert not list((resumed / "checkpoint-4").glob("part-*"))  # the half-written one was replaced

    restored = read_state(resumed / "checkpoint-2" / STATE)["ranks"]
    after = read_state(resumed / "checkpoint-4" / STATE)["ranks"]
    expected = read_state(replicated / "checkpoint-4" / STATE)["ranks"]
    assert not torch.equal(restored[0]["generator"], restored[1]["generator"])
    for rank in (0, 1):  # each rank continued its own generator: the draws of the run that never stopped
        assert torch.equal(after[rank]["generator"], expected[rank]["generator"])
    assert not torch.equal(after[0]["generator"], after[1]["generator"])


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
