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
  ``VERL_USE_EXTERNAL_MODULES``, and the data settings that depend on the model (:func:`~zoo.engines.vlm.verl_prompts.prompt_data`):
  ``data.max_prompt_length`` is the recipe's, else the longest exported prompt, image tokens included, counted as verl
  counts it (:func:`~zoo.engines.vlm.verl_prompts.prompt_limit`; an upper bound when the model's processor is not on
  this machine), and verl may not drop a prompt that is longer: its rollout stops with an error instead.

Not exported: a loss type's per-sample weight (GUI-G1's ``rate``; verl's policy-loss API receives no
per-sample metadata), so such a recipe runs in verl with its aggregation (token sum / 64) but weight 1;
and a learning-rate schedule verl lacks (``linear``: verl schedules constant or cosine, :func:`lr_schedule`),
run at a constant rate. The export logs a warning for each.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from zoo.algorithms import POLICY_LOSSES
from zoo.engines.vlm.checks import AlgorithmParts, VLMChecked, check_algorithm, check_verl
from zoo.engines.vlm.contract import with_contract
from zoo.engines.vlm.recipe import VerlRecipe
from zoo.engines.vlm.verl_prompts import ImageSettings, image_settings, prompt_data, prompt_limit
from zoo.recipe import RecipeError

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'rl-model-zoo[verl]'   # verl==0.9.1, on a machine with CUDA GPUs"
PLUGIN_MODULE = "zoo.engines.vlm.verl_plugin"
_KL = {"k1": "kl", "k2": "mse", "k3": "low_var_kl"}
_NO_DUAL_CLIP = 1e9  # verl requires clip_ratio_c > 1; this large value switches the dual clip off


def train(recipe: VerlRecipe, output_dir: Path, *, resume: bool = False, dry_run: bool = False,
          checked: VLMChecked | None = None) -> Path:  # fmt: skip
    """Export ``recipe`` to ``output_dir/verl`` and, unless ``dry_run``, launch verl; returns ``output_dir``.
    ``checked``: what the engine's check resolved (:func:`~zoo.engines.vlm.checks.check_verl`).

    ``resume`` is verl's own: its trainer resumes from ``trainer.default_local_dir`` by default.
    """
    folder = export(recipe, output_dir, checked)
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


def export(recipe: VerlRecipe, output_dir: Path, checked: VLMChecked | None = None) -> Path:
    """Write parquet, reward module, overrides and launch script; returns the ``verl`` folder. The entry's contract is
    the one the engine's check resolved (``checked``; it runs here when not given)."""
    checked = check_verl(recipe) if checked is None else checked
    folder = Path(output_dir).resolve() / "verl"
    folder.mkdir(parents=True, exist_ok=True)
    source = data_source(recipe)
    samples = [with_contract(s, checked.contract) for s in recipe.data.load()]
    rows = parquet_rows(samples, source, ability=recipe.data.name, system=recipe.data.system_prompt)
    if not rows:
        raise RecipeError("the dataset yielded no samples; check data.name / data.kwargs in the recipe")
    model = model_path(recipe, folder, samples)
    images = image_settings(recipe, model)
    limit = prompt_limit(recipe.data, rows, images)
    write_parquet(rows, folder / "train.parquet", images)
    write_reward_module(recipe, folder / "reward_fn.py", source)
    args = verl_overrides(recipe, folder, model, images, limit, checked.algorithm)
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
    recipe: VerlRecipe, folder: Path, model: str, images: ImageSettings, max_prompt_length: int,
    parts: AlgorithmParts | None = None,
) -> dict[str, str]:  # fmt: skip
    """Hydra overrides for verl 0.9.1 ``main_ppo`` (keys of ``trainer/config/ppo_trainer.yaml``); ``images`` and
    ``max_prompt_length`` size the prompts (:func:`prompt_data`); ``parts``: the loss row and clips as the engine's
    check resolved them (resolved here when not given)."""
    alg, tr, eng = recipe.algorithm, recipe.training, recipe.verl
    parts = check_algorithm(alg) if parts is None else parts
    loss = parts.loss
    if loss.sample_weight is not None:
        logger.warning("loss_type %r weights samples by meta[%r]; verl's loss API has no per-sample weight, so "
                       "the verl run uses weight 1", loss.name, loss.sample_weight)  # fmt: skip
    scale = loss.scale(alg.max_completion_length)
    clip_low, clip_high = parts.clips
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
        **prompt_data(images, max_prompt_length, recipe.data.truncation),
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
        "actor_rollout_ref.rollout.top_k": alg.top_k if alg.top_k > 0 else -1,  # verl's (vLLM's) -1: every token
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
