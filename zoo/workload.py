"""What a recipe trains, counted before any weight is loaded: the workload :mod:`zoo.memory_plan` prices per GPU.

The parameters come from :mod:`zoo.model_size` (the architecture on the meta device), each weight's shape kept so
that a shard can be sized the way FSDP2 cuts it; the precision is the engine's own decision, from the functions the
engine itself calls (``policy_precision`` and ``load_dtype`` for the VLM engines, the diffusion engine's
``run_precision``); what else an engine holds (a reference, gathered sampling, DDP's buckets) is its
:attr:`zoo.engines.Engine.holds`. The
token counts come from the recipe's batch. A VLM policy's micro-batch is ``training.batch_size`` sequences of prompt
(text and image tokens) and completion; a diffusion step's is ``training.train_batch_size`` latents, twice over when
classifier-free guidance runs in the trained step: for a transformer, ``(resolution / 8 / patch)^2`` image tokens
beside the prompt's text tokens, for a UNet, its feature maps at each of its resolutions (:func:`unet_maps`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from zoo.engines import ENGINES
from zoo.launch import LaunchSettings, read
from zoo.model_size import (
    Counted,
    ModelSizeError,
    block_sizes,
    buffer_bytes,
    known_row,
    offline_dir,
    pipeline,
    vlm,
)
from zoo.precision import BYTES, Precision
from zoo.sharding import Holds

#: zoo: images are sized at one megapixel (within the recipe's pixel limits) for the activation estimate: a
#: recipe's max_pixels is a bound, not the typical image, and the datasets' images are rarely above 1 MP.
IMAGE_PIXELS = 1024 * 1024
#: zoo: text tokens of a prompt around its images (system prompt, template, question) for the estimate.
PROMPT_TEXT_TOKENS = 256
Shape = tuple[int, ...]


class PlanError(ValueError):
    """A recipe the plan cannot size (an engine that reads no launch config, a ``tiny:`` model, a model not on this
    machine and not in :data:`zoo.model_size.KNOWN`), or a launch config that does not fit the model."""


@dataclass(frozen=True)
class Stack:
    """One stack of transformer layers the backward pass goes through, for the activation estimate."""

    name: str
    layers: int
    hidden: int
    intermediate: int
    kv: int
    """Width of the key and value projections (key-value heads × head dimension)."""
    mlp_tensors: int
    """Tensors of the MLP's width each layer keeps: 4 for SwiGLU (gate, up, activation, product), 2 for GELU."""
    tokens: int
    """Tokens through the stack per micro-batch on one GPU."""

    def bytes(self, width: int, checkpointing: bool) -> int:
        """Activation bytes kept for the backward pass (see the module docstring)."""
        per_layer = width * (6 * self.hidden + 2 * self.kv + self.mlp_tensors * self.intermediate) * self.tokens
        if checkpointing:
            return self.layers * width * self.hidden * self.tokens + per_layer
        return self.layers * per_layer


@dataclass(frozen=True)
class FeatureMaps:
    """The blocks of a convolutional denoiser (a UNet) at one latent resolution, for the activation estimate
    (:func:`unet_maps`): elements kept per latent pixel, whatever the block's kind."""

    name: str
    layers: int
    """Blocks at this resolution (resnets, attention blocks, resamplers)."""
    kept: int
    """Elements per pixel all its blocks keep for the backward pass."""
    inputs: int
    """Elements per pixel of its blocks' inputs: what gradient checkpointing keeps."""
    largest: int
    """Elements per pixel the block keeping most keeps: the one recomputed at a time under checkpointing."""
    tokens: int
    """Latent pixels through the blocks per micro-batch on one GPU (images × side²)."""

    def bytes(self, width: int, checkpointing: bool) -> int:
        """Activation bytes kept for the backward pass (see :func:`unet_maps`)."""
        return width * ((self.inputs + self.largest) if checkpointing else self.kept) * self.tokens


@dataclass(frozen=True)
class Workload:
    """What a recipe trains, whatever the launch config."""

    recipe: str
    engine: str
    launch: str
    """The launch config the recipe names (``""``: none)."""
    model: str
    """The trained model's class and where its config came from."""
    params: int
    trainable: int
    """Parameters the optimiser steps (LoRA adapters included)."""
    adapter: int
    """LoRA parameters added to the model (0 for a full fine-tune)."""
    holds: Holds
    precision: Precision
    """What the engine computes in and holds trained and frozen weights in under the recipe's own launch
    (:mod:`zoo.precision`; the plan asks again per launch config, where the diffusion engine's compute follows it)."""
    load_dtype: str
    """What the engine loads the model's weights in: its frozen weights (a vision tower, a LoRA base) stay so."""
    trained_shapes: tuple[Shape, ...]
    """Shape of every tensor the optimiser steps (LoRA's A and B for adapters)."""
    frozen_shapes: tuple[Shape, ...]
    """Shape of every weight of the model nothing steps (a frozen vision tower, a LoRA run's base)."""
    reference: int
    """Parameters of the KL reference, a frozen copy of the model's weights (0: none)."""
    ema: bool
    """An EMA of the trained weights beside them on the GPU (not ``training.ema_device: cpu``)."""
    frozen_bytes: int
    """Bytes each process keeps whole beside the trained model's parameters: the other models (text encoders, VAE)
    and the trained model's buffers (SD3.5's position embedding; FSDP shards parameters only)."""
    frozen: dict[str, int]
    stacks: tuple[Stack | FeatureMaps, ...]
    logits: int
    """Logit elements kept for the loss (completion tokens × vocabulary)."""
    checkpointing: bool
    blocks: dict[str, tuple[int, int]]
    """Module class -> (parameters of its largest instance, of all its instances): FSDP/ZeRO-3 units."""
    no_split: tuple[str, ...]
    """The model's own repeated blocks (``_no_split_modules``): ZeRO-3's gathered units."""
    assumptions: dict[str, Any] = field(default_factory=dict)

    def trained_bytes(self, precision: Precision) -> int:
        """Bytes of a trained weight, its gradient and each AdamW moment: float32 for LoRA adapters (peft keeps them
        so), else ``precision``'s trained dtype."""
        return 4 if self.adapter else BYTES[precision.trained]

    def reference_dtype(self, precision: Precision) -> str:
        """The dtype of a KL reference's weights, as the engine holds it (:attr:`zoo.sharding.Holds.reference`)."""
        return precision.frozen if self.holds.reference == "frozen" else self.load_dtype

    def reference_bytes(self, precision: Precision) -> int:
        """Bytes of a KL reference's weight."""
        return BYTES[self.reference_dtype(precision)]

    @property
    def base_shapes(self) -> tuple[Shape, ...]:
        """The model's own weights (adapters aside): what a KL reference copies."""
        return self.frozen_shapes if self.adapter else self.trained_shapes + self.frozen_shapes

    def largest_trained(self) -> int:
        """Elements of the largest trained tensor (the gradient exchange's buffer is at least this big)."""
        return max((math.prod(s) for s in self.trained_shapes), default=0)


def numel(shapes: Iterable[Shape]) -> int:
    """Elements of tensors of ``shapes``."""
    return sum(math.prod(s) for s in shapes)


def _located(name: str, revision: str | None, marker: str) -> tuple[Any, str | None]:
    """``(folder on this machine or None, KNOWN row or None)`` for a model name; :class:`PlanError` when neither."""
    try:
        folder, repo_id, base = offline_dir(name, revision, marker)
    except (ValueError, LookupError) as err:
        raise PlanError(f"model {name!r}: {err}") from None
    row = None if folder is not None else known_row(repo_id, base, name)
    if folder is None and row is None:
        raise PlanError(f"model {name!r} has no {marker} on this machine (a directory, checkpoints/ or the Hugging "
                        "Face cache) and is not a known architecture (zoo.model_size.KNOWN); download its config "
                        "files (`hf download REPO --include '*.json'`) or add its config to KNOWN with a citation")  # fmt: skip
    return folder, row


def lora_shapes(module: Any, targets: tuple[str, ...] | list[str], rank: int) -> tuple[Shape, ...]:
    """Shapes of the tensors LoRA of rank ``rank`` adds to ``module``'s linear layers that peft's own matcher selects
    for ``targets``: A ``(rank, in)`` and B ``(out, rank)`` each."""
    import torch
    from peft import LoraConfig
    from peft.tuners.tuners_utils import check_target_module_exists

    config = LoraConfig(r=rank, target_modules=list(targets))
    return tuple(shape for name, sub in module.named_modules()
                 if isinstance(sub, torch.nn.Linear) and check_target_module_exists(config, name)
                 for shape in ((rank, sub.in_features), (sub.out_features, rank)))  # fmt: skip


def split_shapes(module: Any, frozen: Iterable[Any] = ()) -> tuple[tuple[Shape, ...], tuple[Shape, ...]]:
    """``(trained, frozen)`` shapes of ``module``'s parameters (a tied weight once), ``frozen`` naming the parameters
    the engine freezes."""
    held = {id(p) for p in frozen}
    params = list(module.parameters())
    return (tuple(tuple(p.shape) for p in params if id(p) not in held),
            tuple(tuple(p.shape) for p in params if id(p) in held))  # fmt: skip


def vlm_workload(recipe: Any) -> Workload:
    """A VLM recipe (``vlm-trl``, ``vlm-semi-online``, ``vlm-sft``): the policy in the precision its engine resolves
    (``policy_precision`` on a GPU, ``load_dtype``), its LoRA or frozen tower, the reference for a KL term, and the
    tokens of one micro-batch."""
    from zoo.engines.vlm.policy_model import load_dtype, pixel_limits, policy_precision

    folder, row = _located(recipe.model.name, recipe.model.revision, "config.json")
    try:
        counted = vlm(folder, row)
    except ModelSizeError as err:
        raise PlanError(f"model {recipe.model.name!r}: {err}") from None
    tr, alg = recipe.training, recipe.algorithm if hasattr(recipe, "algorithm") else None
    text, vision = counted.config.get_text_config(), counted.config.vision_config
    tower = counted.module.model.visual
    lora = getattr(tr, "lora", None)
    adapters = lora_shapes(counted.module, lora.target_modules, lora.r) if lora is not None and lora.enabled else ()
    vision_trains = not adapters and not tr.freeze_vision
    frozen = counted.module.parameters() if adapters else () if vision_trains else tower.parameters()
    trained_shapes, frozen_shapes = split_shapes(counted.module, frozen)
    trained_shapes = adapters or trained_shapes
    low, high = pixel_limits(recipe)
    pixels = min(max(IMAGE_PIXELS, low or 0), high or IMAGE_PIXELS)
    patch, merge = vision.patch_size, vision.spatial_merge_size
    patches = pixels // patch**2
    images = getattr(getattr(recipe, "multi_turn", None), "image_limit", 1)
    completion = getattr(alg, "max_completion_length", PROMPT_TEXT_TOKENS)
    sequence = PROMPT_TEXT_TOKENS + images * patches // merge**2 + completion
    heads = text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    stacks = [Stack("language model", text.num_hidden_layers, text.hidden_size, text.intermediate_size,
                    text.num_key_value_heads * head_dim, 4, tr.batch_size * sequence)]  # fmt: skip
    if vision_trains:
        stacks.append(Stack("vision tower", vision.depth, vision.hidden_size, vision.intermediate_size,
                            vision.hidden_size, 4, tr.batch_size * images * patches))  # fmt: skip
    precision, holds = policy_precision(recipe, cuda=True), ENGINES.get(recipe.engine).holds
    keeps_reference = getattr(alg, "beta", 0.0) and (not adapters or holds.reference_with_lora)
    return Workload(
        recipe=recipe.name, engine=recipe.engine, launch=recipe.launch,
        model=f"{counted.architecture} (config: {counted.source})", params=counted.params,
        trainable=numel(trained_shapes), adapter=numel(adapters), holds=holds, precision=precision,
        load_dtype=str(load_dtype(recipe, precision)).removeprefix("torch."), trained_shapes=trained_shapes,
        frozen_shapes=frozen_shapes, reference=counted.params if keeps_reference else 0, ema=False,
        frozen_bytes=buffer_bytes(counted.module), frozen={}, stacks=tuple(stacks),
        logits=tr.batch_size * completion * text.vocab_size,
        checkpointing=bool(getattr(tr, "gradient_checkpointing", False)), blocks=block_sizes(counted.module),
        no_split=tuple(counted.module._no_split_modules or ()),
        assumptions={"image pixels": f"{pixels} ({images} image(s) a sequence: {patches} patches, "
                                    f"{patches // merge**2} tokens)", "prompt text tokens": PROMPT_TEXT_TOKENS,
                     "completion tokens": completion},
    )  # fmt: skip


def diffusion_workload(recipe: Any) -> Workload:
    """A diffusion recipe: the trained transformer or UNet (float32 masters, as the engine loads it whatever
    ``model.dtype`` says), its LoRA, reference copy and EMA (none on the GPU under ``training.ema_device: cpu``), the
    frozen text encoders and VAE every process holds in ``model.dtype``, and the activations of one trained step."""
    from zoo.engines.diffusion.methods import METHODS

    folder, row = _located(recipe.model.name, recipe.model.revision, "model_index.json")
    try:
        parts = pipeline(folder, row)
    except ModelSizeError as err:
        raise PlanError(f"model {recipe.model.name!r}: {err}") from None
    kind = next((name for name in ("transformer", "unet") if name in parts), None)
    if kind is None:
        raise PlanError(f"model {recipe.model.name!r}: the plan sizes a transformer (SD3, FLUX) or UNet (SD 1.x, LCM) "
                        f"denoiser, and the pipeline holds {', '.join(parts)}")  # fmt: skip
    denoiser: Counted = parts[kind]
    parts = {name: c for name, c in parts.items() if name != kind}  # a copy: pipeline() caches its dict
    tr, alg = recipe.training, recipe.algorithm
    targets = tr.lora.target_modules or _default_lora_targets(unet=kind == "unet")
    adapters = lora_shapes(denoiser.module, targets, tr.lora.r) if tr.lora.enabled else ()
    trained_shapes, frozen_shapes = split_shapes(denoiser.module, denoiser.module.parameters() if adapters else ())
    trained_shapes = adapters or trained_shapes
    settings = alg.settings(METHODS.get(alg.method))
    passes = 2 if settings.guidance_scale != 1.0 and not settings.detach_uncond else 1
    activations = _unet_activations if kind == "unet" else _transformer_activations
    stacks, shapes = activations(denoiser, parts, recipe, tr.train_batch_size * passes)
    precision = diffusion_precision(recipe, read(recipe.launch) if recipe.launch else None)
    return Workload(
        recipe=recipe.name, engine=recipe.engine, launch=recipe.launch,
        model=f"{denoiser.architecture} (config: {denoiser.source})", params=denoiser.params,
        trainable=numel(trained_shapes), adapter=numel(adapters), holds=ENGINES.get(recipe.engine).holds, precision=precision,
        load_dtype="float32", trained_shapes=trained_shapes, frozen_shapes=frozen_shapes,
        reference=denoiser.params if alg.beta > 0 and not adapters else 0,
        ema=tr.ema_decay is not None and getattr(tr, "ema_device", None) != "cpu",
        frozen_bytes=sum(c.params for c in parts.values()) * BYTES[precision.frozen] + buffer_bytes(denoiser.module),
        frozen={name: c.params for name, c in parts.items()}, stacks=stacks, logits=0, checkpointing=False,
        blocks=block_sizes(denoiser.module), no_split=tuple(getattr(denoiser.module, "_no_split_modules", None) or ()),
        assumptions={**shapes, "guided passes with gradients": passes,
                     "frozen dtypes": f"text encoders and vae {precision.frozen}"},
    )  # fmt: skip


def _transformer_activations(denoiser: Counted, parts: dict[str, Counted], recipe: Any,
                             images: int) -> tuple[tuple[Stack, ...], dict[str, Any]]:  # fmt: skip
    """The transformer's one stack over ``images`` latents of ``(resolution / 8 / patch)^2`` image tokens beside the
    prompt's text tokens, and those sizes."""
    config = denoiser.config
    latent = parts["vae"].config["latent_channels"] if "vae" in parts else 16
    patch = config["patch_size"] * round((config["in_channels"] // latent) ** 0.5)
    resolution = recipe.model.resolution or 8 * config.get("sample_size", 128)
    image_tokens = (resolution // 8 // patch) ** 2
    text_tokens = _text_tokens(denoiser.architecture, recipe.model.max_sequence_length)
    hidden = config["num_attention_heads"] * config["attention_head_dim"]
    layers = config["num_layers"] + config.get("num_single_layers", 0)
    stack = Stack("transformer", layers, hidden, 4 * hidden, hidden, 2, images * (image_tokens + text_tokens))
    return (stack,), {"resolution": resolution, "image tokens": image_tokens, "text tokens": text_tokens}


def _unet_activations(denoiser: Counted, parts: dict[str, Counted], recipe: Any,
                      images: int) -> tuple[tuple[FeatureMaps, ...], dict[str, Any]]:  # fmt: skip
    """The UNet's levels over ``images`` latents at the size the engine samples (``load_pipeline``: the recipe's
    resolution over the VAE's scale factor, else the UNet's ``sample_size``), and that size."""
    scale = 2 ** (len(parts["vae"].config["block_out_channels"]) - 1) if "vae" in parts else 8
    side = recipe.model.resolution // scale if recipe.model.resolution else denoiser.config["sample_size"]
    return unet_maps(denoiser.module, images, side), {"resolution": side * scale, "latent side": side}


def unet_maps(unet: Any, images: int, side: int) -> tuple[FeatureMaps, ...]:
    """An estimate of what a diffusers ``UNet2DConditionModel``'s blocks keep for the backward pass over ``images``
    latents ``side`` pixels wide, one :class:`FeatureMaps` per resolution, counted per latent pixel as for a full
    fine-tune (a frozen base with LoRA keeps fewer: a frozen convolution needs no input for a weight gradient):

    * a resnet of ``i`` input and ``o`` output channels: ``3·i + 3·o`` (each GroupNorm's input, the SiLU's input and
      the convolution's input after it, twice; dropout at p = 0 keeps nothing);
    * an attention block of ``C`` channels (``Transformer2DModel``): its GroupNorm, input and output projections'
      inputs (``3·C``), and per transformer layer of width ``d``, key/value width ``kv`` and feed-forward width ``f``:
      ``6·d + 2·kv + 4·f`` as a transformer layer (:class:`Stack`, GEGLU's four tensors of width ``f``) plus ``4·d``
      for the cross-attention (its norm's and query projection's inputs, the query, its output); the keys and values
      over the prompt's 77 tokens are left out (2% of a 64x64 latent's pixels);
    * a down- or upsampler: its convolution's input (``C``, at the upsampled size for an upsampler); the input
      convolution (the latent's channels) and the output head (norm, SiLU, convolution: ``3·C``).

    Under gradient checkpointing each block keeps its input and one block at a time is recomputed."""
    levels: dict[int, list[tuple[int, int]]] = {}

    def block(at: int, inputs: int, kept: int) -> None:
        levels.setdefault(at, []).append((inputs, kept))

    block(side, unet.conv_in.in_channels, unet.conv_in.in_channels)
    block(side, unet.conv_out.in_channels, 3 * unet.conv_out.in_channels)
    for stage in [*unet.down_blocks, unet.mid_block, *unet.up_blocks]:
        for resnet in stage.resnets:
            block(side, resnet.in_channels, 3 * (resnet.in_channels + resnet.out_channels))
        for attention in getattr(stage, "attentions", None) or ():
            block(side, attention.in_channels, _attention_kept(attention))
        for sampler in getattr(stage, "downsamplers", None) or ():
            block(side, sampler.channels, sampler.channels)
            side //= 2
        for sampler in getattr(stage, "upsamplers", None) or ():
            block(2 * side, sampler.channels, sampler.channels)
            side *= 2
    return tuple(FeatureMaps(f"UNet at {at}x{at} latents", len(kept), sum(k for _, k in kept),
                             sum(i for i, _ in kept), max(k for _, k in kept), images * at * at)
                 for at, kept in sorted(levels.items(), reverse=True))  # fmt: skip


def _attention_kept(attention: Any) -> int:
    """Elements per pixel a ``Transformer2DModel`` keeps (:func:`unet_maps`)."""
    output = attention.proj_out  # a 1x1 convolution, or a linear layer (use_linear_projection)
    kept = 2 * attention.in_channels + getattr(output, "in_features", getattr(output, "in_channels", 0))
    for layer in attention.transformer_blocks:
        width = layer.norm1.normalized_shape[0]
        feed_forward = [m for m in layer.ff.net if hasattr(m, "in_features")][-1].in_features
        cross = 4 * width if layer.attn2 is not None else 0
        kept += 6 * width + 2 * layer.attn1.to_k.out_features + 4 * feed_forward + cross
    return kept


def diffusion_precision(recipe: Any, launch: LaunchSettings | None) -> Precision:
    """The diffusion engine's precision under ``launch`` (``None``: none, accelerate's ``no``): its own
    ``run_precision`` of the config's ``mixed_precision`` and the recipe's ``model.dtype``."""
    from zoo.engines.diffusion.placement import run_precision

    sharded = launch is not None and launch.distributed_type == "FSDP"
    return run_precision(launch.mixed_precision if launch else "no", recipe.model.dtype, sharded=sharded)


def _text_tokens(architecture: str, max_sequence_length: int | None) -> int:
    """The prompt tokens the transformer attends to: T5's (the pipeline's default length unless the recipe caps
    it), and for SD3 the 77 CLIP tokens concatenated before them (diffusers' ``encode_prompt``)."""
    import inspect

    import diffusers

    pipe = diffusers.StableDiffusion3Pipeline if architecture.startswith("SD3") else diffusers.FluxPipeline
    t5 = max_sequence_length or inspect.signature(pipe.__call__).parameters["max_sequence_length"].default
    return t5 + (77 if architecture.startswith("SD3") else 0)


def _default_lora_targets(unet: bool) -> tuple[str, ...]:
    """The projections the diffusion engine adapts when a recipe names none (``DiffusionModel.lora_targets``)."""
    from zoo.engines.diffusion.models import _TRANSFORMER_LORA_TARGETS, _UNET_LORA_TARGETS

    return _UNET_LORA_TARGETS if unet else _TRANSFORMER_LORA_TARGETS
