"""What a recipe trains, counted before any weight is loaded: the workload :mod:`zoo.memory_plan` prices per GPU.

The parameters come from :mod:`zoo.model_size` (the architecture on the meta device); the token counts from the
recipe's batch. A VLM policy's micro-batch is ``training.batch_size`` sequences of prompt (text and image tokens)
and completion; a diffusion step's is ``training.train_batch_size`` latents of ``(resolution / 8 / patch)^2``
image tokens beside the prompt's text tokens, twice over when classifier-free guidance runs in the trained step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zoo.model_size import Counted, ModelSizeError, block_sizes, count, known_row, offline_dir, pipeline, vlm

#: zoo: images are sized at one megapixel (within the recipe's pixel limits) for the activation estimate: a
#: recipe's max_pixels is a bound, not the typical image, and the datasets' images are rarely above 1 MP.
IMAGE_PIXELS = 1024 * 1024
#: zoo: text tokens of a prompt around its images (system prompt, template, question) for the estimate.
PROMPT_TEXT_TOKENS = 256
#: Engines whose runs start under ``accelerate launch`` (the others run in one process or on Ray).
ENGINES = ("vlm-trl", "vlm-semi-online", "vlm-sft", "diffusion")
_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


class PlanError(ValueError):
    """A recipe the plan cannot size: another engine, a ``tiny:`` model, or a model not on this machine and not in
    :data:`zoo.model_size.KNOWN`."""


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
class Workload:
    """What a recipe trains, whatever the launch config."""

    recipe: str
    engine: str
    model: str
    """The trained model's class and where its config came from."""
    params: int
    trainable: int
    """Parameters the optimiser steps (LoRA adapters included)."""
    adapter: int
    """LoRA parameters added to the model (0 for a full fine-tune)."""
    weight_bytes: int
    trained_bytes: int
    reference: int
    reference_bytes: int
    reference_sharded: bool
    ema: int
    frozen_bytes: int
    """Bytes of the other models each process keeps (text encoders, VAE)."""
    frozen: dict[str, int]
    stacks: tuple[Stack, ...]
    logits: int
    """Logit elements kept for the loss (completion tokens × vocabulary)."""
    checkpointing: bool
    blocks: dict[str, tuple[int, int]]
    """Module class -> (parameters of its largest instance, of all its instances): FSDP/ZeRO-3 units."""
    no_split: tuple[str, ...]
    """The model's own repeated blocks (``_no_split_modules``): ZeRO-3's gathered units."""
    assumptions: dict[str, Any] = field(default_factory=dict)


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


def lora_params(module: Any, targets: tuple[str, ...] | list[str], rank: int) -> int:
    """Parameters LoRA of rank ``rank`` adds to ``module``'s linear layers that peft's own matcher selects for
    ``targets``: ``rank * (in + out)`` each (A and B)."""
    import torch
    from peft import LoraConfig
    from peft.tuners.tuners_utils import check_target_module_exists

    config = LoraConfig(r=rank, target_modules=list(targets))
    return sum(rank * (sub.in_features + sub.out_features) for name, sub in module.named_modules()
               if isinstance(sub, torch.nn.Linear) and check_target_module_exists(config, name))  # fmt: skip


def _dtype_bytes(dtype: str, config: Any) -> int:
    if dtype == "auto":  # what transformers loads: the checkpoint's own dtype
        dtype = str(getattr(config, "dtype", None) or getattr(config, "torch_dtype", None) or "float32")
    return _BYTES[str(dtype).removeprefix("torch.")]


def vlm_workload(recipe: Any) -> Workload:
    """A VLM recipe (``vlm-trl``, ``vlm-semi-online``, ``vlm-sft``): the policy, its LoRA or frozen tower, the
    reference for a KL term, and the tokens of one micro-batch."""
    from zoo.engines.vlm.policy_model import pixel_limits

    folder, row = _located(recipe.model.name, recipe.model.revision, "config.json")
    try:
        counted = vlm(folder, row)
    except ModelSizeError as err:
        raise PlanError(f"model {recipe.model.name!r}: {err}") from None
    tr, alg = recipe.training, recipe.algorithm if hasattr(recipe, "algorithm") else None
    text, vision = counted.config.get_text_config(), counted.config.vision_config
    tower = count(counted.module.model.visual)
    lora = getattr(tr, "lora", None)
    adapter = lora_params(counted.module, lora.target_modules, lora.r) if lora is not None and lora.enabled else 0
    vision_trains = not adapter and not tr.freeze_vision
    trainable = adapter or counted.params - (0 if vision_trains else tower)
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
    weight_bytes = _dtype_bytes(recipe.model.dtype, counted.config)
    beta = getattr(alg, "beta", 0.0)
    reference = counted.params if beta and not adapter else 0
    return Workload(
        recipe=recipe.name, engine=recipe.engine, model=f"{counted.architecture} (config: {counted.source})",
        params=counted.params, trainable=trainable, adapter=adapter, weight_bytes=weight_bytes,
        trained_bytes=4 if adapter else weight_bytes, reference=reference, reference_bytes=weight_bytes,
        reference_sharded=recipe.engine == "vlm-trl", ema=0, frozen_bytes=0, frozen={}, stacks=tuple(stacks),
        logits=tr.batch_size * completion * text.vocab_size,
        checkpointing=bool(getattr(tr, "gradient_checkpointing", False)), blocks=block_sizes(counted.module),
        no_split=tuple(counted.module._no_split_modules or ()),
        assumptions={"image pixels": f"{pixels} ({images} image(s) a sequence: {patches} patches, "
                                    f"{patches // merge**2} tokens)", "prompt text tokens": PROMPT_TEXT_TOKENS,
                     "completion tokens": completion},
    )  # fmt: skip


def diffusion_workload(recipe: Any) -> Workload:
    """A diffusion recipe: the trained transformer (float32, as the engine keeps it), its LoRA, reference copy and
    EMA, the frozen text encoders and VAE every process holds, and the tokens of one trained step."""
    from zoo.engines.diffusion.methods import METHODS

    folder, row = _located(recipe.model.name, recipe.model.revision, "model_index.json")
    try:
        parts = pipeline(folder, row)
    except ModelSizeError as err:
        raise PlanError(f"model {recipe.model.name!r}: {err}") from None
    if "transformer" not in parts:
        raise PlanError(f"model {recipe.model.name!r}: the plan sizes transformer denoisers (SD3, FLUX), not "
                        f"{', '.join(parts)}")  # fmt: skip
    denoiser: Counted = parts["transformer"]
    parts = {name: c for name, c in parts.items() if name != "transformer"}
    tr, alg, config = recipe.training, recipe.algorithm, denoiser.config
    targets = tr.lora.target_modules or _default_lora_targets()
    adapter = lora_params(denoiser.module, targets, tr.lora.r) if tr.lora.enabled else 0
    trainable = adapter or denoiser.params
    latent = parts["vae"].config["latent_channels"] if "vae" in parts else 16
    patch = config["patch_size"] * round((config["in_channels"] // latent) ** 0.5)
    resolution = recipe.model.resolution or 8 * config.get("sample_size", 128)
    image_tokens = (resolution // 8 // patch) ** 2
    text_tokens = _text_tokens(denoiser.architecture, recipe.model.max_sequence_length)
    settings = alg.settings(METHODS.get(alg.method))
    passes = 2 if settings.guidance_scale != 1.0 and not settings.detach_uncond else 1
    hidden = config["num_attention_heads"] * config["attention_head_dim"]
    layers = config["num_layers"] + config.get("num_single_layers", 0)
    stack = Stack("transformer", layers, hidden, 4 * hidden, hidden, 2,
                  tr.train_batch_size * passes * (image_tokens + text_tokens))  # fmt: skip
    # the engine loads the pipeline in float32 and casts only the VAE to model.dtype (zoo/engines/diffusion/setup.py)
    frozen_bytes = sum(c.params * (_BYTES[recipe.model.dtype] if name == "vae" else 4) for name, c in parts.items())
    return Workload(
        recipe=recipe.name, engine=recipe.engine, model=f"{denoiser.architecture} (config: {denoiser.source})",
        params=denoiser.params, trainable=trainable, adapter=adapter, weight_bytes=4, trained_bytes=4,
        reference=denoiser.params if alg.beta > 0 and not adapter else 0, reference_bytes=4,
        reference_sharded=False, ema=trainable if tr.ema_decay is not None else 0,
        frozen_bytes=frozen_bytes,
        frozen={name: c.params for name, c in parts.items()}, stacks=(stack,), logits=0, checkpointing=False,
        blocks=block_sizes(denoiser.module), no_split=tuple(getattr(denoiser.module, "_no_split_modules", None) or ()),
        assumptions={"resolution": resolution, "image tokens": image_tokens, "text tokens": text_tokens,
                     "guided passes with gradients": passes,
                     "frozen dtypes": f"text encoders float32, vae {recipe.model.dtype}"},
    )  # fmt: skip


def _text_tokens(architecture: str, max_sequence_length: int | None) -> int:
    """The prompt tokens the transformer attends to: T5's (the pipeline's default length unless the recipe caps
    it), and for SD3 the 77 CLIP tokens concatenated before them (diffusers' ``encode_prompt``)."""
    import inspect

    import diffusers

    pipe = diffusers.StableDiffusion3Pipeline if architecture.startswith("SD3") else diffusers.FluxPipeline
    t5 = max_sequence_length or inspect.signature(pipe.__call__).parameters["max_sequence_length"].default
    return t5 + (77 if architecture.startswith("SD3") else 0)


def _default_lora_targets() -> tuple[str, ...]:
    """The projections the diffusion engine adapts when a recipe names none (``DiffusionModel.lora_targets``)."""
    from zoo.engines.diffusion.models import _TRANSFORMER_LORA_TARGETS

    return _TRANSFORMER_LORA_TARGETS
