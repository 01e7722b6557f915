"""The ``vlm-trl`` engine: a :class:`~zoo.engines.vlm.recipe.VLMRecipe` trained on this machine by TRL.

Reads top to bottom in training order: the samples (:meth:`DataConfig.load`), the policy
(:mod:`zoo.engines.vlm.policy_model`), the rewards as TRL ``reward_funcs``, TRL's ``GRPOConfig`` from
the recipe, then :class:`~zoo.engines.vlm.trainer.ZooGRPOTrainer`, whose advantages and loss are
:mod:`zoo.rl`'s. The run leaves ``metrics.csv``, TensorBoard events (when tensorboard is installed),
``reward_curve.png`` and atomic ``checkpoint-N/`` folders; ``resume`` continues from the newest
complete one with optimiser, scheduler, data position and RNG restored.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewards.adapters import to_trl
from zoo.distributed import DataParallel
from zoo.engines import ENGINES
from zoo.engines.vlm import rollout
from zoo.engines.vlm.checks import VLMChecked, check_trl
from zoo.engines.vlm.contract import with_contract
from zoo.engines.vlm.policy_model import load_policy, peft_config
from zoo.engines.vlm.recipe import RolloutConfig, VLMRecipe
from zoo.runs import start_run

if TYPE_CHECKING:
    from trl import GRPOConfig

    from zoo.engines.vlm.trainer import ZooGRPOTrainer
    from zoo.precision import Precision

logger = logging.getLogger(__name__)


def train(recipe: VLMRecipe, output_dir: Path, *, resume: bool = False, dry_run: bool = False,
          checked: VLMChecked | None = None) -> Path:  # fmt: skip
    """Train ``recipe`` with :class:`~zoo.engines.vlm.trainer.ZooGRPOTrainer`; returns ``output_dir``. ``checked``:
    what the engine's check resolved (:func:`~zoo.engines.vlm.checks.check_trl`; it runs here when not given).

    Single-turn only (TRL generates one completion per prompt): a multi-turn estimator's recipe is a
    :class:`~zoo.engines.vlm.recipe.SemiOnlineRecipe` of engine ``vlm-semi-online``.
    """
    if dry_run:
        return output_dir
    ENGINES.get(recipe.engine).launched(recipe.launch)  # accelerate applies the config; it must be the one named
    start = start_run(output_dir, resume=resume)  # metrics.csv is TRL's callback's (MetricsCallback)
    checkpoint = start.checkpoint
    trainer = build_trainer(recipe, output_dir, checked=checked)
    if checkpoint is not None and start.step >= recipe.training.steps:
        # Resuming a finished run: HF's loop would still take one more step. Keep the result instead.
        logger.info("%s already reached training.steps=%d; nothing to resume", checkpoint, recipe.training.steps)
        trainer._load_from_checkpoint(str(checkpoint))
        trainer.save_model(str(output_dir / "final"))
        return output_dir
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)  # Ctrl-C: zoo.cli says how to resume
    # data-parallel under torchrun / accelerate launch (TRL's DDP): the ranks must end on the same weights
    DataParallel(cuda=trainer.accelerator.device.type == "cuda").check_same_weights(trainer.model)
    trainer.save_model(str(output_dir / "final"))
    return output_dir


def build_trainer(recipe: VLMRecipe, output_dir: Path, callbacks: list[Any] | None = None,
                  checked: VLMChecked | None = None) -> ZooGRPOTrainer:  # fmt: skip
    """The :class:`~zoo.engines.vlm.trainer.ZooGRPOTrainer` for ``recipe`` (model, data, rewards, config), from what
    the engine's check resolved (``checked``; it runs here when not given)."""
    from zoo.engines.vlm.trainer import MetricsCallback, ZooGRPOTrainer
    from zoo.engines.vlm.trl_data import to_trl_dataset

    checked = check_trl(recipe) if checked is None else checked
    samples = [with_contract(s, checked.contract) for s in recipe.data.load()]
    # fp32 master weights under bf16 autocast (HF Trainer's bf16=True over float32 weights; ZeRO-3 and accelerate's
    # FSDP keep their own fp32 copies from these): zoo.precision
    model, processor = load_policy(recipe, samples, precision=_precision(recipe))
    if recipe.training.freeze_vision:
        from zoo.engines.vlm.sft import freeze_vision_tower

        logger.info("froze %d vision-tower parameters", freeze_vision_tower(model))
    return ZooGRPOTrainer(
        model=model,
        reward_funcs=[to_trl(spec.configure(reward), name=spec.name)
                      for spec, reward in zip(recipe.rewards, checked.rewards)],  # fmt: skip
        args=grpo_config(recipe, output_dir, checked),
        train_dataset=to_trl_dataset(samples, recipe.data.system_prompt, processor=processor),
        processing_class=processor,
        peft_config=peft_config(recipe),
        callbacks=[MetricsCallback(output_dir), *(callbacks or [])],
        algorithm=recipe.algorithm,
        parts=checked.algorithm,
        rollout=recipe.rollout,
    )


def grpo_config(recipe: VLMRecipe, output_dir: Path, checked: VLMChecked | None = None) -> GRPOConfig:
    """TRL ``GRPOConfig`` from the recipe and its loss row and clips as the check resolved them (``checked``; it runs
    here when not given); the loss and advantages themselves are ZooGRPOTrainer's."""
    from trl import GRPOConfig

    checked = check_trl(recipe) if checked is None else checked
    alg, tr = recipe.algorithm, recipe.training
    clip_low, clip_high = checked.algorithm.clips
    checkpointing = {_checkpointing_arg(): tr.gradient_checkpointing}
    # ZooGRPOTrainer computes the loss itself; TRL's loss_type only matters for TRL's own bookkeeping.
    trl_loss = checked.algorithm.loss.trl_loss_type or "grpo"
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
        bf16=_precision(recipe).compute == "bfloat16",
        fp16=_precision(recipe).compute == "float16",
        report_to=["tensorboard"] if importlib.util.find_spec("tensorboard") else [],
        num_generations=alg.num_generations,
        temperature=alg.temperature,
        top_p=alg.top_p,
        top_k=max(alg.top_k, 0),  # TRL's 0 keeps every token, as verl's -1
        max_completion_length=alg.max_completion_length,
        num_iterations=alg.num_iterations,
        beta=alg.beta,
        epsilon=clip_low,
        epsilon_high=clip_high,
        loss_type=trl_loss,
        importance_sampling_level="sequence" if checked.algorithm.loss.sequence_level else "token",
        scale_rewards="group" if alg.normalize_std else "none",
        reward_weights=[spec.weight for spec in recipe.rewards],
        remove_unused_columns=False,
        log_completions=False,
        dataloader_num_workers=0,
        shuffle_dataset=tr.shuffle,
        **_rollout_kwargs(recipe.rollout),
    )


def _rollout_kwargs(config: RolloutConfig) -> dict[str, Any]:
    """The ``trl.GRPOConfig`` arguments of the rollout backend :func:`zoo.engines.vlm.rollout.resolve_backend` picks.

    Here, with the rest of the recipe-to-``GRPOConfig`` translation, so that :mod:`zoo.engines.vlm.rollout`
    (which the recipe's validation calls) reads no recipe class.
    """
    backend = rollout.resolve_backend(config.backend)
    if backend == "static":
        return {"cache_implementation": "static"}
    if backend == "vllm":
        return {
            "use_vllm": True,
            "vllm_mode": "colocate",
            "vllm_gpu_memory_utilization": config.vllm_gpu_memory_utilization,
            # TRL then also computes the trainer's log-probs at rollout time (old_per_token_logps), which
            # zoo.rl.importance needs; the weights themselves are the zoo's (ZooGRPOTrainer._compute_loss).
            "vllm_importance_sampling_correction": config.importance_sampling,
            "vllm_importance_sampling_mode": "token_truncate",
            "vllm_importance_sampling_clip_max": config.is_cap,
        }
    return {}


def _checkpointing_arg() -> str:
    # transformers 5.x renamed gradient_checkpointing to activation_checkpointing (the old name warns).
    from transformers import TrainingArguments

    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    return "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"


def _precision(recipe: VLMRecipe) -> Precision:
    from zoo.engines.vlm.policy_model import policy_precision

    tr = recipe.training
    return policy_precision(recipe, cuda=not tr.use_cpu if tr.use_cpu is not None else _has_gpu())


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()
