"""Seconds per Flow-GRPO round and peak memory of the diffusion engine at SD3.5-Medium's shape, random weights.

What runs is the engine's own round: ``zoo.engines.diffusion.setup.build_run`` on the
``flow-grpo-sd35m`` recipe, then ``zoo.engines.diffusion.trainer.train_round`` (sample with CFG,
decode, score, advantages, PPO over the trained steps with the KL reference forward, EMA), so a
change to the engine shows here. Only what a GPU minute cannot hold is replaced:

* **the model**: SD3.5-Medium's transformer and VAE built by diffusers from their configs
  (``stabilityai/stable-diffusion-3.5-medium``: 24 MMDiT-X layers, 13 with dual attention, RMS
  q/k-norm; 2.24B transformer parameters as diffusers builds it) with random weights, so no gated
  download; the text encoders give way to the engine's hashed prompt encoder at SD3's conditioning
  shapes (4096-wide tokens, CLIP's 77 + T5's ``model.max_sequence_length``, 256 unless the recipe caps
  it; pooled 2048), so every denoiser call has the real sequence length. ``build_run`` gets it through
  its ``load_model`` (patched for the call); nothing else changes;
* **precision**: ``--dtype bfloat16`` (default) keeps the frozen weights in bf16 and runs the round
  under ``torch.autocast`` as the authors do (in fp16); the engine's own SD3.5 path loads the
  transformer in float32 (``load_pipeline``), which ``--dtype float32`` measures;
* **the reward**: ``brightness`` (no model), so the seconds are the engine's, not a reward model's;
* **the round's size**: the recipe's 6 prompts x 24 images per process become ``--prompts`` x
  ``--group`` (default 1 x 12, so two rounds fit a GPU minute); the recipe's micro-batch (9), LoRA
  (r32/alpha 64), CFG 4.5, 10 steps (9 trained), noise level, clip and KL beta are kept. Seconds per
  image, times the recipe's 144 images, estimates a full round per process.

The first round pays cuBLAS/cuDNN warm-up and the allocator's growth; with ``--rounds`` >= 2 the
reported round time is the median of the later ones. Peak memory is CUDA's ``max_memory_allocated``
over the rounds (weights included); on a CPU, the process's peak RSS.

    python bench/diffusion_step.py                                            # on a GPU
    python bench/diffusion_step.py --shape tiny --rounds 1 --group 2 --micro-batch 2   # CPU smoke

The real widths on a CPU, one layer, float32 (bf16 matmuls crawl on CPUs without AVX-512):

    python bench/diffusion_step.py --layers 1 --resolution 128 --group 2 --micro-batch 2 --rounds 1 --dtype float32
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import torch
from timing import device_name, emit, sync, time_calls

from zoo.engines.diffusion import setup, trainer
from zoo.engines.diffusion.models import DiffusionModel, HashedPromptEncoder
from zoo.engines.diffusion.recipe import DiffusionRecipe
from zoo.engines.reading import load_recipe

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "domains" / "image" / "recipes" / "flow-grpo-sd35m-pickscore.yaml"
MODEL_NAME = "bench:random-weights"
PROMPTS = ["a photo of a red apple on a wooden table", "a blue bicycle leaning against a brick wall",
           "two cats sleeping on a green sofa", "a lighthouse on a cliff at sunset"]  # fmt: skip

_TINY_VAE = {"down_block_types": ("DownEncoderBlock2D",) * 2, "up_block_types": ("UpDecoderBlock2D",) * 2,
             "block_out_channels": (8, 16), "layers_per_block": 1, "norm_num_groups": 4, "sample_size": 32}  # fmt: skip
SHAPES: dict[str, dict[str, Any]] = {
    # stabilityai/stable-diffusion-3.5-medium transformer/config.json and vae/config.json
    "sd3.5-medium": {
        "transformer": {"sample_size": 128, "patch_size": 2, "in_channels": 16, "out_channels": 16, "num_layers": 24,
                        "attention_head_dim": 64, "num_attention_heads": 24, "joint_attention_dim": 4096,
                        "caption_projection_dim": 1536, "pooled_projection_dim": 2048, "pos_embed_max_size": 384,
                        "dual_attention_layers": tuple(range(13)), "qk_norm": "rms_norm"},
        "vae": {"down_block_types": ("DownEncoderBlock2D",) * 4, "up_block_types": ("UpDecoderBlock2D",) * 4,
                "block_out_channels": (128, 256, 512, 512), "layers_per_block": 2, "norm_num_groups": 32,
                "sample_size": 1024},
        "text_tokens": None,  # CLIP's 77 + the recipe's T5 max_sequence_length (SD3's default 256)
        "resolution": None,  # the recipe's
    },
    # the same architecture (dual attention, q/k-norm, 16 latent channels) small enough for one CPU thread
    "tiny": {
        "transformer": {"sample_size": 16, "patch_size": 2, "in_channels": 16, "out_channels": 16, "num_layers": 2,
                        "attention_head_dim": 16, "num_attention_heads": 4, "joint_attention_dim": 32,
                        "caption_projection_dim": 64, "pooled_projection_dim": 32, "pos_embed_max_size": 16,
                        "dual_attention_layers": (0,), "qk_norm": "rms_norm"},
        "vae": _TINY_VAE,
        "text_tokens": 8,
        "resolution": 32,
    },
}  # fmt: skip


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype) -> Iterator[None]:
    """Create parameters directly in ``dtype``: a 2.5B-parameter model built in float32 first would need
    10 GB and a cast; built under ``torch.device("cuda")`` it is also initialised on the GPU, in seconds."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def text_tokens(shape: str, max_sequence_length: int | None) -> int:
    """Prompt tokens a denoiser call sees: SD3 concatenates CLIP's 77 and T5's ``max_sequence_length`` (256 unless
    the recipe caps it: Flow-GRPO encodes with 128)."""
    fixed = SHAPES[shape]["text_tokens"]
    return fixed if fixed is not None else 77 + (max_sequence_length or 256)


def transformer_config(shape: str, layers: int | None = None) -> dict[str, Any]:
    """The shape's transformer config; ``layers`` keeps its widths with fewer layers (a CPU check of the real
    widths), the dual-attention layers cut to those that remain."""
    config = dict(SHAPES[shape]["transformer"])
    if layers is not None:
        config["num_layers"] = layers
        config["dual_attention_layers"] = tuple(i for i in config["dual_attention_layers"] if i < layers)
    return config


def random_model(shape: str, resolution: int, tokens: int, dtype: torch.dtype, device: torch.device,
                 layers: int | None = None) -> DiffusionModel:  # fmt: skip
    """A :class:`DiffusionModel` of ``shape`` with random (seeded) weights: SD3 transformer, 16-channel VAE,
    flow-matching scheduler (shift 3, as SD3.5's), ``tokens`` hashed prompt tokens at the transformer's widths."""
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel

    spec = SHAPES[shape]
    torch.manual_seed(0)
    with torch.device(device), default_dtype(dtype):
        denoiser = SD3Transformer2DModel(**transformer_config(shape, layers))
    with torch.device(device):
        vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=16, act_fn="silu", scaling_factor=1.5305,
                            shift_factor=0.0609, use_quant_conv=False, use_post_quant_conv=False,
                            **spec["vae"])  # fmt: skip
    config = denoiser.config
    latent = resolution // 2 ** (len(vae.config.block_out_channels) - 1)
    encoder = HashedPromptEncoder(config.joint_attention_dim, config.pooled_projection_dim, max_tokens=tokens)
    return DiffusionModel(denoiser, vae, FlowMatchEulerDiscreteScheduler(shift=3.0), encoder, "flow",
                          (config.in_channels, latent, latent), {"name": MODEL_NAME, "shape": shape})  # fmt: skip


def bench_recipe(args: argparse.Namespace, extra: tuple[str, ...] = ()) -> DiffusionRecipe:
    """The recipe file with the round scaled down, the cheap reward and the random model (``--set``-style
    overrides, so a recipe that cites its fields records them as the bench's), then ``extra`` overrides."""
    resolution = args.resolution or SHAPES[args.shape]["resolution"]
    overrides = [
        f"model.name={MODEL_NAME}", f"model.dtype={'bfloat16' if args.dtype == 'bfloat16' else 'float32'}",
        f"prompts.train={json.dumps(PROMPTS)}", f"prompts.eval={json.dumps(PROMPTS[:1])}",
        "rewards=[{name: brightness}]", f"algorithm.group_size={args.group}",
        f"training.prompts_per_step={args.prompts}", f"training.steps={args.rounds}",
        "training.eval_every=1000000", "training.save_steps=1000000", f"training.output_dir={args.out}",
    ]  # fmt: skip
    if resolution is not None:
        overrides.append(f"model.resolution={resolution}")
    if args.micro_batch is not None:
        overrides.append(f"training.train_batch_size={args.micro_batch}")
    return load_recipe(args.recipe, [*overrides, *extra])  # the overrides become the run's user: provenance rows


def build(args: argparse.Namespace, recipe: DiffusionRecipe) -> setup.Run:
    """``build_run`` exactly as ``zoo train`` calls it, its model loader answering with :func:`random_model`."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = getattr(torch, args.dtype)

    def loader(name: str, tiny: dict[str, Any] | None = None, resolution: int | None = None,
               max_sequence_length: int | None = None, **_: Any) -> DiffusionModel:  # fmt: skip
        if name != MODEL_NAME:
            raise ValueError(f"bench/diffusion_step.py builds {MODEL_NAME!r} only, got {name!r}")
        tokens = text_tokens(args.shape, max_sequence_length)
        return random_model(args.shape, resolution or 512, tokens, dtype, device, args.layers)

    with mock.patch.object(setup, "load_model", loader):
        return setup.build_run(recipe, Path(args.out))


def rounds(args: argparse.Namespace, run: setup.Run) -> list[dict[str, Any]]:
    """Time ``args.rounds`` engine rounds, each split into sampling, scoring and optimisation seconds."""
    parts = {"sample_s": time_calls(run.sampler, "run"), "score_s": time_calls(run, "score"),
             "optimise_s": time_calls(trainer, "optimise")}  # fmt: skip
    precision = (torch.autocast(run.model.device.type, dtype=torch.bfloat16) if args.dtype == "bfloat16"
                 else contextlib.nullcontext())  # fmt: skip
    out = []
    for index in range(args.rounds):
        seen = {key: len(times) for key, times in parts.items()}
        sync()
        start = time.perf_counter()
        with precision:
            metrics = trainer.train_round(run, index)
        sync()
        row: dict[str, Any] = {"seconds": round(time.perf_counter() - start, 3)}
        row.update({key: round(sum(times[seen[key] :]), 3) for key, times in parts.items()})
        row.update({key: metrics.get(key) for key in ("kept_fraction", "train_evals")})
        print(json.dumps({"round": index, **row}), flush=True)
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="sd3.5-medium")
    parser.add_argument("--recipe", type=Path, default=RECIPE, help="the Flow-GRPO recipe whose settings run")
    parser.add_argument("--dtype", choices=["bfloat16", "float32"], default="bfloat16",
                        help="frozen weights' dtype (bfloat16: under autocast; float32: the engine's SD3.5 default)")
    parser.add_argument("--prompts", type=int, default=1, help="prompts per round (recipe: 6 per process)")
    parser.add_argument("--group", type=int, default=12, help="images per prompt (recipe: 24)")
    parser.add_argument("--micro-batch", type=int, default=None, help="images per forward/backward (recipe: 9)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds; the first is warm-up when there are more")
    parser.add_argument("--layers", type=int, default=None, help="fewer transformer layers, same widths (CPU checks)")
    parser.add_argument("--resolution", type=int, default=None, help="pixels (default: the shape's, else the recipe's)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--out", default=None, help="the run directory (default: a temporary one)")
    parser.add_argument("--json", help="also write the report to this file (bench/gpu_suite.sh merges it)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    full = DiffusionRecipe.from_yaml(args.recipe)
    with tempfile.TemporaryDirectory(prefix="bench-diffusion-") as scratch:
        args.out = args.out or scratch
        recipe = bench_recipe(args)
        start = time.perf_counter()
        run = build(args, recipe)
        cuda = run.model.device.type == "cuda"
        sync()
        build_s = time.perf_counter() - start
        weights = torch.cuda.memory_allocated() if cuda else 0
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        timed = rounds(args, run)
    later = [r["seconds"] for r in timed[1:]] or [timed[0]["seconds"]]
    per_round = statistics.median(later)
    images = args.prompts * args.group
    recipe_images = full.training.prompts_per_step * full.algorithm.group_size
    alg, tr = recipe.algorithm, recipe.training
    report = {
        "device": device_name(args.threads), "shape": args.shape, "recipe": os.path.relpath(args.recipe, ROOT),
        "dtype": args.dtype, "autocast": args.dtype == "bfloat16",
        "lora_dtype": str(run.trainable[0].dtype).removeprefix("torch."),
        "layers": run.model.denoiser.config.num_layers,
        "denoiser_params_m": round(sum(p.numel() for p in run.model.denoiser.parameters()) / 1e6, 1),
        "trainable_params_m": round(sum(p.numel() for p in run.trainable) / 1e6, 2),
        "resolution": recipe.model.resolution, "latent_shape": list(run.model.latent_shape),
        "text_tokens": run.model.encoder.max_tokens, "lora": {"r": tr.lora.r, "alpha": tr.lora.alpha},
        "prompts_per_round": args.prompts, "group_size": args.group, "images_per_round": images,
        "micro_batch": tr.train_batch_size, "num_steps": alg.num_steps, "guidance_scale": alg.guidance_scale,
        "beta": alg.beta, "build_s": round(build_s, 2), "rounds": timed,
        "seconds_per_round": round(per_round, 3), "seconds_per_image": round(per_round / images, 4),
        "recipe_images_per_round": recipe_images,
        "recipe_round_estimate_s": round(per_round / images * recipe_images, 1),
    }  # fmt: skip
    if cuda:
        report["weights_memory_gb"] = round(weights / 2**30, 2)
        report["peak_memory_gb"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    else:
        report["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    emit(report, args.json)


if __name__ == "__main__":
    main()
