"""``zoo train RECIPE --plan``: the memory each GPU needs for a recipe under each launch config, before any weight
is loaded and without the network.

The plan prices what the engine will do, read from the functions the engine itself calls, so the two cannot
disagree (:func:`placement`): how it holds the model under a launch config is ``ENGINES.get(engine).sharding(config)``
(:class:`zoo.sharding.Sharding`, with the recipe: :meth:`zoo.engines.Engine.sharding`), and what each tensor is
held in is the :class:`zoo.precision.Precision` it trains with (``policy_precision`` and ``load_dtype`` for the VLM
engines, ``run_precision`` for the diffusion engine, whose compute dtype is the launch config's). A config the engine
refuses is a row saying why, never a number. What else an engine holds (its KL reference, gathered sampling, DDP's
buckets) is :attr:`zoo.engines.Engine.holds`. Parameters are counted by :mod:`zoo.model_size` (the architecture on the meta
device). Per GPU, with N processes, T the parameters the optimiser steps (LoRA's adapters, A of them, for LoRA), F
the model's weights nothing steps (a frozen vision tower, a LoRA base), P the model's parameters, R the KL reference's
(P, or 0 without one), and bytes per element t of a trained weight (4: float32 masters and adapters; the compute
dtype's under ``training.fp32_master_weights: false``), l of the dtype the engine loads the model in (frozen weights
stay in it), r of the reference (the frozen dtype, ``model.dtype``, for ``vlm-semi-online``; l for TRL and the
diffusion engine) and c of the compute dtype; X/N is rank 0's share of X split over N:

* **zoo DDP** (``replicated``: the zoo's own loops, ``vlm-sft``, ``vlm-semi-online``, ``diffusion``, under ``ddp``):
  weights T·t + F·l; gradients T·t; AdamW 2·T·t; reference R·r; the diffusion engine's EMA T·t (0 under
  ``training.ema_device: cpu``). Copies: autocast's compute-dtype copy of every trained weight (T·c, cached while a
  forward pass or a rollout runs, when c differs from t) and, for a LoRA run whose frozen base is held in another
  dtype than c (the diffusion engine's float32 denoiser), autocast's cast of each base weight it uses, which the
  graph keeps for the backward pass (F·c: autocast caches only weights that train), plus for the diffusion engine
  DDP's reducer buckets, a second copy of the gradients (T·t: accelerate keeps ``gradient_as_bucket_view`` off); the
  VLM loops instead sum gradients through one flat buffer (:meth:`zoo.distributed.DataParallel.sum_gradients`: a bucket of 2^24 elements or the
  largest gradient, times t, after the forward's copies are freed: the larger of the two counts).
* **zoo FSDP2** (``fsdp``, :func:`zoo.sharding.shard`): weights T/N·t + F/N·l, gradients T/N·t, AdamW 2·T/N·t,
  reference R/N·r (sharded like the model), EMA T/N·t (each rank averages its rows); ``fsdp_offload_params`` puts all
  of them in CPU memory. Copies: the root unit (what lies outside the shard units, kept gathered from forward to
  backward) and the two largest units (one computing, one prefetched), in c; an engine that samples on the whole
  gathered model (``vlm-semi-online``'s rollouts and old and reference log-probabilities, the diffusion engine's
  rollouts) holds P·c at once instead, the larger of the two.
* **accelerate DDP** (``vlm-trl``, TRL under DDP): weights T·t + F·l; gradients T·t; AdamW 2·T·t; reference R·r
  (TRL builds it in the policy's dtype, whole on every process). Copies: DDP's reducer buckets (T·t) plus autocast's
  T·c.
* **accelerate FSDP2** (``vlm-trl``): accelerate upcasts trained weights to fp32 under mixed precision
  (``fsdp2_prepare_model``), so weights T/N·4 + F/N·l, gradients T/N·4, AdamW T/N·8; reference R/N·r (TRL's
  ``prepare_fsdp``, offloaded with the config); parameter offload moves them all to the CPU. Copies as zoo FSDP2's
  training units (TRL generates on the FSDP2 model unit by unit).
* **DeepSpeed ZeRO-3** (``vlm-trl``): weights (P + A)·c/N, gradients T·c/N, optimiser 12·T/N (fp32 master copy and
  two fp32 moments; 8·T/N when c = 4); reference R·c/N (TRL's ``prepare_deepspeed``, with the config's parameter
  offload); ``offload_param`` / ``offload_optimizer`` move weights / gradients and optimiser to the CPU. Copies: the
  root and the two largest of the model's own no-split blocks, in c, or the whole model P·c that TRL gathers to
  generate (``ds3_gather_for_generation``), the larger.

An FSDP2 share is rank 0's: ``fully_shard`` cuts each tensor with ``torch.chunk`` on dim 0, so rank 0 holds
⌈rows/N⌉ rows of each, the padded size every rank allocates; ZeRO-3 splits flat partitions evenly. The diffusion
engine's text encoders and VAE are whole on every process, in its frozen dtype (``model.dtype``). Weights,
gradients, optimiser state and the reference follow from the counts and are checked against the tensors of a real
step (``tests/zoo/test_memory_plan_tensors.py``); copies and activations are estimates, not checked against tensors.

* **Activations, an estimate**: per token and layer ``c·(6·h + 2·kv + m·I)`` bytes (the inputs of the norms and of
  the q/k/v, output and MLP projections, q, k, v and the attention output: h wide, k and v kv wide, and m tensors
  of the MLP's width I: 4 for a SwiGLU MLP, 2 for a GELU one; Korthikanti et al. 2022, arXiv:2205.05198 §4.1
  counted for flash attention and no dropout), times tokens and layers; with gradient checkpointing (the recipe's or
  the config's) each layer keeps only its input (c·h per token) and one layer is recomputed at a time. A VLM adds
  its logits, completion tokens × vocabulary × c × 2 (the logits and the temperature-scaled copy TRL's log-prob
  pass takes, ``GRPOTrainer._get_per_token_logps_and_entropies``). A UNet (SD 1.x, LCM) is counted block by block
  per latent pixel at each of its resolutions (:func:`zoo.workload.unet_maps`: a resnet's norms', SiLUs' and
  convolutions' inputs, an attention block as a transformer layer plus its cross-attention), times c and the pixels.

The total adds the parts: an upper bound where they do not meet in time (a sampling pass's copies and a training
pass's activations are counted together).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from zoo.launch import LaunchSettings, list_configs, read
from zoo.precision import BYTES
from zoo.workload import PlanError, Shape, Workload, diffusion_precision, diffusion_workload, numel, vlm_workload

if TYPE_CHECKING:
    from zoo.precision import Precision
    from zoo.sharding import Sharding

GIB = 2**30
#: What "fits" means: an 80 GB GPU (A100/H100 80GB), counted in decimal gigabytes as sold: 74.5 GiB, which
#: leaves the CUDA context and allocator fragmentation some room out of the 79.6 GiB CUDA reports.
GPU_BYTES = 80 * 10**9
#: The parts of a row, in the table's order, with their column headers.
COLUMNS = {"params": "params", "grads": "grads", "optim": "optim", "reference": "ref", "ema": "ema",
           "frozen": "frozen", "copies": "copies", "activations": "activ"}  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One launch config's memory per GPU, in bytes."""

    config: str
    path: str
    strategy: str
    """Who holds the model and how (``zoo FSDP2 + offload``, ``ZeRO-3``...)."""
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


def shard_numel(shapes: tuple[Shape, ...], n: int) -> int:
    """Elements of rank 0's FSDP2 shard of tensors of ``shapes`` over ``n`` ranks: ``torch.chunk`` on dim 0 gives it
    ⌈rows/n⌉ rows of each (a 0-dim tensor stays whole)."""
    return sum(-(-s[0] // n) * numel([s[1:]]) if s else 1 for s in shapes)


def gathered(work: Workload, units: tuple[str, ...], width: int) -> int:
    """Bytes of the parameters a sharded run holds whole at once: what lies outside the shard units (the root
    unit: embeddings, output head, final norm) and the two largest units (one computing, one prefetched)."""
    missing = [u for u in units if u not in work.blocks]
    if missing:
        raise PlanError(f"it wraps {', '.join(missing)}, which {work.model.split(' ')[0]} does not contain")
    inside = sum(work.blocks[u][1] for u in units)
    largest = max((work.blocks[u][0] for u in units), default=0)
    return (work.params + work.adapter - inside + min(inside, 2 * largest)) * width


def whole_gathered(work: Workload, width: int) -> int:
    """Bytes of the whole model gathered at ``width`` for sampling, where the engine samples so when it shards
    (:attr:`zoo.sharding.Holds.samples_gathered`), else 0."""
    return (work.params + work.adapter) * width if work.holds.samples_gathered else 0


def _replicated(work: Workload, precision: Precision, n: int) -> dict[str, int]:
    """Every rank the whole model (the zoo's loops, or accelerate's DDP); gradients averaged by DDP's reducer or
    summed by :meth:`zoo.distributed.DataParallel.sum_gradients` (:attr:`~zoo.sharding.Holds.ddp_reducer`)."""
    from zoo.distributed import DataParallel

    t, c, trained = work.trained_bytes(precision), BYTES[precision.compute], work.trainable
    autocast = trained * c if c != t else 0
    if work.adapter and BYTES[work.load_dtype] != c:  # a frozen base recast at every use, each cast kept for backward
        autocast += numel(work.frozen_shapes) * c
    if work.holds.ddp_reducer:
        copies = trained * t + autocast
    else:
        bucket = inspect.signature(DataParallel.sum_gradients).parameters["bucket"].default
        copies = max(autocast, max(min(bucket, trained), work.largest_trained()) * t if n > 1 else 0)
    return {"params": trained * t + numel(work.frozen_shapes) * BYTES[work.load_dtype], "grads": trained * t,
            "optim": 2 * trained * t, "reference": work.reference * work.reference_bytes(precision),
            "ema": work.ema * trained * t, "copies": copies}  # fmt: skip


def _fsdp(work: Workload, precision: Precision, sharding: Sharding, n: int, t: int, whole: int) -> dict[str, int]:
    """FSDP2 shards of trained weights held in ``t`` bytes (the zoo's :func:`zoo.sharding.shard`, or accelerate's),
    the reference sharded like the model; ``whole``: the bytes of the model gathered whole for sampling, if any."""
    on = 0 if sharding.offload else 1
    trained, frozen = shard_numel(work.trained_shapes, n), shard_numel(work.frozen_shapes, n)
    reference = shard_numel(work.base_shapes, n) if work.reference else 0
    return {"params": on * (trained * t + frozen * BYTES[work.load_dtype]), "grads": on * trained * t,
            "optim": on * 2 * trained * t, "reference": on * reference * work.reference_bytes(precision),
            "ema": on * work.ema * trained * t,
            "copies": max(gathered(work, sharding.units, BYTES[precision.compute]), whole)}  # fmt: skip


def _accelerate(work: Workload, precision: Precision, launch: LaunchSettings, sharding: Sharding,
                n: int) -> dict[str, int]:  # fmt: skip
    """What accelerate (TRL's engine) holds under ``launch``: DDP; FSDP2, which upcasts the trained weights to fp32
    under mixed precision (``fsdp2_prepare_model``) and generates unit by unit; or DeepSpeed ZeRO-3."""
    c, kind = BYTES[precision.compute], launch.distributed_type
    if kind == "MULTI_GPU":
        return _replicated(work, precision, n)
    if kind == "FSDP":
        return _fsdp(work, precision, sharding, n, t=4, whole=0)
    if kind == "DEEPSPEED" and launch.zero_stage == 3:
        weights, moments = 0 if launch.offload_params else 1, 0 if launch.offload_optimizer else 1
        master = 4 if c == 2 else 0
        return {"params": weights * (work.params + work.adapter) * c // n,
                "grads": moments * work.trainable * c // n, "optim": moments * (master + 8) * work.trainable // n,
                "reference": weights * work.reference * c // n, "ema": 0,
                "copies": max(gathered(work, work.no_split, c), whole_gathered(work, c))}  # fmt: skip
    raise PlanError(f"{launch.name}: the plan covers DDP, FSDP and DeepSpeed ZeRO-3, not {kind} "
                    f"(zero stage {launch.zero_stage})")  # fmt: skip


def strategy_name(launch: LaunchSettings, sharding: Sharding) -> str:
    """The table's name for how ``sharding`` holds the model (``zoo FSDP2 + offload``, ``ZeRO-3``...)."""
    offload = " + offload" if sharding.offload else ""
    if sharding.strategy != "accelerate":
        return {"replicated": "zoo DDP", "fsdp": "zoo FSDP2"}[sharding.strategy] + offload
    return {"MULTI_GPU": "accel. DDP", "FSDP": "accel. FSDP2", "DEEPSPEED": "ZeRO-3"}[launch.distributed_type] + offload


def placement(recipe: Any, launch: LaunchSettings) -> tuple[Sharding, Precision]:
    """How ``recipe``'s engine holds its model under ``launch`` and in which precision, from the functions the engine
    calls itself: :meth:`zoo.engines.Engine.sharding` (with the recipe: its refusals), ``policy_precision`` for the
    VLM engines, the diffusion engine's ``run_precision``. :class:`zoo.sharding.ShardingError` or
    :class:`zoo.precision.PrecisionError` when the engine does not run ``launch``."""
    from zoo.engines import ENGINES
    from zoo.engines.diffusion.recipe import DiffusionRecipe

    sharding = ENGINES.get(recipe.engine).sharding(launch.name, recipe)
    if isinstance(recipe, DiffusionRecipe):
        return sharding, diffusion_precision(recipe, launch)
    from zoo.engines.vlm.policy_model import policy_precision

    return sharding, policy_precision(recipe, cuda=True)


def row(work: Workload, launch: LaunchSettings, sharding: Sharding, precision: Precision, named: bool,
        processes: int | None = None) -> Row:  # fmt: skip
    """``work``'s memory per GPU under ``launch`` as the engine runs it (``sharding``, ``precision``), over
    ``processes`` (default: the config's)."""
    n = processes or launch.num_processes
    c = BYTES[precision.compute]
    if sharding.strategy == "replicated":
        parts = _replicated(work, precision, n)
    elif sharding.strategy == "fsdp":
        parts = _fsdp(work, precision, sharding, n, work.trained_bytes(precision), whole_gathered(work, c))
    elif sharding.strategy == "accelerate":
        parts = _accelerate(work, precision, launch, sharding, n)
    else:
        raise PlanError(f"{launch.name}: engine {work.engine} runs it as {sharding.strategy!r}, which the plan does "
                        "not size")  # fmt: skip
    checkpointing = work.checkpointing or sharding.activation_checkpointing
    activations = sum(s.bytes(c, checkpointing) for s in work.stacks) + work.logits * 2 * c
    parts |= {"frozen": work.frozen_bytes, "activations": activations}
    ordered = {key: parts[key] for key in COLUMNS}
    return Row(launch.name, str(launch.path), strategy_name(launch, sharding), n, named, ordered)


def workload(recipe: Any) -> Workload:
    """Size ``recipe``'s models offline; :class:`PlanError` for what cannot be planned."""
    from zoo.engines import ENGINES
    from zoo.engines.diffusion.recipe import DiffusionRecipe

    distributes = ENGINES.get(recipe.engine).distributes
    if distributes == "none":
        raise PlanError(f"engine {recipe.engine!r} trains in one learner process and runs no launch config: "
                        f"{recipe.name} has no per-GPU split to plan")  # fmt: skip
    if distributes == "ray":
        raise PlanError(f"engine {recipe.engine!r} launches on a Ray cluster, sharded by verl's own config, not a "
                        f"launch config: size {recipe.name} with verl")  # fmt: skip
    if recipe.model.name.startswith("tiny:"):
        raise PlanError(f"model {recipe.model.name!r} is a tiny CPU model built by the run itself; nothing to plan")
    return diffusion_workload(recipe) if isinstance(recipe, DiffusionRecipe) else vlm_workload(recipe)


def plan(recipe: Any, processes: int | None = None) -> tuple[Workload, list[Row], dict[str, str]]:
    """The workload, one :class:`Row` per shipped launch config the engine runs (over ``processes``, default the
    recipe's :attr:`~zoo.recipe.Recipe.processes`, else each config's), and for the others why not: the engine's
    refusal, or the config's mismatch with the model."""
    processes = processes or getattr(recipe, "processes", None)
    from zoo.precision import PrecisionError
    from zoo.sharding import ShardingError

    work = workload(recipe)
    rows, skipped = [], {}
    for name in list_configs():
        launch = read(name)
        try:
            sharding, precision = placement(recipe, launch)
        except (ShardingError, PrecisionError) as err:
            skipped[name] = f"refused by the engine: {err}"
            continue
        try:
            rows.append(row(work, launch, sharding, precision, named=name == recipe.launch, processes=processes))
        except PlanError as err:
            skipped[name] = f"not applicable, {err}"
    return work, rows, skipped


def _summary(work: Workload) -> list[str]:
    """The lines above the table: the model, its precision and what the estimate assumes."""
    b, p = 1e9, work.precision
    return [f"{work.recipe} ({work.engine}): {work.model}",
            f"  {work.params / b:.2f} B parameters, {work.trainable / b:.3f} B trained"
            + (f" (LoRA adds {work.adapter / b:.3f} B)" if work.adapter else ""),
            f"  precision: compute {p.compute}; trained weights, gradients and AdamW "
            f"{'float32' if work.adapter else p.trained}"
            + (f"; frozen weights {work.load_dtype} (as loaded)" if work.frozen_shapes else "")
            + (f"; KL reference {work.reference_dtype(p)} (as built)" if work.reference else ""),
            *(["  frozen on every GPU: " + ", ".join(f"{k} {v / b:.2f} B" for k, v in work.frozen.items())]
              if work.frozen else []),
            *(f"  activations: {s.name}, {s.layers} layers x {s.tokens} tokens per micro-batch" for s in work.stacks),
            f"  gradient checkpointing: {'on' if work.checkpointing else 'off (on where the config says)'}",
            *(f"  assumed {key}: {value}" for key, value in work.assumptions.items())]  # fmt: skip


def render(work: Workload, rows: list[Row], skipped: dict[str, str], train_args: Sequence[str] = ("RECIPE.yaml",)) -> str:
    """The plan as a readable table with its assumptions, and the launch line of the recipe's own config, which runs
    as printed: ``train_args`` (the recipe's path and its ``--set`` overrides) and the row's process count."""
    lines = [*_summary(work), "",
             f"{'GiB per GPU':<26}{'strategy':<23}{'N':>3}" + "".join(f"{c:>7}" for c in COLUMNS.values())
             + f"{'total':>7}  fits 80 GB"]  # fmt: skip
    for r in rows:
        cells = "".join(f"{r.parts[c] / GIB:>7.1f}" for c in COLUMNS)
        lines.append(f"{('* ' if r.named else '  ') + r.config:<26}{r.strategy:<23}{r.processes:>3}{cells}"
                     f"{r.total / GIB:>7.1f}  {'yes' if r.fits else 'no'}")  # fmt: skip
    lines += [f"{'* ' if name == work.launch else '  '}{name}: {why}" for name, why in skipped.items()]
    named = next((r for r in rows if r.named), None)
    if named and not named.fits and named.parts["activations"] > named.total / 2:
        lines.append("  activations dominate: lower the micro-batch (training.batch_size or train_batch_size) and raise "
                     "training.grad_accum by the same factor; an optimiser step then sees the same samples")  # fmt: skip
    if named:
        footer = f"* the recipe's launch config: {launch_line(named, train_args)}"
    elif work.launch:
        footer = f"* the recipe's launch config {work.launch} cannot run it (above)"
    else:
        footer = "(the recipe names no launch config)"
    return "\n".join([*lines, "", footer,
                      "params, grads, optim, ref and ema follow from the parameter counts and the engine's precision "
                      "and sharding; copies (gathered units, autocast and communication buffers) and activations are "
                      "estimates (formulas: zoo/memory_plan.py)"])  # fmt: skip


def launch_line(row: Row, train_args: Sequence[str]) -> str:
    """The command that starts ``row``'s run: accelerate with the config file, over the row's processes."""
    import shlex

    return shlex.join(["accelerate", "launch", "--config_file", row.path, "--num_processes", str(row.processes),
                       "-m", "zoo.cli", "train", *train_args])  # fmt: skip


def to_json(work: Workload, rows: list[Row], skipped: dict[str, str]) -> str:
    """The plan as JSON (bytes and GiB per part, per config)."""
    data = asdict(work)
    for key in ("blocks", "trained_shapes", "frozen_shapes"):
        data.pop(key)
    data["configs"] = [{"name": r.config, "path": r.path, "strategy": r.strategy, "num_processes": r.processes,
                        "named_by_recipe": r.named, "bytes": r.parts, "total_bytes": r.total,
                        "total_gib": round(r.total / GIB, 2), "fits_80gb": r.fits} for r in rows]  # fmt: skip
    data["not_applicable"] = skipped
    return json.dumps(data, indent=2)
