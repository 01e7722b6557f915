"""Rollout backends of the vlm-trl engine, measured against plain ``generate`` (``hf``) in one run.

Every backend gets the same recipe (tiny Qwen2.5-VL of the chosen shape, same seed and weights,
the same prompts, group size, temperature/top-p, ``--length`` tokens per completion: generation
is forced to that length with ``min_new_tokens`` so every backend decodes the same number of
tokens) and differs only in ``rollout.backend``. Backends alternate phase by phase to cancel
drift in machine load; the first ``--warmup`` steps of a phase (compilation, vLLM start) are not
timed. Prints, per backend: completion tokens/s of generation, median GRPO step time, and the
ratios to ``hf``; on CUDA also the fraction of the weight-bandwidth floor reached (weight bytes x
decode steps / the bandwidth of a device-to-device copy measured here).

    OMP_NUM_THREADS=1 python bench/rollout.py --steps 4 --repeats 2
    python bench/rollout.py --hidden 1536 --layers 28 --length 128 --batch 32   # 1.5B shape, on a GPU
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import time
from pathlib import Path

import torch
from timing import device_name, emit, sync, time_calls, write_json
from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback

from zoo.engines.vlm.recipe import VLMRecipe
from zoo.engines.vlm.trl_engine import build_trainer


class StepTimer(TrainerCallback):
    """Wall time of every optimiser step, and of the generation inside it (device-synchronised: on CUDA an
    unsynchronised clock would stop when the host finished queueing, not when the GPU finished)."""

    def __init__(self, trainer) -> None:
        self.steps: list[float] = []
        self.generation = time_calls(trainer, "_generate")
        self._start = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        sync()
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        sync()
        self.steps.append(time.perf_counter() - self._start)


def recipe(args: argparse.Namespace, backend: str) -> VLMRecipe:
    return VLMRecipe.from_dict({
        "name": f"bench-rollout-{backend}", "engine": "vlm-trl",
        "model": {"name": "tiny:qwen2_5_vl", "tiny": {"hidden": args.hidden, "layers": args.layers, "seed": 0},
                  "dtype": args.dtype},
        "data": {"name": "synthetic-colour", "kwargs": {"n": 256, "seed": 0}},
        "rewards": [{"name": "synthetic-colour"}],
        "algorithm": {"num_generations": args.group, "max_completion_length": args.length, "temperature": 1.0,
                      "top_p": 1.0},
        "training": {"lr": 1e-6, "steps": args.warmup + args.steps, "batch_size": args.batch, "save_steps": 10**6,
                     "logging_steps": 1, "output_dir": f"{args.out}/{backend}", "seed": 0, "shuffle": False},
        "rollout": {"backend": backend},
    })


def phase(args: argparse.Namespace, backend: str) -> dict[str, float]:
    trainer = build_trainer(recipe(args, backend), Path(args.out) / backend)
    trainer.remove_callback(PrinterCallback)
    trainer.args.disable_tqdm = True
    if not trainer.use_vllm:  # vLLM takes no min length here; its completions are sampled to --length or EOS
        trainer.generation_config.min_new_tokens = args.length
    timer = StepTimer(trainer)
    trainer.add_callback(timer)
    trainer.train()
    steps, generation = timer.steps[args.warmup :], timer.generation[args.warmup :]
    weights = sum(p.numel() * p.element_size() for p in trainer.model.parameters())
    del trainer
    gc.collect()
    return {
        "step_s": statistics.median(steps), "gen_s": statistics.median(generation),
        "tokens_per_s": args.batch * args.length / statistics.median(generation), "weight_bytes": weights,
    }


def copy_bandwidth() -> float:
    """Bytes/s of a device-to-device copy of 1 GiB (read + write), the decode floor's denominator."""
    size = 2**30
    src = torch.empty(size, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(10):
        dst.copy_(src)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    del src, dst
    torch.cuda.empty_cache()  # measured before the phases: give the 2 GiB back
    return 2 * size * 10 / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="hf,static,vllm", help="comma list; unavailable ones are skipped")
    parser.add_argument("--steps", type=int, default=4, help="timed GRPO steps per phase")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps per phase (compilation)")
    parser.add_argument("--repeats", type=int, default=2, help="rounds of phases (backends alternate)")
    parser.add_argument("--batch", type=int, default=16, help="completions per step")
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--length", type=int, default=32, help="completion length (tokens)")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dtype", default="auto", help="policy dtype (auto: float32 on CPU, bfloat16 on GPU)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="runs/bench-rollout")
    parser.add_argument("--json", help="also write the report to this file (bench/gpu_suite.sh merges it)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cuda = torch.cuda.is_available()
    backends = [b for b in args.backends.split(",") if b != "vllm" or (cuda and importlib.util.find_spec("vllm"))]
    skipped = sorted(set(args.backends.split(",")) - set(backends))
    runs: dict[str, list[dict[str, float]]] = {b: [] for b in backends}
    bandwidth = copy_bandwidth() if cuda else None
    for _ in range(args.repeats):
        for backend in backends:
            runs[backend].append(phase(args, backend))
            if args.json:  # after every phase: a step killed by its timeout (a compile too long) keeps what ran
                write_json(summarise(args, runs, skipped, bandwidth), args.json)
    emit(summarise(args, runs, skipped, bandwidth), args.json)


def summarise(args: argparse.Namespace, runs: dict[str, list[dict[str, float]]], skipped: list[str],
              bandwidth: float | None) -> dict:  # fmt: skip
    """The report of the phases run so far: per backend, medians over the repeats and the ratios to ``hf``."""
    summary = {b: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for b, rs in runs.items() if rs}
    report = {
        "device": device_name(args.threads),
        "shape": {"hidden": args.hidden, "layers": args.layers}, "batch": args.batch, "group": args.group,
        "completion_tokens": args.length, "timed_steps": args.steps, "repeats": args.repeats,
        "skipped": skipped, "backends": {},
    }
    hf = summary.get("hf")
    if bandwidth:
        report["copy_bandwidth_gb_s"] = round(bandwidth / 1e9, 1)
    for backend, s in summary.items():
        row = {
            "tokens_per_s": round(s["tokens_per_s"], 1), "gen_s": round(s["gen_s"], 4), "step_s": round(s["step_s"], 4),
            "tokens_per_s_over_hf": round(s["tokens_per_s"] / hf["tokens_per_s"], 3) if hf else None,
            "step_time_over_hf": round(s["step_s"] / hf["step_s"], 3) if hf else None,
            "weight_gb": round(s["weight_bytes"] / 1e9, 3),
        }
        if bandwidth:
            row["weight_bandwidth_floor_fraction"] = round(s["weight_bytes"] * args.length / bandwidth / s["gen_s"], 4)
        report["backends"][backend] = row
    return report


if __name__ == "__main__":
    main()
