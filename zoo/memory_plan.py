"""``zoo train RECIPE --plan``: the memory each GPU needs for a recipe under each launch config, before any weight
is loaded and without the network.

Parameters are counted by :mod:`zoo.model_size` (the architecture instantiated on the meta device); the launch
configs are read by :mod:`zoo.launch` with accelerate's own parser. Per GPU, with P the trained model's parameters
(T of them trained, F = P - T frozen), N processes, w the bytes of a loaded weight (the recipe's dtype), t the bytes
of a trained weight (w; fp32 for LoRA adapters, which peft keeps in fp32):

* DDP (``MULTI_GPU``): weights F·w + T·t; gradients 2·T·t (the gradient and DDP's reducer bucket, a second copy
  since accelerate keeps ``gradient_as_bucket_view`` off); AdamW 2·T·t (two moments in the parameter's dtype).
* FSDP: accelerate upcasts trained parameters to fp32 under mixed precision, so weights (F·w + 4·T)/N, gradients
  4·T/N, AdamW 8·T/N; parameter offload moves all three to the CPU. Gathered: the parameters outside the wrapped
  blocks (the root unit) plus the two largest blocks (one computing, one prefetched) in 16-bit.
* DeepSpeed ZeRO-3 (16-bit): weights 2·P/N, gradients 2·T/N, optimiser 12·T/N (fp32 master copy and two fp32
  moments); ``offload_param`` / ``offload_optimizer`` move them to the CPU. Gathered as FSDP, over the model's own
  no-split blocks.
* A reference model (a KL term with a full fine-tune): P·w, sharded like the policy where TRL prepares it (engine
  ``vlm-trl``), else one copy per process; the diffusion engine's EMA: 4·T per process.
* Activations, an estimate: per token and layer ``b·(6·h + 2·kv + m·I)`` bytes (the inputs of the norms and of
  the q/k/v, output and MLP projections, q, k, v and the attention output: h wide, k and v kv wide, and m tensors
  of the MLP's width I: 4 for a SwiGLU MLP, 2 for a GELU one; b = 2 under 16-bit compute; Korthikanti et al.
  2022, arXiv:2205.05198 §4.1 counted for flash attention and no dropout), times tokens and layers; with gradient
  checkpointing each layer keeps only its input (b·h per token) and one layer is recomputed at a time. A VLM adds
  its logits, completion tokens × vocabulary × b × 2 (the logits and the temperature-scaled copy TRL's log-prob
  pass takes, ``GRPOTrainer._get_per_token_logps_and_entropies``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from zoo.launch import LaunchSettings, list_configs, read
from zoo.workload import ENGINES, PlanError, Workload, diffusion_workload, vlm_workload

GIB = 2**30
#: What "fits" means: an 80 GB GPU (A100/H100 80GB), counted in decimal gigabytes as sold: 74.5 GiB, which
#: leaves the CUDA context and allocator fragmentation some room out of the 79.6 GiB CUDA reports.
GPU_BYTES = 80 * 10**9


@dataclass(frozen=True)
class Row:
    """One launch config's memory per GPU, in bytes."""

    config: str
    path: str
    strategy: str
    processes: int
    named: bool
    """The recipe names this config (``launch:``)."""
    parts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    @property
    def fits(self) -> bool:
        return self.total <= GPU_BYTES


def gathered(work: Workload, units: tuple[str, ...], width: int) -> int:
    """Bytes of the parameters a sharded run holds whole at once: what lies outside the shard units (the root
    unit: embeddings, output head, final norm) and the two largest units (one computing, one prefetched)."""
    missing = [u for u in units if u not in work.blocks]
    if missing:
        raise PlanError(f"it wraps {', '.join(missing)}, which {work.model.split(' ')[0]} does not contain")
    inside = sum(work.blocks[u][1] for u in units)
    largest = max((work.blocks[u][0] for u in units), default=0)
    return (work.params - inside + 2 * largest) * width


def row(work: Workload, launch: LaunchSettings, named: bool) -> Row:
    """``work``'s memory per GPU under ``launch``."""
    n, kind = launch.num_processes, launch.distributed_type
    t, frozen = work.trainable, work.params + work.adapter - work.trainable
    width = 2 if launch.mixed_precision in ("bf16", "fp16") or work.weight_bytes == 2 else 4
    reference = work.reference * work.reference_bytes
    if kind == "MULTI_GPU":
        tb = work.trained_bytes
        parts = {"params": frozen * work.weight_bytes + t * tb, "grads": 2 * t * tb, "optim": 2 * t * tb, "gather": 0}
    elif kind == "FSDP":
        tb = 4 if launch.mixed_precision != "no" else work.trained_bytes
        on_gpu = 0 if launch.offload_params else 1
        parts = {"params": on_gpu * (frozen * work.weight_bytes + t * tb) // n, "grads": on_gpu * t * tb // n,
                 "optim": on_gpu * 2 * t * tb // n, "gather": gathered(work, launch.wrap_classes, 2)}  # fmt: skip
        reference = reference * on_gpu // n if work.reference_sharded else reference
    elif kind == "DEEPSPEED" and launch.zero_stage == 3:
        width16 = 2 if launch.mixed_precision in ("bf16", "fp16") else 4
        master = 4 if width16 == 2 else 0
        parts = {"params": 0 if launch.offload_params else (work.params + work.adapter) * width16 // n,
                 "grads": 0 if launch.offload_optimizer else t * width16 // n,
                 "optim": 0 if launch.offload_optimizer else (master + 8) * t // n,
                 "gather": gathered(work, work.no_split, width16)}  # fmt: skip
        reference = work.reference * width16 // n if work.reference_sharded else reference
    else:
        raise PlanError(f"{launch.name}: the plan covers DDP, FSDP and DeepSpeed ZeRO-3, not {kind} "
                        f"(zero stage {launch.zero_stage})")  # fmt: skip
    checkpointing = work.checkpointing or launch.activation_checkpointing
    activations = sum(s.bytes(width, checkpointing) for s in work.stacks) + work.logits * 2 * width
    parts |= {"reference": reference, "ema": work.ema * 4, "frozen": work.frozen_bytes, "activations": activations}
    strategy = {"MULTI_GPU": "DDP", "FSDP": "FSDP" + (" + offload" if launch.offload_params else ""),
                "DEEPSPEED": "ZeRO-3" + (" + offload" if launch.offload_params else "")}[kind]  # fmt: skip
    return Row(launch.name, str(launch.path), strategy, n, named, parts)


def workload(recipe: Any) -> Workload:
    """Size ``recipe``'s models offline; :class:`PlanError` for what cannot be planned."""
    if recipe.engine not in ENGINES:
        raise PlanError(f"engine {recipe.engine!r} is not launched with accelerate (the plan covers "
                        f"{', '.join(ENGINES)}): {recipe.name} runs in one process or on its own cluster launcher")  # fmt: skip
    if recipe.model.name.startswith("tiny:"):
        raise PlanError(f"model {recipe.model.name!r} is a tiny CPU model built by the run itself; nothing to plan")
    return diffusion_workload(recipe) if recipe.engine == "diffusion" else vlm_workload(recipe)


def plan(recipe: Any) -> tuple[Workload, list[Row], dict[str, str]]:
    """The workload, one :class:`Row` per shipped launch config that applies, and why the others do not."""
    work = workload(recipe)
    rows, skipped = [], {}
    for name in list_configs():
        try:
            rows.append(row(work, read(name), named=name == recipe.launch))
        except PlanError as err:
            skipped[name] = str(err)
    return work, rows, skipped


def render(work: Workload, rows: list[Row], skipped: dict[str, str]) -> str:
    """The plan as a readable table with its assumptions."""
    b = 1e9
    lines = [f"{work.recipe} ({work.engine}): {work.model}",
             f"  {work.params / b:.2f} B parameters, {work.trainable / b:.3f} B trained"
             + (f" (LoRA adds {work.adapter / b:.3f} B)" if work.adapter else "")
             + f"; weights {work.weight_bytes} bytes, trained weights {work.trained_bytes} bytes",
             *(["  frozen on every GPU: " + ", ".join(f"{k} {v / b:.2f} B" for k, v in work.frozen.items())]
               if work.frozen else []),
             *(f"  activations: {s.name}, {s.layers} layers x {s.tokens} tokens per micro-batch" for s in work.stacks),
             f"  gradient checkpointing: {'on' if work.checkpointing else 'off (on where the config says)'}",
             *(f"  assumed {key}: {value}" for key, value in work.assumptions.items()),
             ""]  # fmt: skip
    columns = {"params": "params", "grads": "grads", "optim": "optim", "reference": "ref", "ema": "ema",
               "frozen": "frozen", "gather": "gather", "activations": "activ"}  # fmt: skip
    lines.append(f"{'GiB per GPU':<26}{'strategy':<20}{'N':>3}" + "".join(f"{c:>7}" for c in columns.values())
                 + f"{'total':>7}  fits 80 GB")  # fmt: skip
    for r in rows:
        cells = "".join(f"{r.parts[c] / GIB:>7.1f}" for c in columns)
        lines.append(f"{('* ' if r.named else '  ') + r.config:<26}{r.strategy:<20}{r.processes:>3}{cells}"
                     f"{r.total / GIB:>7.1f}  {'yes' if r.fits else 'no'}")  # fmt: skip
    lines += [f"  {name}: not applicable, {why}" for name, why in skipped.items()]
    named = [r for r in rows if r.named]
    if named and not named[0].fits and named[0].parts["activations"] > named[0].total / 2:
        lines.append("  activations dominate: lower the micro-batch (training.batch_size or train_batch_size) and raise "
                     "training.grad_accum by the same factor; an optimiser step then sees the same samples")  # fmt: skip
    lines += ["", "* the recipe's launch config: accelerate launch --config_file "
              f"{named[0].path} -m zoo.cli train RECIPE.yaml" if named else "(the recipe names no launch config)",
              "Activations are an estimate (formula: zoo/memory_plan.py); the rest follows from the parameter counts."]  # fmt: skip
    return "\n".join(lines)


def to_json(work: Workload, rows: list[Row], skipped: dict[str, str]) -> str:
    """The plan as JSON (bytes and GiB per part, per config)."""
    data = asdict(work)
    data.pop("blocks")
    data["configs"] = [{"name": r.config, "path": r.path, "strategy": r.strategy, "num_processes": r.processes,
                        "named_by_recipe": r.named, "bytes": r.parts, "total_bytes": r.total,
                        "total_gib": round(r.total / GIB, 2), "fits_80gb": r.fits} for r in rows]  # fmt: skip
    data["not_applicable"] = skipped
    return json.dumps(data, indent=2)
