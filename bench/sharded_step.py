"""Sharded (FSDP2) mixed-precision steps of the zoo's own loops: seconds, peak memory, the dtype of each tensor kind.

Issue 52 asks that a recipe's ``launch:`` FSDP config be the sharding its run does, with float32 master weights under
bf16 compute (``zoo/sharding.py``, ``zoo/precision.py``). This bench runs the engines' own pieces under a launcher and
reports, per launch config, what a GPU holds and computes in after a step:

* ``semi-online``: UI-S1's semi-online RL (``vlm-semi-online``): ``SemiOnlineLearner`` (which shards the policy and the
  KL reference), the engine's episode sampler, rewards, ``collect`` (rollout under ``learner.sampling``) and
  ``learner.update``, on ``domains/gui/recipes/ui-s1-smoke.yaml`` with ``--set``-style overrides, once per launch
  config: ``fsdp-qwen2.5-vl``, then ``fsdp-qwen2.5-vl-offload`` (shards, gradients and the AdamW step in CPU memory,
  as UI-S1's authors run their 7B actor). Seconds of rollout and update per step, each separately;
* ``diffusion``: Flow-GRPO rounds of the ``diffusion`` engine at SD3.5-Medium's shape, every weight trained (no
  LoRA), under an FSDP launch config (``fsdp-sd3``): ``bench/diffusion_step.py``'s random model and recipe, the
  engine's ``build_run`` and ``train_round``, the compute dtype the launch config's ``mixed_precision`` (set as
  ``accelerate launch --config_file`` sets it). A denoiser the engine leaves whole (it does not shard that launch, or
  not with this many processes) is reported ``skipped`` with the reason, and the suite records the step as skipped.

Both report, for the step's trained parameters, their gradients (as the optimiser steps them), AdamW's moments and
the outputs of every ``nn.Linear`` (the compute dtype, in training forwards and in forwards without gradients), a
dict ``dtype -> count`` of tensors (or calls), and where the shards live (``devices``); peak memory is CUDA's
``max_memory_allocated`` from the first step on (the weights already built and sharded: ``after_build_gib``), on a CPU
the rank-0 process's peak RSS so far.

Launch it as a run is launched: one process per GPU under ``torchrun``. One process still shards, over a group of
one (``DataParallel.prepare``), so on one GPU the mixed-precision policy and the offload apply:

    torchrun --standalone --nproc_per_node 1 bench/sharded_step.py semi-online --shape 1.5b   # one GPU
    torchrun --standalone --nproc_per_node 1 bench/sharded_step.py diffusion
    torchrun --standalone --nproc_per_node 2 bench/sharded_step.py semi-online --steps 1      # CPU, gloo
    ACCELERATE_USE_CPU=1 torchrun --standalone --nproc_per_node 2 bench/sharded_step.py diffusion --shape tiny \
        --rounds 1 --group 2 --micro-batch 2    # CPU: accelerate joins the processes into one group when told

``--shape 1.5b``: Qwen2.5-VL with Qwen2.5-1.5B's language model (hidden 1536, 28 layers, intermediate 8960, 12 heads /
2 KV heads, vocabulary 151,936, tied embeddings) and Qwen2.5-VL's vision tower (32 blocks of 1280, 16 heads), random
weights from a config, and UI-S1's per-GPU work (8 episodes x 8 copies on 8 GPUs: 1 x 8 here; micro-batches of 8
turns, 4 mini-batches, KL to the reference, gradient checkpointing, the vision tower trained), its answers cut to 64
tokens (UI-S1: 512; a random policy never stops early) and its screens to 448 px (256 image tokens), so that both
configs fit a GPU step of the suite. ``zoo.tiny.build_tiny_vlm`` takes the widths, layers and vision width; the rest
(intermediate size, heads, vocabulary, vision depth) is set on its config here (:func:`shaped_model`).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import resource
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any
from unittest import mock

import torch
from timing import device_name, emit, sync, write_json

ROOT = Path(__file__).resolve().parents[1]
SEMI_ONLINE_RECIPE = ROOT / "domains" / "gui" / "recipes" / "ui-s1-smoke.yaml"
SEMI_ONLINE_LAUNCHES = ("fsdp-qwen2.5-vl", "fsdp-qwen2.5-vl-offload")
"""The quick config first: a step cut by its time limit keeps the numbers of the configs before (the report is
rewritten after each)."""

SHARDED = ("model.dtype=bfloat16", "algorithm.beta=0.0001", "training.freeze_vision=false",
           "training.gradient_checkpointing=true")  # fmt: skip
"""UI-S1's run in every shape (ui-s1-7b.yaml): bf16 compute, a KL reference (sharded like the actor), the vision tower
trained, activations recomputed."""
SHAPES: dict[str, dict[str, Any]] = {
    "smoke": {"overrides": ("multi_turn.mini_batches=2",), "text": None},  # the recipe's tiny model; 2 AdamW steps
    "1.5b": {
        "overrides": (
            "model.tiny={hidden: 1536, layers: 28, vision_hidden: 1280}", "model.max_pixels=200704",
            "data.kwargs={n: 8, seed: 0, size: 448, min_steps: 2, max_steps: 3}", "training.use_cpu=false",
            "multi_turn.episodes_per_step=1", "algorithm.num_generations=8", "training.batch_size=8",
            "multi_turn.mini_batches=4", "algorithm.max_completion_length=64",
        ),
        # Qwen/Qwen2.5-1.5B-Instruct config.json; mrope_section: Qwen2.5-VL's, for its head_dim 128
        "text": {"intermediate_size": 8960, "num_attention_heads": 12, "num_key_value_heads": 2, "vocab_size": 151936},
        "mrope_section": [16, 24, 24],
        # Qwen/Qwen2.5-VL-3B-Instruct (and 7B) config.json vision_config
        "vision": {"depth": 32, "intermediate_size": 3420, "num_heads": 16, "window_size": 112,
                   "fullatt_block_indexes": [7, 15, 23, 31]},
    },
}  # fmt: skip


# --- what a step holds and computes in ------------------------------------------------------
def dtype_name(dtype: torch.dtype) -> str:
    """``float32``, ``bfloat16``: the names recipes and :class:`zoo.precision.Precision` use."""
    return str(dtype).removeprefix("torch.")


def counts(tensors: Iterable[torch.Tensor], key: Callable[[torch.Tensor], str]) -> dict[str, int]:
    """How many of ``tensors`` fall under each ``key`` (a dtype or device name), sorted by key."""
    return dict(sorted(Counter(key(t) for t in tensors).items()))


def device_of(tensor: torch.Tensor) -> str:
    """Where this rank's rows of ``tensor`` live (an FSDP2 shard's local tensor: ``cpu`` when offloaded)."""
    from zoo.sharding import local_tensor

    return local_tensor(tensor).device.type


def dtypes_and_devices(tensors: Sequence[torch.Tensor]) -> tuple[dict[str, int], dict[str, int]]:
    """``(dtype -> count, device -> count)`` of ``tensors``: what precision they are held in, and where."""
    return counts(tensors, lambda t: dtype_name(t.dtype)), counts(tensors, device_of)


class Probe:
    """Records, while attached, the dtype of every ``nn.Linear`` output of ``model`` (training forwards and forwards
    without gradients apart: FSDP2's policy or autocast decides them) and of the gradients ``optimizer`` steps (read
    in a pre-step hook, since the loops free them right after the step; counted there, not kept, so that the peak
    memory is the loop's own)."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
        self.compute: dict[str, Counter[str]] = {"train": Counter(), "no_grad": Counter()}
        self.grads: tuple[dict[str, int], dict[str, int]] = ({}, {})
        self.handles = [m.register_forward_hook(self._forward) for m in model.modules()
                        if isinstance(m, torch.nn.Linear)]  # fmt: skip
        self.handles.append(optimizer.register_step_pre_hook(self._step))

    def _forward(self, module: torch.nn.Module, inputs: Any, output: torch.Tensor) -> None:
        self.compute["train" if torch.is_grad_enabled() else "no_grad"][dtype_name(output.dtype)] += 1

    def _step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self.grads = dtypes_and_devices([p.grad for group in optimizer.param_groups for p in group["params"]
                                         if p.grad is not None])  # fmt: skip

    def report(self, params: Sequence[torch.Tensor], optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """The dtypes (and devices) of ``params``, the last step's gradients and AdamW's moments, and the compute's."""
        moments = [t for state in optimizer.state.values() for key, t in state.items()
                   if key != "step" and torch.is_tensor(t)]  # fmt: skip
        kinds = {"params": dtypes_and_devices(params), "grads": self.grads,
                 "optimizer_state": dtypes_and_devices(moments)}  # fmt: skip
        out: dict[str, Any] = {kind: dtypes for kind, (dtypes, _) in kinds.items()}
        out["compute"] = {mode: dict(sorted(seen.items())) for mode, seen in self.compute.items()}
        out["devices"] = {kind: devices for kind, (_, devices) in kinds.items()}
        return out

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()


def start_memory() -> dict[str, float]:
    """Memory held before the timed steps (CUDA: the built, sharded weights), and the peak counter reset."""
    if not torch.cuda.is_available():
        return {}
    sync()
    torch.cuda.reset_peak_memory_stats()
    return {"after_build_gib": round(torch.cuda.memory_allocated() / 2**30, 2)}


def peak_memory() -> dict[str, float]:
    """CUDA's peak since :func:`start_memory`, or this process's peak RSS so far on a CPU."""
    if torch.cuda.is_available():
        return {"peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}
    return {"peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}


def free_device() -> None:
    """Give back what the last config held (its sharded model and optimiser are unreferenced by now)."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def params_m(params: Iterable[torch.Tensor]) -> float:
    """Millions of elements (of an FSDP2 shard: the whole parameter's)."""
    return round(sum(p.numel() for p in params) / 1e6, 2)


def median_later(values: list[float]) -> float:
    """The median of the rounds after the first (the first pays kernel warm-up and the allocator's growth)."""
    return round(statistics.median(values[1:] or values), 3)


# --- semi-online --------------------------------------------------------------------------------
@contextlib.contextmanager
def shaped_model(shape: dict[str, Any], layers: int | None, device: torch.device) -> Iterator[None]:
    """``zoo.tiny.build_tiny_vlm`` building ``shape`` on ``device`` (random init of 2B parameters takes seconds there, a
    minute on a CPU): its config gets the widths ``build_tiny_vlm`` cannot take; ``layers`` cuts the language model
    and the vision tower to that many blocks at the same widths (a CPU check of the shape)."""
    from zoo import tiny

    build_tiny_vlm, build_config = tiny.build_tiny_vlm, tiny.build_config

    def shaped_config(*args: Any, **kwargs: Any) -> Any:
        config = build_config(*args, **kwargs)
        text, vision = config.text_config, config.vision_config
        for key, value in {**shape["text"], **({"num_hidden_layers": layers} if layers else {})}.items():
            setattr(text, key, value)
        text.rope_parameters["mrope_section"] = list(shape["mrope_section"])
        for key, value in shape["vision"].items():
            setattr(vision, key, value)
        if layers:
            vision.depth = layers
            vision.fullatt_block_indexes = [i for i in vision.fullatt_block_indexes if i < layers]
        return config

    def on_device(*args: Any, **kwargs: Any) -> Any:
        with torch.device(device), mock.patch.object(tiny, "build_config", shaped_config):
            return build_tiny_vlm(*args, **kwargs)

    with mock.patch.object(tiny, "build_tiny_vlm", on_device):
        yield


def semi_online_parts(recipe: Any, parallel: Any) -> tuple[Any, Any, Callable[[Sequence[Sequence[Any]]], list[Any]]]:
    """``(learner, episode sampler, roll)`` of a fresh run, built as the engine builds them
    (``zoo.engines.vlm.semi_online_engine.build``)."""
    from zoo.engines.vlm.semi_online_engine import build

    learner, sampler, roll, _ = build(recipe, parallel)
    return learner, sampler, roll


def semi_online_step(learner: Any, sampler: Any, roll: Callable[..., list[Any]], episodes: int) -> dict[str, Any]:
    """One step as the engine's loop takes it: ``collect`` (rollouts until ``episodes`` are kept), then
    ``learner.update``; each timed on its own (device-synchronised)."""
    from zoo.engines.vlm.semi_online_engine import collect

    sync()
    start = time.perf_counter()
    batch, generated, gen_batches = collect(roll, sampler, learner, episodes)
    sync()
    rolled = time.perf_counter()
    metrics = learner.update(batch, generated)
    sync()
    return {"rollout_s": round(rolled - start, 3), "update_s": round(time.perf_counter() - rolled, 3),
            "turns": metrics["turns"], "optimizer_steps": metrics["optimizer_steps"], "gen_batches": gen_batches}


def semi_online_config(recipe: Any, parallel: Any, steps: int, shape: dict[str, Any],
                       layers: int | None) -> dict[str, Any]:  # fmt: skip
    """``steps`` semi-online steps of ``recipe`` (rollout, then update), timed apart, then what the step holds."""
    start = time.perf_counter()
    with shaped_model(shape, layers, parallel.device) if shape["text"] else contextlib.nullcontext():
        learner, sampler, roll = semi_online_parts(recipe, parallel)
    report: dict[str, Any] = {"sharded": parallel.sharded, "precision": asdict(learner.precision),
                              "params_m": params_m(learner.model.parameters()),
                              "trained_params_m": params_m(learner.params),
                              "build_s": round(time.perf_counter() - start, 2), **start_memory()}  # fmt: skip
    report["plan"] = planned(recipe, learner.model, parallel.world)
    probe, episodes = Probe(learner.model, learner.optimizer), recipe.multi_turn.episodes_per_step // parallel.world
    rows = [semi_online_step(learner, sampler, roll, episodes) for _ in range(steps)]
    report.update(steps=rows, **{key: median_later([r[key] for r in rows]) for key in ("rollout_s", "update_s")})
    report["seconds_per_step"] = round(report["rollout_s"] + report["update_s"], 3)
    report.update(peak_memory(), dtypes=probe.report(learner.params, learner.optimizer))
    probe.close()
    return report


def planned(recipe: Any, model: Any, world: int) -> dict[str, Any]:
    """``zoo train --plan``'s row for this very run (its launch config over ``world`` processes, at its batch, pixel
    limits and completion length), to set beside CUDA's peak: the model's config is saved to a folder the plan reads
    (it builds the architecture on the meta device), the rest of the recipe is the run's own. The held parts (params,
    grads, optim, ref) are exact (``tests/zoo/test_memory_plan_tensors.py``); copies and activations are estimates,
    which is what the comparison measures."""
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as folder:
        model.config.save_pretrained(folder)
        return plan_row(replace(recipe, model=replace(recipe.model, name=folder, tiny={})), world)


def planned_pipeline(recipe: Any, denoiser: Any, vae: Any, world: int) -> dict[str, Any]:
    """:func:`planned` for the diffusion engine: the plan reads a pipeline folder (``model_index.json`` and each
    component's config), so the bench's random denoiser and VAE are written as one; its hashed prompt encoder has no
    weights, so the plan counts no text encoder, as the run holds none."""
    from torch.distributed.fsdp import FSDPModule

    with tempfile.TemporaryDirectory(prefix="bench-plan-") as folder:
        index = {"_class_name": "StableDiffusion3Pipeline"}
        for name, module in (("transformer", denoiser), ("vae", vae)):
            # the class the module was built as: FSDP2's fully_shard swaps it for a subclass named FSDP<class>
            built = next(c for c in type(module).__mro__ if not issubclass(c, FSDPModule))
            (Path(folder) / name).mkdir()
            (Path(folder) / name / "config.json").write_text(json.dumps({**module.config, "_class_name": built.__name__}))
            index[name] = ["diffusers", built.__name__]
        (Path(folder) / "model_index.json").write_text(json.dumps(index))
        return plan_row(replace(recipe, model=replace(recipe.model, name=folder)), world)


def plan_row(recipe: Any, world: int) -> dict[str, Any]:
    """The plan's row for ``recipe``'s own launch config over ``world`` processes, in GiB, or why there is none."""
    from zoo import memory_plan

    _, rows, skipped = memory_plan.plan(recipe, processes=world)
    row = next((r for r in rows if r.config == recipe.launch), None)
    if row is None:
        return {"skipped": skipped.get(recipe.launch, "no row for the launch config")}
    gib = lambda n: round(n / 2**30, 3)  # noqa: E731
    return {"total_gib": gib(row.total), "total_bytes": row.total, "parts_gib": {key: gib(value) for key, value in row.parts.items()},
            "fits_80gb": row.fits}  # fmt: skip


def semi_online(args: argparse.Namespace) -> dict[str, Any]:
    """Every launch config of ``args.launches`` in turn, in one process group; the report is rewritten after each."""
    from zoo.distributed import DataParallel
    from zoo.engines.reading import load_recipe

    shape = SHAPES[args.shape]
    overrides = [*SHARDED, *shape["overrides"], *args.set]
    report: dict[str, Any] = {"bench": "semi-online", "device": device_name(torch.get_num_threads()),
                              "shape": args.shape, "layers": args.layers, "overrides": overrides,
                              "recipe": str(SEMI_ONLINE_RECIPE.relative_to(ROOT)), "configs": {}}  # fmt: skip
    parallel = DataParallel(cuda=torch.cuda.is_available())
    report["world"] = parallel.world
    try:
        for launch in args.launches.split(","):
            recipe = load_recipe(SEMI_ONLINE_RECIPE, [*overrides, f"launch={launch}"])
            config = semi_online_config(recipe, parallel, args.steps, shape, args.layers)
            report["configs"][launch] = {"offload": "offload" in launch, **config}
            free_device()
            if parallel.is_main and args.json:  # what is measured survives a later config's failure
                write_json(report, args.json)
    finally:
        parallel.close()
    return report


# --- diffusion ----------------------------------------------------------------------------------
def diffusion(args: argparse.Namespace) -> dict[str, Any]:
    """Flow-GRPO rounds of a full fine-tune under ``args.launch`` (the engine's own sharding), or ``skipped``."""
    import diffusion_step

    from zoo.launch import read

    # what `accelerate launch --config_file` sets from the config; the engine's compute dtype is accelerate's
    os.environ.setdefault("ACCELERATE_MIXED_PRECISION", read(args.launch).mixed_precision)
    with tempfile.TemporaryDirectory(prefix="bench-sharded-diffusion-") as scratch:
        # float32: the trained denoiser's master weights (bf16 compute is the launch's); no autocast of the bench's
        spec = argparse.Namespace(shape=args.shape, recipe=diffusion_step.RECIPE, dtype="float32", prompts=1,
                                  group=args.group, micro_batch=args.micro_batch, rounds=args.rounds, layers=None,
                                  resolution=None, out=scratch)  # fmt: skip
        # every weight trained (no LoRA), under the launch config, bf16 frozen parts
        recipe = diffusion_step.bench_recipe(spec, ("training.lora.enabled=false", f"launch={args.launch}",
                                                    "model.dtype=bfloat16"))  # fmt: skip
        start = time.perf_counter()
        run = diffusion_step.build(spec, recipe)
        report: dict[str, Any] = {"bench": "diffusion", "device": device_name(torch.get_num_threads()),
                                  "shape": args.shape, "launch": args.launch, "lora": False,
                                  "world": run.accelerator.num_processes, "sharded": run.sharded}  # fmt: skip
        if not report["sharded"]:  # a step that measures nothing sharded is skipped, saying why
            report["skipped"] = (f"the diffusion engine left the denoiser whole under launch: {args.launch} with "
                                 f"{report['world']} process(es) (zoo/engines/diffusion/setup.py build_run: "
                                 "Run.sharded is False); nothing sharded to measure")  # fmt: skip
            return report
        denoiser = run.accelerator.unwrap_model(run.model.denoiser)
        report["plan"] = planned_pipeline(recipe, denoiser, run.model.vae, report["world"])
        report.update(denoiser_params_m=params_m(denoiser.parameters()), trainable_params_m=params_m(run.trainable),
                      images_per_round=args.group, micro_batch=recipe.training.train_batch_size,
                      build_s=round(time.perf_counter() - start, 2), **start_memory())  # fmt: skip
        probe = Probe(denoiser, run.optimizer)
        timed = diffusion_step.rounds(spec, run)
        report.update(rounds=timed, seconds_per_round=median_later([r["seconds"] for r in timed]), **peak_memory(),
                      dtypes=probe.report(run.trainable, run.optimizer))  # fmt: skip
        probe.close()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads per process (default torch's: all cores, which an offloaded AdamW "
                             "step uses; torchrun sets 1 per process when it starts several)")
    parser.add_argument("--json", help="also write the report here (rank 0; bench/gpu_suite.sh merges it)")
    sub = parser.add_subparsers(dest="bench", required=True)
    semi = sub.add_parser("semi-online", help="UI-S1 semi-online steps per FSDP launch config")
    semi.add_argument("--shape", choices=sorted(SHAPES), default="smoke")
    semi.add_argument("--layers", type=int, default=None, help="fewer blocks at the shape's widths (CPU checks)")
    semi.add_argument("--launches", default=",".join(SEMI_ONLINE_LAUNCHES), help="comma list of launch configs")
    semi.add_argument("--steps", type=int, default=2, help="steps per config; the first is warm-up when there are more")
    semi.add_argument("--set", action="append", default=[], help="one more recipe override KEY=VALUE (repeatable)")
    diff = sub.add_parser("diffusion", help="Flow-GRPO rounds of a sharded full fine-tune")
    diff.add_argument("--shape", default="sd3.5-medium", help="bench/diffusion_step.py's shapes: sd3.5-medium, tiny")
    diff.add_argument("--launch", default="fsdp-sd3", help="the FSDP launch config the recipe names")
    diff.add_argument("--rounds", type=int, default=2, help="rounds; the first is warm-up when there are more")
    diff.add_argument("--group", type=int, default=12, help="images per round (one prompt)")
    diff.add_argument("--micro-batch", type=int, default=None, help="images per forward/backward (recipe: 9)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    report = semi_online(args) if args.bench == "semi-online" else diffusion(args)
    if int(os.environ.get("RANK", "0") or 0) == 0:
        emit(report, args.json)


if __name__ == "__main__":
    main()
