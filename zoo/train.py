"""``zoo train RECIPE.yaml [--set key=value ...] [--resume] [--engine trl|verl] [--dry-run]``.

Reads a :class:`~zoo.rl.recipe.Recipe`, writes the resolved recipe to ``<output_dir>/recipe.yaml``
and runs it: on this machine through :class:`~zoo.rl.trainer.ZooGRPOTrainer` (TRL), or on a
cluster through verl (:mod:`zoo.rl.verl_export` writes the parquet, reward module and config,
then launches verl's trainer). The TRL run leaves ``metrics.csv``, TensorBoard events (when
tensorboard is installed), ``reward_curve.png`` and atomic ``checkpoint-N/`` folders; ``--resume``
continues from the newest complete one with optimiser, scheduler, data position and RNG restored.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.rl.recipe import Recipe, RecipeError, RewardSpec

if TYPE_CHECKING:
    from peft import LoraConfig
    from trl import GRPOConfig

    from rewards.adapters import TRLReward
    from rewards.base import Reward
    from zoo.data import Sample
    from zoo.rl.trainer import ZooGRPOTrainer

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``zoo train``'s arguments; their destinations match :func:`run`'s parameters."""
    parser.add_argument("recipe_path", metavar="RECIPE", help="path to a recipe YAML (e.g. domains/gui/recipes/*.yaml)")
    parser.add_argument(
        "--set",
        dest="overrides",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="override a recipe field, dotted path, repeatable: --set training.lr=1e-5 --set algorithm.loss_type=dapo",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue from the newest complete checkpoint in the output directory (optimiser, scheduler, "
        "data position and RNG restored)",
    )
    parser.add_argument(
        "--engine",
        choices=["trl", "verl"],
        default=None,
        help="trl: this machine (TRL GRPOTrainer); verl: write verl's parquet/reward/config and launch verl "
        "(default: the recipe's engine.name)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="write the resolved recipe (and verl's files) without training"
    )
    parser.add_argument("--output-dir", default=None, help="run directory (default: the recipe's training.output_dir)")


def run(
    recipe_path: str,
    overrides: list[str] | tuple[str, ...] = (),
    resume: bool = False,
    engine: str | None = None,
    dry_run: bool = False,
    output_dir: str | None = None,
) -> Path:
    """Run a recipe; returns the run directory.

    Args:
        recipe_path: recipe YAML.
        overrides: ``dotted.key=value`` strings applied on top of the file.
        resume: continue from the newest complete checkpoint (TRL engine).
        engine: ``trl`` or ``verl``; ``None`` uses the recipe's ``engine.name``.
        dry_run: write files only (the resolved recipe; for verl also parquet, reward module, config).
        output_dir: overrides ``training.output_dir``.
    """
    extra = [f"training.output_dir={output_dir}"] if output_dir else []
    if engine:
        extra.append(f"engine.name={engine}")
    recipe = Recipe.from_yaml(recipe_path, [*overrides, *extra])
    out = recipe.output_dir
    out.mkdir(parents=True, exist_ok=True)
    recipe.to_yaml(out / "recipe.yaml")
    logger.info("resolved recipe written to %s", out / "recipe.yaml")
    if recipe.engine.name == "verl":
        from zoo.rl import verl_export

        return verl_export.run(recipe, out, dry_run=dry_run)
    if dry_run:
        return out
    return train_trl(recipe, out, resume=resume)


def train_trl(recipe: Recipe, output_dir: Path, *, resume: bool = False) -> Path:
    """Train ``recipe`` with :class:`~zoo.rl.trainer.ZooGRPOTrainer`; returns ``output_dir``."""
    from zoo.rl.trainer import latest_checkpoint

    checkpoint = None
    if resume:
        checkpoint = latest_checkpoint(output_dir, remove_incomplete=True)
        if checkpoint is None:
            logger.warning("--resume: no complete checkpoint in %s; starting from scratch", output_dir)
        else:
            logger.info("resuming from %s", checkpoint)
    trainer = build_trainer(recipe, output_dir)
    if checkpoint is not None and _checkpoint_step(checkpoint) >= recipe.training.steps:
        # Resuming a finished run: HF's loop would still take one more step. Keep the result instead.
        logger.info("%s already reached training.steps=%d; nothing to resume", checkpoint, recipe.training.steps)
        trainer._load_from_checkpoint(str(checkpoint))
        trainer.save_model(str(output_dir / "final"))
        return output_dir
    try:
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    except KeyboardInterrupt:
        logger.warning("interrupted; continue with `zoo train <recipe> --resume` (same --set/--output-dir)")
        raise
    trainer.save_model(str(output_dir / "final"))
    return output_dir


def _checkpoint_step(checkpoint: Path) -> int:
    import json

    return int(json.loads((checkpoint / "trainer_state.json").read_text())["global_step"])


def build_trainer(recipe: Recipe, output_dir: Path, callbacks: list[Any] | None = None) -> ZooGRPOTrainer:
    """The :class:`~zoo.rl.trainer.ZooGRPOTrainer` for ``recipe`` (model, data, rewards, config)."""
    from zoo.rl.run_logging import RunLogger
    from zoo.rl.trainer import ZooGRPOTrainer
    from zoo.rl.trl_data import to_trl_dataset

    samples = load_samples(recipe)
    model, processor = load_policy(recipe, samples)
    if recipe.training.freeze_vision:
        from zoo.sft import freeze_vision_tower

        logger.info("froze %d vision-tower parameters", freeze_vision_tower(model))
    return ZooGRPOTrainer(
        model=model,
        reward_funcs=[trl_reward(spec) for spec in recipe.rewards],
        args=grpo_config(recipe, output_dir),
        train_dataset=to_trl_dataset(samples, recipe.data.system_prompt),
        processing_class=processor,
        peft_config=peft_config(recipe),
        callbacks=[RunLogger(output_dir), *(callbacks or [])],
        algorithm=recipe.algorithm,
    )


def load_samples(recipe: Recipe) -> list[Sample]:
    """The recipe's training samples from the dataset registry."""
    import zoo.rl.synthetic_task  # noqa: F401  (registers the domain-agnostic synthetic task)
    from zoo.data import load_dataset, take

    samples = load_dataset(recipe.data.name, **recipe.data.kwargs)
    if recipe.data.max_samples is not None:
        samples = take(samples, recipe.data.max_samples)
    return list(samples)


def load_policy(recipe: Recipe, samples: list[Sample] | None = None) -> tuple[Any, Any]:
    """``(model, processor)`` for ``recipe.model.name``: ``tiny:<arch>``, a local directory or a zoo name."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    name = recipe.model.name
    if name.startswith("tiny:"):
        from zoo.tiny import DEFAULT_CORPUS, build_tiny_vlm

        kwargs = dict(recipe.model.tiny)
        kwargs.setdefault("seed", recipe.training.seed)
        if "corpus" not in kwargs:
            kwargs["corpus"] = [DEFAULT_CORPUS, *_corpus(samples or [])]
        arch = name.split(":", 1)[1]
        if arch not in ("qwen2_5_vl", "qwen3_vl"):
            raise RecipeError(f"model.name={name!r}: tiny models are tiny:qwen2_5_vl or tiny:qwen3_vl")
        return build_tiny_vlm(arch, **kwargs)
    dtype = {"auto": "auto", "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if recipe.model.dtype not in dtype:
        raise RecipeError(f"model.dtype={recipe.model.dtype!r}; choose one of {list(dtype)}")
    source, revision = policy_source(recipe)
    model = AutoModelForImageTextToText.from_pretrained(source, dtype=dtype[recipe.model.dtype], revision=revision)
    return model, AutoProcessor.from_pretrained(source, revision=revision)


def policy_source(recipe: Recipe) -> tuple[str, str | None]:
    """``(path or repo id, revision)`` of a non-tiny ``recipe.model.name``.

    A local directory is used as is; a zoo name is resolved as :func:`zoo.load` resolves it; a name
    that is neither but has the shape ``owner/name`` is a Hub repository (the instruct base models
    the recipes start from, e.g. ``Qwen/Qwen2.5-VL-7B-Instruct``, are not zoo entries), loaded at
    ``model.revision``. Anything else is an unknown zoo name, with close matches.
    """
    from rewards.registry import UnknownNameError
    from zoo.hub import is_repo_id, resolve
    from zoo.registry import info

    name = recipe.model.name
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path), None
    try:
        entry = info(name)
    except UnknownNameError:
        if is_repo_id(name):
            return name, recipe.model.revision
        raise
    return str(resolve(entry, recipe.model.revision).path), None


def _corpus(samples: list[Sample]) -> list[str]:
    """Prompt and target text, so a tiny tokenizer learns the task's words as whole tokens."""
    texts = []
    for sample in samples[:512]:
        texts.append(sample.question)
        texts.extend(str(v) for v in sample.target.values())
    return texts


def reward_object(name: str, kwargs: dict[str, Any] | None = None) -> Reward:
    """The registered reward ``name``; ``kwargs`` configure a parameterised one (class or ``with_options``)."""
    import zoo.rl.synthetic_task  # noqa: F401  (registers zoo's own synthetic-task rewards)
    from rewards.base import get

    reward = get(name)
    if kwargs:
        if isinstance(reward, type):
            return reward(**kwargs)
        if callable(getattr(reward, "with_options", None)):
            return reward.with_options(**kwargs)
        raise RecipeError(f"reward {name!r} takes no options, but the recipe gives kwargs={kwargs}")
    return reward() if isinstance(reward, type) else reward


def trl_reward(spec: RewardSpec) -> TRLReward:
    """The TRL ``reward_funcs`` callable for one :class:`~zoo.rl.recipe.RewardSpec`."""
    from rewards.adapters import to_trl

    return to_trl(reward_object(spec.name, spec.kwargs), name=spec.name)


def grpo_config(recipe: Recipe, output_dir: Path) -> GRPOConfig:
    """TRL ``GRPOConfig`` from the recipe (loss/advantage settings are read by ZooGRPOTrainer)."""
    from trl import GRPOConfig

    from zoo.rl.trainer import resolved_clip

    alg, tr = recipe.algorithm, recipe.training
    clip_low, clip_high = resolved_clip(alg)
    checkpointing = {_checkpointing_arg(): tr.gradient_checkpointing}
    trl_loss = {"gspo": "grpo", "gui_g1": "grpo"}.get(alg.loss_type, alg.loss_type)
    return GRPOConfig(
        output_dir=str(output_dir),
        learning_rate=tr.lr,
        max_steps=tr.steps,
        per_device_train_batch_size=tr.batch_size,
        gradient_accumulation_steps=tr.grad_accum,
        seed=tr.seed,
        lr_scheduler_type=tr.lr_scheduler,
        warmup_steps=tr.warmup_steps,
        weight_decay=tr.weight_decay,
        max_grad_norm=tr.max_grad_norm,
        save_strategy="steps",
        save_steps=tr.save_steps,
        save_total_limit=tr.save_total_limit,
        logging_steps=tr.logging_steps,
        **checkpointing,
        use_cpu=tr.use_cpu if tr.use_cpu is not None else not _has_gpu(),
        bf16=recipe.model.dtype == "bfloat16",
        report_to=["tensorboard"] if importlib.util.find_spec("tensorboard") else [],
        num_generations=alg.num_generations,
        temperature=alg.temperature,
        top_p=alg.top_p,
        max_completion_length=alg.max_completion_length,
        num_iterations=alg.num_iterations,
        beta=alg.beta,
        epsilon=clip_low,
        epsilon_high=clip_high,
        loss_type=trl_loss,
        importance_sampling_level="sequence" if alg.loss_type == "gspo" else "token",
        scale_rewards="group" if alg.normalize_std else "none",
        reward_weights=[spec.weight for spec in recipe.rewards],
        remove_unused_columns=False,
        log_completions=False,
        dataloader_num_workers=0,
    )


def _checkpointing_arg() -> str:
    # transformers 5.x renamed gradient_checkpointing to activation_checkpointing (the old name warns).
    from transformers import TrainingArguments

    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    return "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"


def peft_config(recipe: Recipe) -> LoraConfig | None:
    """A peft ``LoraConfig`` when ``training.lora.enabled``, else ``None`` (full fine-tune)."""
    lora = recipe.training.lora
    if not lora.enabled:
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        # Only language-model projections: the vision tower's attention is named qkv/proj, so these
        # names leave it frozen, as the papers do.
        target_modules=list(lora.target_modules),
        task_type="CAUSAL_LM",
    )


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()
