"""The zoo's own VLM loops over 2 processes, replicated (``launch: ddp``) and sharded with FSDP2 as their recipe's
``launch:`` names it (``zoo.sharding``), over gloo on the CPU, launched as users launch them.

accelerate's FSDP plugin is ignored on a CPU, so these runs test the sharding the zoo does itself: ``fully_shard`` per
decoder layer and vision block, float32 shards, gradients reduce-scattered as sums, the rollout on the gathered model.
What must hold:

* ``vlm-semi-online`` replicated (``ddp``): each rank rolls out its share of a step's episodes with its own episode
  sampler and sampling RNG (an episode's copies, its future-reward filter and its UI-S1 advantages stay whole on one
  rank) and each mini-batch's gradients are summed over the ranks, so the ranks end on bit-identical weights,
  ``metrics.csv`` has one row per step counting both ranks' turns, and a job killed with ``kill -9`` after a
  checkpoint resumes to the run that never stopped (each rank's RNG and sampler come back from the checkpoint). It
  cannot equal a one-process run: the second rank samples other episodes (the point of seeding it apart);
* ``vlm-semi-online`` sharded: a sharded run (CPU offload, the config UI-S1's 7B recipe names) equals the replicated
  run of the same 2 processes, every metric and every final weight, in float32; in bf16 compute their first step's
  loss agrees to bf16 rounding (the rollouts then part: sampling follows the logits' last bits); a sharded job killed
  with ``kill -9`` after a checkpoint resumes to the run that never stopped;
* ``vlm-sft``: 2 sharded processes with half the batch each equal one process with the whole batch (to float
  rounding), and the sharded checkpoint resumes with one process (the checkpoint holds the whole state by name);
* ``final/`` of a sharded run is a plain Hugging Face folder ``zoo.load`` reads, in float32 (the masters).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.engines.launch import (
    TINY_SFT,
    TINY_SFT_SETTINGS,
    in_this_process,
    killed_after,
    needs_torchrun,
    torchrun,
)
from tests.engines.run_dirs import assert_same_final, logged_digest, metric_rows
from zoo.distributed import weights_digest
from zoo.engines.reading import load_recipe
from zoo.engines.vlm import semi_online_engine
from zoo.recipe import RecipeError
from zoo.runs import read_state

pytestmark = needs_torchrun

AGENT = "domains/gui/recipes/ui-s1-tiny-cpu.yaml"
#: the shipped tiny agent with a hot sampler (so that groups differ and every step trains), a KL reference (sharded
#: too) and two mini-batches (old log-probabilities on the gathered policy, a ratio off 1 in the second)
AGENT_SETTINGS = [
    "model.name=checkpoints/gui-agent-tiny", "data.kwargs.n=16", "multi_turn.episodes_per_step=2",
    "algorithm.num_generations=4", "algorithm.temperature=2.5", "algorithm.beta=0.04", "multi_turn.mini_batches=2",
    "training.batch_size=8", "training.steps=3", "training.save_steps=1", "training.save_total_limit=null",
]  # fmt: skip
SFT = TINY_SFT
SFT_SETTINGS = [*TINY_SFT_SETTINGS, "training.steps=4", "training.warmup_steps=2", "training.save_total_limit=null"]


@dataclass(frozen=True)
class AgentRuns:
    """The agent's replicated (``launch: ddp``) and sharded run folders, and what the replicated job logged."""

    ddp: Path
    fsdp: Path
    ddp_log: str


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> AgentRuns:
    root = tmp_path_factory.mktemp("agent-sharded")
    ddp_log = torchrun(AGENT, root / "ddp", [*AGENT_SETTINGS, "launch=ddp"]).stderr
    done = torchrun(AGENT, root / "fsdp", [*AGENT_SETTINGS, "launch=fsdp-qwen2.5-vl-offload"])
    assert "FSDP2 over 2 ranks (launch fsdp-qwen2.5-vl-offload)" in done.stderr
    assert "offloaded to the CPU" in done.stderr
    return AgentRuns(root / "ddp", root / "fsdp", ddp_log)


def test_replicated_semi_online_writes_one_row_per_step_counting_both_ranks_turns(agent: AgentRuns) -> None:
    rows = metric_rows(agent.ddp)
    assert [r["step"] for r in rows] == ["1", "2", "3"]
    # one rank's episode a step: 4 copies of at most 4 turns (data max_steps: 4); a row over 16 counts both ranks
    assert all(float(r["turns"]) > 4 * 4 for r in rows)  # measured: 20, 24, 20


def test_replicated_ranks_end_on_bit_identical_weights_having_drawn_their_own_episodes(agent: AgentRuns) -> None:
    """Each rank hashes its weights at the end and the hashes are compared over the group; the digest logged is that
    of the weights rank 0 saved."""
    import zoo

    log = agent.ddp_log
    assert "weights identical on all 2 ranks" in log
    logged = logged_digest(log)
    assert weights_digest(zoo.load(str(agent.ddp / "final")).model).startswith(logged)
    ranks = read_state(agent.ddp / "checkpoint-2" / semi_online_engine.STATE_FILE)["ranks"]
    assert len(ranks) == 2 and ranks[0]["sampler"] != ranks[1]["sampler"]


def test_a_two_process_checkpoint_refuses_a_one_process_resume(agent: AgentRuns, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(agent.ddp, copy)
    shutil.rmtree(copy / "final")
    with pytest.raises(RecipeError, match=r"written by 2 process\(es\).*resume it with 2 \(got 1\)"):
        semi_online_engine.train(load_recipe(AGENT, [*AGENT_SETTINGS, "launch=ddp", "training.steps=4"]), copy,
                                 resume=True)  # fmt: skip


def test_sharded_semi_online_equals_the_replicated_run(agent: AgentRuns) -> None:
    rows = metric_rows(agent.fsdp)
    assert [r["step"] for r in rows] == ["1", "2", "3"] and any(float(r["loss"]) != 0 for r in rows)
    assert rows == metric_rows(agent.ddp)  # measured: equal to the last digit
    ddp, fsdp = (load_file(run / "final" / "model.safetensors") for run in (agent.ddp, agent.fsdp))
    assert ddp.keys() == fsdp.keys()
    assert max(float((ddp[k] - fsdp[k]).abs().max()) for k in ddp) < 1e-6  # measured: 0.0


def test_a_sharded_final_folder_is_a_plain_float32_checkpoint(agent: AgentRuns) -> None:
    import zoo

    model = zoo.load(str(agent.fsdp / "final")).model
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    shipped = load_file("checkpoints/gui-agent-tiny/model.safetensors")
    assert sorted(load_file(agent.fsdp / "final" / "model.safetensors")) == sorted(shipped)  # names as shipped


@pytest.mark.parametrize(("run", "launch"), [("ddp", "ddp"), ("fsdp", "fsdp-qwen2.5-vl-offload")])
def test_a_killed_job_resumes_with_two_processes_to_the_same_run(agent: AgentRuns, tmp_path: Path, run: str,
                                                                 launch: str) -> None:  # fmt: skip
    """``kill -9`` of the whole job once ``checkpoint-1`` is complete, then ``--resume`` with two processes: every
    metric and every file of ``final/`` equal the uninterrupted run's."""
    settings = [*AGENT_SETTINGS, f"launch={launch}"]
    killed = tmp_path / "killed"
    killed_after(AGENT, killed, settings, 1)
    torchrun(AGENT, killed, settings, "--resume")
    assert metric_rows(killed) == metric_rows(getattr(agent, run))
    assert_same_final(getattr(agent, run), killed)


def test_bf16_compute_sharded_and_replicated_agree_on_the_first_step(tmp_path: Path) -> None:
    settings = [*AGENT_SETTINGS, "model.dtype=bfloat16", "training.steps=1"]
    torchrun(AGENT, tmp_path / "ddp", [*settings, "launch=ddp"])
    done = torchrun(AGENT, tmp_path / "fsdp", [*settings, "launch=fsdp-qwen2.5-vl"])
    assert "compute bfloat16 over float32 shards" in done.stderr
    (ddp,), (fsdp,) = metric_rows(tmp_path / "ddp"), metric_rows(tmp_path / "fsdp")
    assert ddp["reward"] == fsdp["reward"]  # the same rollout: both sample from the same bf16 logits
    # the loss through bf16 matmuls: autocast over fp32 weights (replicated) vs FSDP2's bf16 all-gather (sharded)
    assert float(fsdp["loss"]) == pytest.approx(float(ddp["loss"]), rel=1e-2, abs=1e-4)  # measured: 1e-5 relative


@pytest.fixture(scope="module")
def sft(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sft-sharded")
    runs = {"one": root / "one", "fsdp": root / "fsdp"}
    in_this_process(SFT, runs["one"], SFT_SETTINGS)  # the reference run
    torchrun(SFT, runs["fsdp"], [*SFT_SETTINGS, "launch=fsdp-qwen2.5-vl"])
    return runs


def losses(run: Path) -> list[float]:
    with (run / "metrics.csv").open() as f:
        return [float(r["loss"]) for r in csv.DictReader(f)]


def test_two_sharded_processes_take_the_one_process_sft_step(sft: dict[str, Path]) -> None:
    assert losses(sft["fsdp"]) == pytest.approx(losses(sft["one"]), rel=1e-5)
    one, fsdp = (load_file(sft[k] / "final" / "model.safetensors") for k in ("one", "fsdp"))
    assert max(float((one[k] - fsdp[k]).abs().max()) for k in one) < 1e-5  # measured: 5e-7


def test_a_sharded_sft_checkpoint_resumes_in_one_process(sft: dict[str, Path], tmp_path: Path) -> None:
    """The checkpoint holds the whole weights and the optimiser's state by parameter name: one process takes it up."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(sft["fsdp"], copy, ignore=shutil.ignore_patterns("final", "checkpoint-4"))
    in_this_process(SFT, copy, SFT_SETTINGS, "--resume")  # one process: this test's own
    assert losses(copy) == pytest.approx(losses(sft["fsdp"]), rel=1e-5)
    a, b = (load_file(run / "final" / "model.safetensors") for run in (copy, sft["fsdp"]))
    assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-5
