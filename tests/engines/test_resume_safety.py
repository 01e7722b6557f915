"""Diffusion ``--resume`` reads state, never code, and continues every method exactly.

Every method and option of the engine (EMA, the stat trackers, LoRA, TreeGRPO, Flow-GRPO-Fast's window,
Adv-GRPO's discriminator) writes a checkpoint that :func:`zoo.runs.read_state` reads (``weights_only``), and
a resume from it reproduces the run that never stopped; a state file carrying a pickled payload is refused
before anything of it runs; a checkpoint from before per-rank states, or from another number of processes,
still resumes. The multi-process side is ``test_diffusion_sharded.py``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from tests.engines.run_dirs import Payload, assert_same_tensors, interrupted_copy, metric_rows, rewrite_state
from tests.engines.test_diffusion_engine import ADV, SMOKE, TINY, recipe
from zoo.distributed import rank_seed
from zoo.engines.diffusion.checkpoint import STATE, load_checkpoint
from zoo.engines.diffusion.setup import build_run
from zoo.engines.diffusion.trainer import train
from zoo.runs import UnsafeStateError, latest_checkpoint, read_state

SHAPES = {
    "flow_grpo-ema-kl": ("algorithm.beta=0.04", "training.ema_decay=0.9", "training.ema_interval=2",  # Flow-GRPO's
                         "training.ema_calls_per_step=2"),  # EMA schedule: counters the checkpoint must keep
    "flow_grpo_fast": ("algorithm.num_steps=6", "algorithm.sde_window_size=2", "algorithm.sde_window_range=[1, 5]"),
    "dance_grpo": ("algorithm.method=dance_grpo", "training.ema_decay=0.995", "training.ema_warmup=false",
                   "training.ema_every=round"),
    "ddpo-lora": ("algorithm.method=ddpo", "model.name=tiny:unet", "model.tiny={sample_size: 8}",
                  "training.lora.enabled=true"),
    "rlcm": ("algorithm.method=rlcm", "model.name=tiny:lcm", "model.tiny={sample_size: 8}"),
    "tree_grpo": ("algorithm.method=tree_grpo", "algorithm.num_steps=4", "algorithm.branch_steps=[0, 2]",
                  "algorithm.branch_factor=2"),
    "adv_grpo": (*ADV, "algorithm.reference_images.name=fixture-reference-squares",  # round 0 steps the head,
                 "algorithm.discriminator_backbone=tiny:dinov2", "algorithm.num_steps=2", "algorithm.d_times=2",  # 1 the policy
                 "training.ema_decay=0.9", "training.ema_interval=2"),  # its EMA counts the discriminator round
}  # fmt: skip
EVERY_STEP = ("training.steps=2", "training.save_steps=1", "training.eval_every=1")


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


@pytest.fixture
def _reference_squares() -> None:
    from zoo.data import DATASETS, register_dataset

    if "fixture-reference-squares" not in DATASETS:
        register_dataset("fixture-reference-squares", "tests.engines.test_diffusion_engine:reference_squares")


@pytest.mark.usefixtures("_reference_squares")
@pytest.mark.parametrize("shape", SHAPES)
def test_every_method_checkpoints_plain_state_and_resumes_exactly(tmp_path: Path, shape: str) -> None:
    config = recipe(*SHAPES[shape], *EVERY_STEP)
    straight = train(config, tmp_path / "straight")
    state = read_state(straight / "checkpoint-1" / STATE)  # weights_only: tensors and plain containers
    assert len(state["ranks"]) == 1 and set(state["ranks"][0]) == {"generator", "global"}
    assert (state["ema"] is not None) == (shape in ("flow_grpo-ema-kl", "dance_grpo", "adv_grpo"))
    if shape in ("ddpo-lora", "rlcm"):  # trackers that keep a buffer across rounds: non-empty history
        assert state["tracker"] and all(isinstance(v, list) for v in state["tracker"].values())
    assert ("discriminator" in state["extra"]) == (shape == "adv_grpo")

    resumed = interrupted_copy(straight, tmp_path / "resumed", 1)
    assert latest_checkpoint(resumed).name == "checkpoint-1"
    train(config, resumed, resume=True)
    rows = metric_rows(resumed)
    assert rows == metric_rows(straight) and [r["step"] for r in rows] == ["0", "1", "2"]
    for name in ("final/trained.safetensors", "checkpoint-2/trained.safetensors"):
        assert_same_tensors(straight / name, resumed / name)
    if state["ema"] is not None:
        counts = [read_state(d / "checkpoint-2" / STATE)["ema"]["optimization_step"] for d in (straight, resumed)]
        assert counts[0] == counts[1] > 0
    if shape == "adv_grpo":
        heads = [read_state(d / "checkpoint-2" / STATE)["extra"]["discriminator"]["head"] for d in (straight, resumed)]
        assert all(torch.equal(heads[0][k], heads[1][k]) for k in heads[0])


def test_a_state_file_that_needs_unpickling_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    """The review's reproduction (3.11) through ``zoo train --resume``'s own entry point."""
    from zoo import train as zoo_train

    out, marker = tmp_path / "handed", tmp_path / "PWNED"
    overrides = [*TINY, "training.save_steps=1", "training.eval_every=1"]
    zoo_train.run(str(SMOKE), [*overrides, "training.steps=1"], output_dir=str(out))
    path = out / "checkpoint-1" / STATE
    rewrite_state(path, {**read_state(path), "note": Payload(marker)})
    assert latest_checkpoint(out).name == "checkpoint-1"  # passes the completeness and size checks
    with pytest.raises(UnsafeStateError, match=r"refused to read .*training_state\.pt.*Nothing of it was run"):
        zoo_train.run(str(SMOKE), [*overrides, "training.steps=2"], output_dir=str(out), resume=True)
    assert not marker.exists()


def test_legacy_and_other_world_size_checkpoints_resume(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A checkpoint written before per-rank states (one ``generator`` and ``torch_rng``) restores them; one
    written by two processes, resumed by one, says so and seeds this rank's generator afresh from the step."""
    config = recipe("training.steps=1", "training.eval_every=1")
    path = train(config, tmp_path / "run") / "checkpoint-1" / STATE
    state = read_state(path)
    mine = state.pop("ranks")[0]
    rewrite_state(path, {**state, "generator": mine["generator"], "torch_rng": mine["global"]["torch"]})
    run = build_run(config, tmp_path / "run")
    load_checkpoint(run, path.parent)
    assert torch.equal(run.generator.get_state(), mine["generator"])
    assert torch.equal(torch.get_rng_state(), mine["global"]["torch"])

    rewrite_state(path, {**state, "ranks": [mine, mine]})
    run = build_run(config, tmp_path / "run")
    with caplog.at_level(logging.WARNING):
        load_checkpoint(run, path.parent)
    assert "written by 2 process(es), this run has 1" in caplog.text
    fresh = torch.Generator().manual_seed(rank_seed(config.training.seed, 0, 1))
    assert torch.equal(run.generator.get_state(), fresh.get_state())
