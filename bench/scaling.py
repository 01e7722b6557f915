"""Training samples per second of each engine with 1 process and with N (``torchrun``), and the ratio.

Each engine's smoke recipe is launched as a user launches it: ``python -m zoo.cli train`` for one process and
``torchrun --standalone --nproc_per_node N -m zoo.cli train`` for N. A launch pays its start-up (imports, the
tiny model's tokenizer, the process group: tens of seconds, varying by seconds) before its first step, so the
clock is read from the run itself: the run writes checkpoints at steps ``S``, ``2S`` and ``3S`` (``--steps S``),
and the rate is over the steps between the first and the last completion marker's time:

    samples/s = samples per step x 2S / (t(checkpoint-3S) - t(checkpoint-S))

(one checkpoint write, the same for every layout, falls inside the window.)

"Samples" are what one optimiser step of the engine consumes over all processes: answers for ``vlm-sft``
(``training.batch_size`` is the global batch), completions for ``vlm-trl`` (``training.batch_size`` per
process) and images for ``diffusion`` (prompts x group size per process). The baseline is the one-process run
of the same engine, measured in the same invocation; the ratio is N-process over 1-process samples/s (N
would be perfect scaling; the per-step exchange of gradients and rewards is what it costs).

    python bench/scaling.py                       # every engine, 1 vs 2 processes, CPU (gloo)
    python bench/scaling.py --engines vlm-sft --nproc 8 --threads 1    # on a GPU node: one process per GPU

On the CPU each process gets ``--threads`` threads, so 2 processes x 1 thread compare with 1 process x 1 thread:
the machine must have N free cores for the ratio to mean anything.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from zoo.runs import COMPLETE_MARKER

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Workload:
    """One engine's smoke run: its recipe, the settings that make it small, and samples per step for N processes."""

    recipe: str
    settings: tuple[str, ...]
    per_process: int
    """Samples one process handles per step (``0``: the step's batch is global and split, see ``global_batch``)."""
    global_batch: int = 0

    def samples_per_step(self, nproc: int) -> int:
        return self.global_batch or self.per_process * nproc


WORKLOADS = {
    "vlm-sft": Workload(
        "domains/gui/recipes/gui-g1-tiny-sft.yaml",
        ("data.corpus_kwargs.n=16", "training.batch_size=32", "training.logging_steps=1000"),
        per_process=0, global_batch=32,
    ),
    "vlm-trl": Workload(
        "domains/gui/recipes/gui-g1-tiny-cpu.yaml",
        ("data.kwargs.n=64", "algorithm.num_generations=4", "training.batch_size=8", "training.logging_steps=1000"),
        per_process=8,
    ),
    "diffusion": Workload(
        "tests/engines/diffusion_smoke.yaml",
        ("algorithm.group_size=4", "algorithm.num_steps=3", "training.prompts_per_step=1", "training.train_batch_size=4",
         "training.eval_every=1000", "training.num_threads=1"),
        per_process=4,
    ),
}  # fmt: skip


def launch(workload: Workload, every: int, nproc: int, threads: int, out: Path) -> float:
    """Samples per second of one ``zoo train`` launch of ``workload`` on ``nproc`` processes, between its
    checkpoints at steps ``every`` and ``3 * every``."""
    settings = [*workload.settings, f"training.steps={3 * every}", f"training.save_steps={every}",
                "training.save_total_limit=null"]  # fmt: skip
    args = ["-m", "zoo.cli", "train", workload.recipe, *(a for s in settings for a in ("--set", s)), "--output-dir", str(out)]
    command = [sys.executable, *args] if nproc == 1 else [
        str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc_per_node", str(nproc), *args]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    first, last = ((out / f"checkpoint-{step}" / COMPLETE_MARKER).stat().st_mtime for step in (every, 3 * every))
    return workload.samples_per_step(nproc) * 2 * every / (last - first)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--engines", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--nproc", type=int, default=2, help="processes of the data-parallel layout (default 2)")
    parser.add_argument("--steps", type=int, default=10, help="S: checkpoints at S, 2S, 3S; timed from S to 3S")
    parser.add_argument("--threads", type=int, default=1, help="OMP threads per process (default 1)")
    parser.add_argument("--json", default=None, help="also write the report to this file")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be >= 1")
    if not os.environ.get("CUDA_VISIBLE_DEVICES") and not _has_cuda():
        os.environ["ACCELERATE_USE_CPU"] = "1"
    rows = []
    print(f"{'engine':<10} {'1 proc samples/s':>17} {f'{args.nproc} proc samples/s':>17} {'ratio':>6}")
    for name in args.engines:
        with tempfile.TemporaryDirectory(prefix=f"scaling-{name}-") as scratch:
            one = launch(WORKLOADS[name], args.steps, 1, args.threads, Path(scratch) / "one")
            many = launch(WORKLOADS[name], args.steps, args.nproc, args.threads, Path(scratch) / "many")
        rows.append({"engine": name, "one": one, "many": many, "ratio": many / one})
        print(f"{name:<10} {one:>17.2f} {many:>17.2f} {many / one:>6.2f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"nproc": args.nproc, "threads": args.threads, "rows": rows}, indent=2))
    return 0


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


if __name__ == "__main__":
    sys.exit(main())
