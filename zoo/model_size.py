"""How many parameters a recipe's models have, and their shapes, without loading a weight or using the network.

Every count comes from instantiating the architecture on the meta device (``torch.device("meta")``: shapes without
storage) and summing ``numel``. The architecture's config comes from files on this machine when they are there (a
local directory, a checkpoint shipped in ``checkpoints/``, or the Hugging Face cache, read with
``local_files_only``), else from :data:`KNOWN`, the ``config.json`` values of the architectures the shipped recipes
train, each row citing the file it copies. Diffusion pipelines are read the same way, component by component from
``model_index.json``: the trained transformer or UNet and the frozen text encoders and VAE every process keeps.

A model folder may be handed over, and ``--plan`` reads it before anything else does: every config is read through
:func:`zoo.model_files.read_json` (a regular file under its size cap), held to :func:`check_config_bounds` (layer
counts, widths, vocabularies no released model exceeds) and built only from a transformers or diffusers model class,
each refusal one sentence naming the file (review-reliability 8.4).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_QWEN25_VL_VISION = {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16, "patch_size": 14,
                     "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 112,
                     "fullatt_block_indexes": [7, 15, 23, 31]}  # fmt: skip
_CLIP_L = {"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12, "num_hidden_layers": 12,
           "projection_dim": 768, "vocab_size": 49408, "max_position_embeddings": 77, "hidden_act": "quick_gelu"}  # fmt: skip
_CLIP_G = {"hidden_size": 1280, "intermediate_size": 5120, "num_attention_heads": 20, "num_hidden_layers": 32,
           "projection_dim": 1280, "vocab_size": 49408, "max_position_embeddings": 77, "hidden_act": "gelu"}  # fmt: skip
_T5_XXL = {"d_model": 4096, "d_ff": 10240, "d_kv": 64, "num_heads": 64, "num_layers": 24, "vocab_size": 32128,
           "feed_forward_proj": "gated-gelu", "relative_attention_num_buckets": 32}  # fmt: skip
_VAE_16 = {"in_channels": 3, "out_channels": 3, "latent_channels": 16, "block_out_channels": [128, 256, 512, 512],
           "layers_per_block": 2, "down_block_types": ["DownEncoderBlock2D"] * 4,
           "up_block_types": ["UpDecoderBlock2D"] * 4, "use_quant_conv": False, "use_post_quant_conv": False}  # fmt: skip
#: Stable Diffusion 1.5's VAE: four latent channels, with the quant convolutions (the config leaves them at their
#: default, on).
_VAE_4 = {**_VAE_16, "latent_channels": 4, "use_quant_conv": True, "use_post_quant_conv": True}
_HF = "https://huggingface.co"

#: Architecture -> (citation, config): a transformers ``config.json`` (``model_type`` set) or a diffusers pipeline
#: (``components``: name -> (library, class, config)). Keys are matched against the model's repository id.
KNOWN: dict[str, tuple[str, dict[str, Any]]] = {
    "Qwen2.5-VL-3B": (f"{_HF}/Qwen/Qwen2.5-VL-3B-Instruct/blob/main/config.json", {
        "model_type": "qwen2_5_vl", "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
        "num_attention_heads": 16, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True,
        "torch_dtype": "bfloat16", "vision_config": {**_QWEN25_VL_VISION, "out_hidden_size": 2048}}),
    "Qwen2.5-VL-7B": (f"{_HF}/Qwen/Qwen2.5-VL-7B-Instruct/blob/main/config.json", {
        "model_type": "qwen2_5_vl", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
        "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "vision_config": {**_QWEN25_VL_VISION, "out_hidden_size": 3584}}),
    "stable-diffusion-3.5-medium": (
        f"{_HF}/stabilityai/stable-diffusion-3.5-medium/tree/main model_index.json and component config.json files", {"components": {
            "transformer": ("diffusers", "SD3Transformer2DModel", {
                "sample_size": 128, "patch_size": 2, "in_channels": 16, "num_layers": 24, "attention_head_dim": 64,
                "num_attention_heads": 24, "joint_attention_dim": 4096, "caption_projection_dim": 1536,
                "pooled_projection_dim": 2048, "out_channels": 16, "pos_embed_max_size": 384,
                "dual_attention_layers": list(range(13)), "qk_norm": "rms_norm"}),
            "text_encoder": ("transformers", "CLIPTextModelWithProjection", _CLIP_L),
            "text_encoder_2": ("transformers", "CLIPTextModelWithProjection", _CLIP_G),
            "text_encoder_3": ("transformers", "T5EncoderModel", _T5_XXL),
            "vae": ("diffusers", "AutoencoderKL", _VAE_16)}}),
    "FLUX.1-dev": (
        f"{_HF}/black-forest-labs/FLUX.1-dev/tree/main model_index.json and the component config.json files", {"components": {
            "transformer": ("diffusers", "FluxTransformer2DModel", {
                "patch_size": 1, "in_channels": 64, "num_layers": 19, "num_single_layers": 38,
                "attention_head_dim": 128, "num_attention_heads": 24, "joint_attention_dim": 4096,
                "pooled_projection_dim": 768, "guidance_embeds": True, "axes_dims_rope": [16, 56, 56]}),
            "text_encoder": ("transformers", "CLIPTextModel", _CLIP_L),
            "text_encoder_2": ("transformers", "T5EncoderModel", _T5_XXL),
            "vae": ("diffusers", "AutoencoderKL", _VAE_16)}}),
    # Stable Diffusion 1.5's unet, text_encoder and vae config.json (copied at HDRJ-One/runwayml-stable-diffusion-v1-5
    # @2e7465d:unet/config.json, @c612408:text_encoder/config.json, @c448ce0:vae/config.json; the unet's architecture
    # as bigdataai-lab/stable-diffusion-v1-5@3beed0b:unet/config.json) with the LCM student's time_cond_proj_dim 256:
    # the student is its teacher's UNet plus that input (luosiallen/latent-consistency-model@a9ad795:
    # LCM_Training_Script/consistency_distillation/train_lcm_distill_sd_wds.py:857-860), which RLCM feeds a 256-wide
    # guidance embedding (Owen-Oertell/rlcm@b8330ed:lcm_rl_pytorch/core/ppo_training_loop.py:175-177). zoo: the
    # release's own files are not readable offline, so sample_size is SD 1.5's 64.
    "LCM_Dreamshaper_v7": (
        f"{_HF}/SimianLuo/LCM_Dreamshaper_v7 as Stable Diffusion 1.5's configs with time_cond_proj_dim 256 "
        "(zoo/model_size.py: KNOWN)", {"components": {
            "unet": ("diffusers", "UNet2DConditionModel", {
                "sample_size": 64, "in_channels": 4, "out_channels": 4, "layers_per_block": 2,
                "block_out_channels": [320, 640, 1280, 1280],
                "down_block_types": ["CrossAttnDownBlock2D"] * 3 + ["DownBlock2D"],
                "up_block_types": ["UpBlock2D"] + ["CrossAttnUpBlock2D"] * 3, "cross_attention_dim": 768,
                "attention_head_dim": 8, "norm_num_groups": 32, "use_linear_projection": False,
                "time_cond_proj_dim": 256}),
            "text_encoder": ("transformers", "CLIPTextModel", _CLIP_L),
            "vae": ("diffusers", "AutoencoderKL", _VAE_4)}}),
}  # fmt: skip


#: Most layers (or blocks) one config entry may ask for: the deepest released models have about 130, and building
#: costs time and memory linear in them even on the meta device (20,000 layers: 63 s and 1.6 GB).
MAX_LAYERS = 1024
#: Largest width (hidden, intermediate, head, channel, patch sizes): released models stay under ~55,000 (Llama 3.1
#: 405B's intermediate size is 53,248).
MAX_WIDTH = 1 << 17
#: Largest vocabulary (Gemma 3's 262,208 tokens are among the largest).
MAX_VOCAB = 1 << 21
_LAYERS = re.compile(r"(^|_)(layers?|depth|blocks?|layers_per_block)$")
_WIDTHS = re.compile(r"(^|_)(size|dim|d_model|d_ff|d_kv|channels|heads|width)$")


class ModelSizeError(ValueError):
    """The model cannot be sized offline (not on this machine and not an architecture of :data:`KNOWN`), or its
    config is not one the zoo builds (a class that is not a model, sizes beyond any released model)."""


def check_config_bounds(config: dict[str, Any], where: str) -> None:
    """Refuse a config (nested ones included) asking for more layers, wider layers or a larger vocabulary than
    :data:`MAX_LAYERS`, :data:`MAX_WIDTH`, :data:`MAX_VOCAB`, before anything is built from it."""
    for key, value in config.items():
        if isinstance(value, dict):
            check_config_bounds(value, f"{where}: {key}")
            continue
        numbers = [v for v in (value if isinstance(value, list) else [value]) if type(v) is int]
        if key.endswith("vocab_size"):
            bound, what = MAX_VOCAB, "tokens"
        elif _LAYERS.search(key):
            bound, what = MAX_LAYERS, "layers"
        elif _WIDTHS.search(key):
            bound, what = MAX_WIDTH, "wide"
        elif key.endswith("_types") and isinstance(value, list):  # one block built per entry (diffusers' block types)
            numbers, bound, what = [len(value)], MAX_LAYERS, "blocks"
        else:
            continue
        if any(not 0 <= n <= bound for n in numbers):
            raise ModelSizeError(f"{where}: {key} = {value if len(str(value)) < 80 else str(value)[:80] + '...'} asks "
                                 f"for more than {bound:,} {what} (or a negative size), beyond any released model; "
                                 "it was not built")  # fmt: skip


def _config(file: Path) -> dict[str, Any]:
    """A model folder's config file, size-capped, a JSON object within :func:`check_config_bounds`."""
    from zoo.model_files import read_json

    data = read_json(file)
    if not isinstance(data, dict):
        raise ModelSizeError(f"{file} holds a JSON {type(data).__name__}; a model config is an object")
    check_config_bounds(data, str(file))
    return data


@dataclass(frozen=True)
class Counted:
    """One model instantiated on the meta device, summarised."""

    architecture: str
    """Its class name (``Qwen2_5_VLForConditionalGeneration``, ``FluxTransformer2DModel``)."""
    source: str
    """Where its config came from: a path on this machine, or a :data:`KNOWN` row's citation."""
    params: int
    """Parameters (tied weights once)."""
    config: Any
    """The config object it was built from (transformers ``PretrainedConfig`` or a diffusers config dict)."""
    module: Any
    """The meta-device module itself (no storage): for LoRA matching and block sizes."""


def instantiate(library: str, class_name: str, config: dict[str, Any] | Any) -> Any:
    """``class_name`` of ``library`` (``transformers`` or ``diffusers``) built from ``config`` on the meta device."""
    import torch

    if library not in ("transformers", "diffusers"):
        raise ModelSizeError(f"component library {library!r}: only transformers and diffusers models can be sized")
    module = __import__(library)
    cls = getattr(module, class_name, None) if isinstance(class_name, str) and class_name.isidentifier() else None
    if cls is None:
        raise ModelSizeError(f"{library} has no class {class_name!r} (installed {library} {module.__version__})")
    model_class = module.PreTrainedModel if library == "transformers" else module.ModelMixin
    if not (isinstance(cls, type) and issubclass(cls, model_class)):  # AutoModel, a pipeline, a function
        raise ModelSizeError(f"{library}.{class_name} is not a {library} model class (a {model_class.__name__}); "
                             "a component names the model it holds, e.g. CLIPTextModel or AutoencoderKL")  # fmt: skip
    with torch.device("meta"):
        if library == "diffusers":
            return cls.from_config(config)
        if isinstance(config, dict):
            config = cls.config_class(**config)
        return cls._from_config(config) if hasattr(cls, "_from_config") else cls(config)


def count(module: Any) -> int:
    """Parameters of ``module``, a weight tied to another counted once (``parameters()`` deduplicates)."""
    return sum(p.numel() for p in module.parameters())


def buffer_bytes(module: Any) -> int:
    """Bytes of ``module``'s buffers as built (on the meta device too: a buffer keeps its dtype there), e.g. SD3.5's
    0.23 B-element fixed position embedding: every process holds them whole (FSDP shards parameters only)."""
    return sum(b.numel() * b.element_size() for b in module.buffers())


def known_row(*names: str | None) -> str | None:
    """The :data:`KNOWN` key one of ``names`` (a repository id, an entry's base model) contains, case aside."""
    for name in names:
        for key in KNOWN:
            if name and key.lower() in name.lower():
                return key
    return None


@functools.cache
def vlm(config_dir: Path | None, row: str | None) -> Counted:
    """The VLM policy from ``config_dir``'s ``config.json``, else the :data:`KNOWN` row ``row`` (cached: every recipe
    on the same base model shares one meta instantiation)."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    if config_dir is not None:
        values, source = _config(config_dir / "config.json"), str(config_dir)
        if not isinstance(values.get("model_type"), str):
            raise ModelSizeError(f"{config_dir / 'config.json'} names no model_type; transformers needs it to build "
                                 "the model")  # fmt: skip
        config = AutoConfig.for_model(**{**values, "name_or_path": source})
    elif row is not None:
        source, values = KNOWN[row]
        config = AutoConfig.for_model(**values)
    else:
        raise ModelSizeError("no config.json on this machine and no known architecture")
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    return Counted(type(model).__name__, source, count(model), config, model)


@functools.cache
def pipeline(index_dir: Path | None, row: str | None) -> dict[str, Counted]:
    """A diffusion pipeline's sized components (``transformer`` or ``unet``, text encoders, ``vae``), from
    ``index_dir``'s ``model_index.json`` and component configs, else from the :data:`KNOWN` row ``row``."""
    components: dict[str, tuple[str, str, Any]] = {}
    if index_dir is not None:
        index = _config(index_dir / "model_index.json")
        for name, spec in index.items():
            folder = index_dir / name / "config.json"
            if (
                isinstance(spec, list)
                and len(spec) == 2
                and folder.is_file()
                and spec[0] in ("transformers", "diffusers")
            ):
                components[name] = (spec[0], spec[1], _config(folder))
        source = str(index_dir)
    elif row is not None:
        source, values = KNOWN[row]
        components = dict(values["components"])
    else:
        raise ModelSizeError("no model_index.json on this machine and no known pipeline")
    out = {}
    for name, (library, class_name, config) in components.items():
        module = instantiate(library, class_name, config)
        out[name] = Counted(class_name, f"{source} ({name})", count(module), getattr(module, "config", config), module)
    return out


def block_sizes(module: Any) -> dict[str, tuple[int, int]]:
    """Class name -> (parameters of its largest instance, parameters in all its instances) inside ``module``: the
    shard units of FSDP and ZeRO-3, and what stays outside them."""
    sizes: dict[str, tuple[int, int]] = {}
    for sub in module.modules():
        name, n = type(sub).__name__, count(sub)
        largest, total = sizes.get(name, (0, 0))
        sizes[name] = (max(largest, n), total + n)
    return sizes


def offline_dir(name: str, revision: str | None, marker: str) -> tuple[Path | None, str | None, str | None]:
    """``(folder holding marker, repository id, entry base model)`` for a model name, never downloading.

    The folder is the name itself when it is a directory, the checkpoint shipped in ``checkpoints/`` for an entry,
    or the snapshot in the Hugging Face cache that holds ``marker`` (``config.json``, ``model_index.json``);
    ``None`` when none of them is on this machine."""
    from huggingface_hub import try_to_load_from_cache

    from zoo.hub import CHECKPOINTS_DIR, lookup

    named = lookup(name)
    if named.directory is not None:
        return (named.directory if (named.directory / marker).is_file() else None), None, None
    entry = named.entry or _entry_of_repo(named.repo_id)
    repo_id = entry.repo_id if entry is not None else named.repo_id
    base = entry.base_model if entry is not None else None
    if entry is not None and (CHECKPOINTS_DIR / entry.name / marker).is_file():
        return CHECKPOINTS_DIR / entry.name, repo_id, base
    if repo_id is None:
        return None, repo_id, base
    found = try_to_load_from_cache(repo_id, marker, revision=revision or (entry.revision if entry else None))
    return (Path(found).parent if isinstance(found, str) else None), repo_id, base


def _entry_of_repo(repo_id: str | None) -> Any:
    """The registry entry whose repository is ``repo_id`` (a recipe may name ``DocTron/MSRL-SFT`` by its id), if any."""
    from zoo.registry import info, list_models

    return next((info(n) for n in list_models() if repo_id and info(n).repo_id == repo_id), None)
