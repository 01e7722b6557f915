"""The ``vlm-verl`` engine (``zoo train RECIPE --engine vlm-verl``): write what verl 0.9.1 needs, then launch it.

Written into ``<output_dir>/verl/``:

* ``train.parquet`` — one row per :class:`~zoo.data.Sample` in the layout of verl's
  ``RLHFDataset`` (``verl/utils/dataset/rl_dataset.py``): ``prompt`` (chat messages whose user
  text starts with one ``<image>`` placeholder per image, which verl expands into image blocks),
  ``images`` (``{bytes, min_pixels, max_pixels}``: the image and the pixel limits verl resizes it within),
  ``data_source`` (the name the reward module
  scores with), ``ability``, ``reward_model = {style, ground_truth}`` (ground truth = the sample's
  target as a JSON object string) and ``extra_info`` (``index``, ``split``, ``sample_id`` and the
  sample's scalar ``meta``);
* ``reward_fn.py`` — verl's ``custom_reward_function``: registers the recipe's weighted reward
  under ``data_source`` and re-exports :func:`rewards.verl_hook.compute_score`, so verl scores
  with the same zoo reward the TRL engine uses;
* ``verl_args.yaml`` / ``run_verl.sh`` — the Hydra overrides for ``python -m
  verl.trainer.main_ppo`` (algorithm, clips, KL, batch, rollout, reward, trainer), with zoo's
  estimator and loss (``algorithm.adv_estimator=zoo_grpo``, ``policy_loss.loss_mode=zoo_vanilla``)
  registered by :mod:`zoo.engines.vlm.verl_plugin`, which every verl process imports through
  ``VERL_USE_EXTERNAL_MODULES``, and the data settings that depend on the model (:func:`prompt_data`):
  ``data.max_prompt_length`` is the longest exported prompt, image tokens included, counted as verl counts it
  (:func:`prompt_tokens`; an upper bound when the model's processor is not on this machine), and verl may not
  drop a prompt that is longer: its rollout stops with an error instead.

Not exported: a loss type's per-sample weight (GUI-G1's ``rate``; verl's policy-loss API receives no
per-sample metadata), so such a recipe runs in verl with its aggregation (token sum / 64) but weight 1;
and a learning-rate schedule verl lacks (``linear``: verl schedules constant or cosine, :func:`lr_schedule`),
run at a constant rate. The export logs a warning for each.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zoo.engines.vlm.contract import with_contract
from zoo.engines.vlm.recipe import VerlRecipe
from zoo.recipe import RecipeError
from zoo.rl.losses import POLICY_LOSSES

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'rl-model-zoo[verl]'   # verl==0.9.1, on a machine with CUDA GPUs"
PLUGIN_MODULE = "zoo.engines.vlm.verl_plugin"
_KL = {"k1": "kl", "k2": "mse", "k3": "low_var_kl"}
_NO_DUAL_CLIP = 1e9  # verl requires clip_ratio_c > 1; this large value switches the dual clip off
#: qwen-vl-utils resizes to multiples of patch x 2 whatever the model merges (qwen_vl_utils 0.0.14: vision_process.py:25)
_QWEN_VL_UTILS_MERGE = 2


def train(recipe: VerlRecipe, output_dir: Path, *, resume: bool = False, dry_run: bool = False) -> Path:
    """Export ``recipe`` to ``output_dir/verl`` and, unless ``dry_run``, launch verl; returns ``output_dir``.

    ``resume`` is verl's own: its trainer resumes from ``trainer.default_local_dir`` by default.
    """
    folder = export(recipe, output_dir)
    if dry_run:
        logger.info("verl files written to %s (dry run; launch with %s)", folder, folder / "run_verl.sh")
        return output_dir
    try:
        import verl  # noqa: F401
    except ImportError:
        raise RuntimeError(
            f"--engine verl needs verl, which is not installed here. Install it with:\n  {INSTALL_HINT}\n"
            f"or run the exported files on the cluster: bash {folder / 'run_verl.sh'}"
        ) from None
    env = {**os.environ, **_env()}
    subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", *overrides_list(folder)], check=True, env=env)
    return output_dir


def export(recipe: VerlRecipe, output_dir: Path) -> Path:
    """Write parquet, reward module, overrides and launch script; returns the ``verl`` folder."""
    folder = Path(output_dir).resolve() / "verl"
    folder.mkdir(parents=True, exist_ok=True)
    source = data_source(recipe)
    contract = recipe.model.contract()  # looked up once, not per sample
    samples = [with_contract(s, contract) for s in recipe.data.load()]
    rows = parquet_rows(samples, source, ability=recipe.data.name, system=recipe.data.system_prompt)
    if not rows:
        raise RecipeError("the dataset yielded no samples; check data.name / data.kwargs in the recipe")
    model = model_path(recipe, folder, samples)
    images = image_settings(recipe, model)
    longest = max(prompt_tokens(row, images) for row in rows)
    logger.info("data.max_prompt_length=%d: the longest of the %d prompts, image tokens included", longest, len(rows))
    write_parquet(rows, folder / "train.parquet", images)
    write_reward_module(recipe, folder / "reward_fn.py", source)
    args = verl_overrides(recipe, folder, model, images, longest)
    (folder / "verl_args.yaml").write_text(_yaml(args))
    script = folder / "run_verl.sh"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in _env().items())
    lines = " \\\n  ".join(shlex.quote(f"{k}={v}") for k, v in args.items())
    script.write_text(f"#!/usr/bin/env bash\n# Generated by `zoo train --engine verl` for recipe {recipe.name!r}.\n"
                      f"set -euo pipefail\n{exports} python -m verl.trainer.main_ppo \\\n  {lines} \"$@\"\n")
    script.chmod(0o755)
    return folder


def data_source(recipe: VerlRecipe) -> str:
    """The reward name verl passes back as ``data_source``: the reward itself when it is one term of
    weight 1, else a recipe-specific name the reward module registers."""
    if len(recipe.rewards) == 1 and recipe.rewards[0].weight == 1.0 and not recipe.rewards[0].kwargs:
        return recipe.rewards[0].name
    return f"recipe-{recipe.name}"


def parquet_rows(samples: list, source: str, ability: str, system: str | None = None) -> list[dict[str, Any]]:
    """verl ``RLHFDataset`` rows for ``samples`` (images still PIL; see :func:`write_parquet`)."""
    from zoo.engines.vlm.trl_data import _open, prompt_messages

    rows = []
    for index, sample in enumerate(samples):
        messages = prompt_messages(sample, system)
        user = next(i for i, m in enumerate(messages) if m["role"] == "user")
        messages[user] = {"role": "user", "content": "<image>" * len(sample.images) + messages[user]["content"]}
        rows.append({
            "data_source": source,
            "prompt": messages,
            "images": [_open(image) for image in sample.images],
            "ability": ability,
            "reward_model": {"style": "rule", "ground_truth": json.dumps(sample.target, sort_keys=True)},
            "extra_info": {"index": index, "split": "train", "sample_id": sample.id, **_scalar_meta(sample.meta)},
        })
    return rows


def _scalar_meta(meta: dict[str, Any]) -> dict[str, Any]:
    # Arrow needs one struct type per column: keep scalars, JSON-encode the rest.
    return {k: v if isinstance(v, str | int | float | bool) or v is None else json.dumps(v) for k, v in meta.items()}


def write_parquet(rows: list[dict[str, Any]], path: Path, images: ImageSettings) -> Path:
    """Write ``rows`` with each image as ``{bytes, min_pixels, max_pixels}``, so the recipe's pixel limits reach
    verl's first resize: its dataset spreads an image struct into the image block (the verl==0.9.1 wheel:
    verl/utils/dataset/rl_dataset.py:340-342) that qwen-vl-utils resizes within the block's own limits instead of
    its defaults of 4 and 16384 tokens (qwen_vl_utils 0.0.14: vision_process.py:131-132)."""
    from datasets import Dataset
    from datasets.features.image import image_to_bytes

    limits = {"min_pixels": images.min_pixels, "max_pixels": images.max_pixels}
    encoded = [{**row, "images": [{"bytes": image_to_bytes(im), **limits} for im in row["images"]]} for row in rows]
    Dataset.from_list(encoded).to_parquet(str(path))
    return path


@dataclass(frozen=True)
class ImageSettings:
    """How verl sees the export's images: the model's patch and merge sizes and the pixel limits both of verl's
    resizes use (qwen-vl-utils', then the processor's), and the processor that counts prompt tokens, if on this
    machine."""

    patch_size: int
    """The vision tower's patch (14 for Qwen2.5-VL, 16 for Qwen3-VL); verl's dataset reads ``data.image_patch_size``
    (default 14: verl/trainer/config/data/legacy_data.yaml:77) before the processor's (rl_dataset.py:113-114)."""
    merge_size: int
    """Patches merged into one token per side (2 for Qwen-VL)."""
    min_pixels: int
    """Smallest image area: the recipe's or its entry's, else the processor's own, else qwen-vl-utils' 4 tokens."""
    max_pixels: int
    """Largest image area: the recipe's or its entry's, else the processor's own, else qwen-vl-utils' 16384 tokens."""
    processor: Any = None
    """The model's processor when it is on this machine (a ``tiny:`` model, a directory, the Hugging Face cache);
    without it prompt lengths are upper bounds (:func:`prompt_tokens`)."""


def image_settings(recipe: VerlRecipe, model: str) -> ImageSettings:
    """The :class:`ImageSettings` of ``model`` (what :func:`model_path` returned) for ``recipe``: from its processor,
    read offline, else from its ``config.json`` or the architecture :data:`zoo.model_size.KNOWN` lists."""
    from transformers import AutoProcessor

    from zoo.engines.vlm.policy_model import pixel_limits
    from zoo.model_size import ModelSizeError, known_row, offline_dir, vlm

    name, revision = recipe.model.name, recipe.model.revision
    folder = Path(model) if Path(model).is_dir() else offline_dir(name, revision, "preprocessor_config.json")[0]
    processor = None
    if folder is not None:
        try:
            processor = AutoProcessor.from_pretrained(str(folder), trust_remote_code=recipe.model.trust_remote_code)
        except OSError as err:  # a partial snapshot: counted as when nothing is here
            logger.info("no processor for %r in %s (%s)", name, folder, err)
    if processor is not None:
        ip = processor.image_processor
        patch, merge, own = int(ip.patch_size), int(ip.merge_size), (ip.size["shortest_edge"], ip.size["longest_edge"])
    else:
        config_dir, repo_id, base = offline_dir(name, revision, "config.json")
        try:
            vision = vlm(config_dir, None if config_dir else known_row(repo_id, base, name)).config.vision_config
        except ModelSizeError:
            raise RecipeError(f"model.name={name!r}: neither its processor nor its config.json is on this machine, and "
                              "it is not an architecture zoo.model_size.KNOWN lists; the export sizes verl's prompts "
                              f"from them: download them first (`hf download {repo_id or name} --include '*.json'`)"
                              ) from None  # fmt: skip
        patch, merge, own = int(vision.patch_size), int(vision.spatial_merge_size), (None, None)
        logger.warning("the processor of %r is not on this machine: data.max_prompt_length is an upper bound (image "
                       "tokens from the image sizes and pixel limits, text at one token per byte)", name)  # fmt: skip
    factor = patch * _QWEN_VL_UTILS_MERGE
    low, high = pixel_limits(recipe)
    return ImageSettings(patch, merge, low or own[0] or 4 * factor**2, high or own[1] or 16384 * factor**2, processor)


def prompt_tokens(row: dict[str, Any], images: ImageSettings) -> int:
    """Tokens of one parquet ``row``'s prompt, image tokens included, as verl's ``RLHFDataset`` counts them when it
    filters (rl_dataset.py:206-244: the chat template over the messages verl builds, the images resized).

    With the processor, the exact count without decoding a pixel: the text through its chat template and tokenizer,
    each image placeholder expanded to :func:`image_tokens`, as Qwen's processors expand it (transformers 5.10.4:
    models/qwen2_5_vl/processing_qwen2_5_vl.py:61-62). Without it, an upper bound: one token per UTF-8 byte of the
    text in Qwen-VL's ChatML (a byte-level BPE token spans at least one byte), its default system prompt included.
    """
    tokens = sum(image_tokens(image.size, images) for image in row["images"])
    messages = row["prompt"]
    if images.processor is None:
        return tokens + len(_chatml(messages, len(row["images"])).encode())
    if row["images"]:  # verl turns string contents into blocks only for a row with images (rl_dataset.py:320-356)
        messages = [{**m, "content": [{"type": "image"} if part == "<image>" else {"type": "text", "text": part}
                                      for part in re.split("(<image>)", m["content"]) if part]} for m in messages]  # fmt: skip
    text = images.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = images.processor.tokenizer(text)["input_ids"]
    return tokens + len(ids) - ids.count(images.processor.image_token_id)


def image_tokens(size: tuple[int, int], images: ImageSettings) -> int:
    """Tokens of one ``(width, height)`` image in verl: qwen-vl-utils resizes it first (vision_process.py:100, 131-138,
    reproduced by :func:`zoo_common.coords.resized_size_for`), then the processor, whose image processor counts the
    patches as vLLM asks it to (``get_number_of_image_patches``), or without the processor the same smart-resize rule
    at the model's patch x merge."""
    from zoo_common.coords import resized_size_for

    limits = {"min_pixels": images.min_pixels, "max_pixels": images.max_pixels}
    width, height = resized_size_for(size, images.patch_size * _QWEN_VL_UTILS_MERGE, **limits)
    if images.processor is not None:
        patches = images.processor.image_processor.get_number_of_image_patches(height, width, limits)
    else:
        width, height = resized_size_for((width, height), images.patch_size * images.merge_size, **limits)
        patches = width * height // images.patch_size**2
    return patches // images.merge_size**2


def _chatml(messages: list[dict[str, str]], n_images: int) -> str:
    """``messages`` as Qwen-VL's ChatML template writes them (a system prompt first when none is given, each image a
    vision block), for :func:`prompt_tokens`' byte bound."""
    system = [] if messages[0]["role"] == "system" else ["<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"]
    turns = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    return "".join([*system, *turns, "<|vision_start|><|image_pad|><|vision_end|>" * n_images, "<|im_start|>assistant\n"])


def write_reward_module(recipe: VerlRecipe, path: Path, source: str) -> Path:
    """A module verl loads as ``custom_reward_function``; it scores with the recipe's zoo reward(s)."""
    terms = [(spec.name, spec.weight, dict(spec.kwargs)) for spec in recipe.rewards]
    path.write_text(
        f'"""verl reward for recipe {recipe.name!r}, generated by `zoo train --engine verl`.\n\n'
        "verl calls compute_score(data_source, solution_str, ground_truth, extra_info); it is\n"
        "rewards.verl_hook.compute_score, scoring with the reward registered under data_source.\n"
        '"""\n\n'
        "from rewards.verl_hook import compute_score  # noqa: F401\n"
        "from zoo.engines.vlm.verl_engine import register_recipe_reward\n\n"
        f"register_recipe_reward({source!r}, {terms!r})\n"
    )
    return path


def register_recipe_reward(source: str, terms: list[tuple[str, float, dict[str, Any]]]) -> None:
    """Register the weighted sum of ``terms`` as ``source`` (no-op when ``source`` is one plain reward)."""
    from rewards.base import REWARDS, WeightedSum, register
    from zoo.recipe import RewardSpec

    if len(terms) == 1 and terms[0][0] == source:
        return
    if source not in REWARDS:
        parts = [(RewardSpec(n, w, kw).build(), w) for n, w, kw in terms]
        register(source, WeightedSum(parts, name=source))


def model_path(recipe: VerlRecipe, folder: Path, samples: list) -> str:
    """What verl loads as ``actor_rollout_ref.model.path``: a local directory or a Hub repo id
    (a ``tiny:*`` model is built from ``samples`` and saved into ``folder/model``)."""
    name = recipe.model.name
    if name.startswith("tiny:"):
        from zoo.engines.vlm.policy_model import load_policy

        model, processor = load_policy(recipe, samples)
        target = folder / "model"
        model.save_pretrained(target)
        processor.save_pretrained(target)
        return str(target)
    from zoo.hub import lookup

    named = lookup(name)
    if named.directory is not None:  # checked as zoo.load checks it: safetensors, no unasked-for code
        from zoo.engines.vlm.policy_model import policy_source

        return policy_source(recipe)[0]
    if named.repo_id is not None:  # a Hub base model that is not a zoo entry (Qwen/Qwen2.5-VL-7B-Instruct)
        return named.repo_id
    assert named.entry is not None
    if named.entry.repo_id is None:
        raise RecipeError(f"model {name!r} has no Hub repository for verl to load; give a local directory")
    return named.entry.repo_id


def verl_overrides(
    recipe: VerlRecipe, folder: Path, model: str, images: ImageSettings, max_prompt_length: int
) -> dict[str, str]:
    """Hydra overrides for verl 0.9.1 ``main_ppo`` (keys of ``trainer/config/ppo_trainer.yaml``); ``images`` and
    ``max_prompt_length`` size the prompts (:func:`prompt_data`)."""
    alg, tr, eng = recipe.algorithm, recipe.training, recipe.verl
    loss = alg.loss
    if loss.sample_weight is not None:
        logger.warning("loss_type %r weights samples by meta[%r]; verl's loss API has no per-sample weight, so "
                       "the verl run uses weight 1", loss.name, loss.sample_weight)  # fmt: skip
    scale = loss.scale(alg.max_completion_length)
    clip_low, clip_high = alg.clips()
    prompts_per_step = tr.batch_size * tr.grad_accum // alg.num_generations * eng.n_gpus_per_node * eng.nnodes
    actor = "actor_rollout_ref.actor"
    args = {
        "data.train_files": str(folder / "train.parquet"),
        "data.val_files": str(folder / "train.parquet"),
        "data.prompt_key": "prompt",
        "data.image_key": "images",
        "data.max_response_length": alg.max_completion_length,
        "data.train_batch_size": prompts_per_step,
        "data.return_multi_modal_inputs": True,
        "data.seed": tr.seed,
        "data.shuffle": tr.shuffle,
        **prompt_data(images, max_prompt_length),
        "algorithm.adv_estimator": "zoo_" + alg.adv_estimator.replace("-", "_"),
        "algorithm.norm_adv_by_std_in_grpo": alg.normalize_std,
        "algorithm.use_kl_in_reward": False,
        "algorithm.filter_groups.enable": alg.dynamic_sampling,
        "actor_rollout_ref.model.path": model,
        "actor_rollout_ref.model.lora_rank": tr.lora.r if tr.lora.enabled else 0,
        "actor_rollout_ref.model.lora_alpha": tr.lora.alpha,
        f"{actor}.optim.lr": tr.lr,
        f"{actor}.optim.weight_decay": tr.weight_decay,
        **{f"{actor}.optim.{k}": v for k, v in lr_schedule(tr.lr_scheduler, tr.warmup_steps).items()},
        f"{actor}.optim.clip_grad": tr.max_grad_norm,
        f"{actor}.ppo_mini_batch_size": prompts_per_step,
        f"{actor}.ppo_micro_batch_size_per_gpu": tr.batch_size,
        f"{actor}.ppo_epochs": alg.num_iterations,
        f"{actor}.freeze_vision_tower": tr.freeze_vision,
        f"{actor}.policy_loss.loss_mode": "zoo_" + POLICY_LOSSES.canonical(loss.loss),
        f"{actor}.loss_agg_mode": loss.aggregation,
        f"{actor}.clip_ratio_low": clip_low,
        f"{actor}.clip_ratio_high": clip_high,
        f"{actor}.clip_ratio_c": alg.dual_clip if alg.dual_clip is not None else _NO_DUAL_CLIP,
        f"{actor}.use_kl_loss": alg.beta > 0,
        f"{actor}.kl_loss_coef": alg.beta,
        f"{actor}.kl_loss_type": _KL[alg.kl_estimator],
        f"{actor}.entropy_coeff": 0,
        "actor_rollout_ref.rollout.name": eng.rollout,
        "actor_rollout_ref.rollout.n": alg.num_generations,
        "actor_rollout_ref.rollout.temperature": alg.temperature,
        "actor_rollout_ref.rollout.top_p": alg.top_p,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": tr.batch_size,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": tr.batch_size,
        "reward.custom_reward_function.path": str(folder / "reward_fn.py"),
        "reward.custom_reward_function.name": "compute_score",
        "trainer.project_name": "zoo",
        "trainer.experiment_name": recipe.name,
        "trainer.nnodes": eng.nnodes,
        "trainer.n_gpus_per_node": eng.n_gpus_per_node,
        "trainer.total_training_steps": tr.steps,
        "trainer.save_freq": tr.save_steps,
        "trainer.test_freq": -1,
        "trainer.val_before_train": False,
        "trainer.logger": "[console]",
        "trainer.default_local_dir": str(folder / "checkpoints"),
        "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES": PLUGIN_MODULE,
    }
    if scale is not None:
        args[f"{actor}.loss_scale_factor"] = scale
    args = {k: _hydra_value(v) for k, v in args.items()}
    for item in eng.overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise RecipeError(f"verl.overrides item {item!r} must look like key=value")
        args[key] = value
    return args


def prompt_data(images: ImageSettings, max_prompt_length: int) -> dict[str, Any]:
    """verl's ``data`` keys that depend on the model and the prompts (the verl==0.9.1 wheel's
    verl/trainer/config/data/legacy_data.yaml defaults in brackets).

    * ``max_prompt_length`` [512]: the longest exported prompt, image tokens included (:func:`prompt_tokens`);
      the rollout's ``prompt_length`` follows it (trainer/config/rollout/rollout.yaml:35), and a multimodal prompt
      longer than that stops the rollout with verl's own ``ValueError`` (experimental/agent_loop/agent_loop.py:353);
    * ``filter_overlong_prompts: false`` [false, the export used to set true]: the filter drops a prompt longer than
      ``max_prompt_length`` without an error, and one whose counting raises too (utils/dataset/rl_dataset.py:199-270),
      so a prompt the sizing got wrong would vanish instead of stopping the run. (``truncation: error`` [error] is
      read, rl_dataset.py:118, but nothing in 0.9.1's RL data path acts on it, so it is left alone.)
    * ``image_patch_size`` [14]: the dataset's first resize reads it before the processor's patch
      (rl_dataset.py:113-114), while the rollout uses the processor's (agent_loop.py:299): 16 for Qwen3-VL;
    * ``mm_processor_kwargs.min_pixels/max_pixels`` [{}]: the processor's resize within the recipe's limits, in the
      dataset (rl_dataset.py:238) and the rollout (agent_loop.py:243-252); the transformers image processor applies
      them when both are given (5.10.4: models/qwen2_vl/image_processing_qwen2_vl.py:132). The parquet carries the
      same limits for the first resize (:func:`write_parquet`). ``++``: the keys are new under verl's struct config.
    """
    return {
        "data.max_prompt_length": max_prompt_length,
        "data.filter_overlong_prompts": False,
        "data.image_patch_size": images.patch_size,
        "++data.mm_processor_kwargs.min_pixels": images.min_pixels,
        "++data.mm_processor_kwargs.max_pixels": images.max_pixels,
    }


def lr_schedule(scheduler: str, warmup_steps: int) -> dict[str, Any]:
    """verl's actor ``optim`` keys for transformers' ``scheduler`` (the name ``vlm-trl`` passes to TRL).

    verl 0.9.1's FSDP actor schedules ``constant`` or ``cosine``, each with a linear warm-up (the verl==0.9.1
    wheel: verl/workers/config/optimizer.py:123, ``_build_lr_scheduler`` in
    verl/workers/engine/fsdp/transformer_impl.py:503); its cosine is transformers' with ``min_lr_ratio=0``,
    ``num_cycles=0.5`` (verl/utils/torch_functional.py:712). Another schedule (``linear``) has no verl
    counterpart: the run keeps a constant rate, and a warning says so.
    """
    if scheduler in ("constant", "constant_with_warmup"):
        return {"lr_scheduler_type": "constant", "lr_warmup_steps": warmup_steps}
    if scheduler == "cosine":
        return {"lr_scheduler_type": "cosine", "lr_warmup_steps": warmup_steps, "min_lr_ratio": 0.0, "num_cycles": 0.5}
    logger.warning("training.lr_scheduler=%r has no counterpart in verl 0.9.1 (constant or cosine): the verl run "
                   "keeps a constant learning rate after %d warm-up steps", scheduler, warmup_steps)  # fmt: skip
    return {"lr_scheduler_type": "constant", "lr_warmup_steps": warmup_steps}


def overrides_list(folder: Path) -> list[str]:
    """The ``key=value`` list stored in ``verl_args.yaml``."""
    import yaml

    return [f"{k}={v}" for k, v in yaml.safe_load((folder / "verl_args.yaml").read_text()).items()]


def _env() -> dict[str, str]:
    return {"VERL_USE_EXTERNAL_MODULES": PLUGIN_MODULE}


def _hydra_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _yaml(args: dict[str, str]) -> str:
    import yaml

    return yaml.safe_dump(args, sort_keys=False, width=200)
