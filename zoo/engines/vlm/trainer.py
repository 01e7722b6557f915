"""The one-machine GRPO engine: TRL's ``GRPOTrainer`` with zoo's advantage and loss functions.

Everything that TRL does well stays TRL's: generation (the recipe's ``rollout.backend``, see
:mod:`zoo.engines.vlm.rollout`), the repeat sampler and batching, the optimiser and scheduler,
checkpoints, the progress bar, TensorBoard. :class:`ZooGRPOTrainer` overrides exactly two steps:

* **advantages** — after TRL has generated and scored a batch, the advantages are recomputed
  with an estimator from :mod:`zoo.rl.advantages` (``grpo``, ``rloo``, ...), the samples whose
  reward could not be computed are masked (:mod:`zoo.rl.batching`; TRL would score a partly
  missing row as the sum of the rewards it has), and with ``dynamic_sampling`` the groups of
  equal rewards are masked too.
* **loss** — :meth:`_compute_loss` computes the per-token log-probabilities with TRL's own
  helper and reduces them with :mod:`zoo.rl.losses` (clipped surrogate with clip-higher and dual
  clip, GSPO's sequence ratio, TRL's ``loss_type`` aggregations, GUI-G1's rate-weighted sum,
  verl's KL estimators), with ``rollout.importance_sampling`` each token's policy-gradient term
  weighted by the truncated trainer/rollout ratio (:mod:`zoo.rl.importance`).

Rollout plug-ins (:mod:`zoo.engines.vlm.plugins`, ``algorithm.plugins``) hook in twice: before the
rewards (SCS adds resampled trajectories to each sample's meta) and after the advantages (Shuffle-R1
picks and orders the rows the optimiser steps take, in place of TRL's shuffle).

DAPO's dynamic sampling *over-samples* prompts to refill the batch; with TRL's fixed-size
generation batches we mask the flat groups instead, so the effective batch shrinks on easy
data (the fraction is logged as ``dynamic_sampling/frac_dropped_groups``).

Checkpoints are made atomic by :mod:`zoo.runs`'s completion marker, written after every file of
the checkpoint, so a write killed half way never looks like a valid checkpoint.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import pickle
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import ProgressCallback, TrainerCallback
from transformers.trainer_utils import rotate_checkpoints
from trl import GRPOTrainer
from trl.trainer.utils import split_pixel_values_by_grid, split_tensor_dict, unsplit_pixel_values_by_grid

from zoo.engines.vlm import overlap
from zoo.engines.vlm.checks import AlgorithmParts, check_algorithm
from zoo.engines.vlm.plugins import Rollout, ScoredBatch, build_plugin, take_rows
from zoo.engines.vlm.recipe import AlgorithmConfig, RolloutConfig
from zoo.engines.vlm.rollout import compiled_decode_config, recording_rollout_logps
from zoo.engines.vlm.trl_data import META_COLUMN
from zoo.load import load_vlm_weights
from zoo.rl import batching, losses
from zoo.rl.importance import truncated_is_weights
from zoo.run_logging import MetricsLog
from zoo.runs import COMPLETE_MARKER, CorruptCheckpointError, check_finite, latest_checkpoint, mark_complete

logger = logging.getLogger(__name__)


class ZooGRPOTrainer(GRPOTrainer):
    """``trl.GRPOTrainer`` whose advantages and loss come from :mod:`zoo.rl`.

    Args:
        algorithm: the recipe's :class:`~zoo.engines.vlm.recipe.AlgorithmConfig` (its numbers).
        parts: its names as the engine's check resolved them (loss row, clips, estimator, policy loss:
            :func:`~zoo.engines.vlm.checks.check_algorithm`, which runs here when not given).
        rollout: the recipe's :class:`~zoo.engines.vlm.recipe.RolloutConfig` (its backend is already in
            the ``GRPOConfig``; here: compiled decode for ``static``, and the importance-sampling correction).
        *args, **kwargs: as ``trl.GRPOTrainer``.
    """

    def __init__(
        self, *args: Any, algorithm: AlgorithmConfig, parts: AlgorithmParts | None = None,
        rollout: RolloutConfig | None = None, **kwargs: Any,
    ) -> None:  # fmt: skip
        self.algorithm = algorithm
        self.parts = check_algorithm(algorithm) if parts is None else parts
        self.rollout = rollout or RolloutConfig()
        self._estimator = self.parts.estimator
        self._rewards_per_func: torch.Tensor | None = None
        self._plugins = [build_plugin(spec.name, spec.kwargs) for spec in algorithm.plugins]
        self._scorer = overlap.ChunkScorer()
        self._chunk_inputs: list | None = None
        super().__init__(*args, **kwargs)
        if self.pop_callback(ProgressCallback) is not None:  # the bar, without a metrics dict printed every step
            self.add_callback(RewardProgress())
        self._plugin_rng = np.random.default_rng(self.args.seed)
        if any(p.selects_rows for p in self._plugins) and self.accelerator.num_processes > 1:
            raise RuntimeError(f"rollout plug-ins {[p.name for p in self._plugins]} choose rows across the whole "
                               "batch and run on one process; launch without accelerate's multi-process mode")  # fmt: skip
        if self.args.cache_implementation == "static" and (self.args.bf16 or self.args.fp16):
            held = next(self.model.parameters()).dtype
            wanted = torch.bfloat16 if self.args.bf16 else torch.float16
            if held != wanted:  # the static cache takes the weights' dtype; autocast fills it with another
                raise ValueError(f"rollout.backend=static under {wanted} mixed precision needs the policy held in "
                                 f"{wanted}, and it holds float32 master weights (zoo.precision); use rollout.backend "
                                 "hf or vllm, or set training.fp32_master_weights=false (which rounds small updates "
                                 "away)")  # fmt: skip
        if self.args.cache_implementation == "static" and getattr(self, "generation_config", None) is not None:
            self.generation_config.disable_compile = False  # TRL turns compilation off; `static` is for it
            self.generation_config.compile_config = compiled_decode_config(self.accelerator.device.type)

    def create_model_card(self, *args: Any, **kwargs: Any) -> None:
        """Writes nothing: TRL's auto card (a text-generation quick start for "[None]") would be the run directory's
        README.md; the zoo writes its own for every run (:func:`zoo.train.write_run_readme`)."""

    # --- rollouts -------------------------------------------------------------------------

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        if self.use_vllm or not self.rollout.importance_sampling:  # vLLM reports its log-probs itself
            return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations, has_tool_images)
        model = self.accelerator.unwrap_model(self.model_wrapped)
        with recording_rollout_logps(model, self.temperature) as recorded:
            completion_ids, _ = super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, num_generations, has_tool_images
            )
        logps = recorded[-1].cpu()
        return completion_ids, [logps[i, : len(ids)].tolist() for i, ids in enumerate(completion_ids)]

    # --- advantages -----------------------------------------------------------------------

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        # Keep TRL's gathered (N, n_funcs) reward matrix (NaN = no score) for our estimator; with
        # reward_chunks > 1 the chunks were scored while the next ones generated (_generate).
        if self._scorer.pending:
            self._rewards_per_func = self._scorer.result()
        else:
            self._run_before_rewards(inputs, prompts, completion_ids_list)
            self._rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        return self._rewards_per_func

    def _generate(self, prompts):
        inputs = self._chunk_inputs
        if inputs is None or len(inputs) != len(prompts):
            return super()._generate(prompts)
        group = self.num_generations if self.model.training else self.num_generations_eval
        score, parts = super()._calculate_rewards, []
        for rows in overlap.row_chunks(len(prompts), self.algorithm.reward_chunks, group):
            part = super()._generate(prompts[rows])
            self._scorer.submit(score, inputs[rows], prompts[rows], part[3], part[1])  # completions, their ids
            parts.append(part)
        return overlap.merge_generations(parts)

    def _generate_and_score_completions(self, inputs):
        # Plug-ins that act before the rewards (SCS's resampling) need the whole batch: no chunked scoring with them.
        chunked = (self.algorithm.reward_chunks > 1 and self.accelerator.num_processes == 1
                   and self.rollout_func is None and not self._plugins)  # fmt: skip
        self._chunk_inputs = inputs if chunked else None
        try:
            output = super()._generate_and_score_completions(inputs)
        finally:
            self._chunk_inputs = None
        mode = "train" if self.model.training else "eval"
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        weights = self.reward_weights.to(self._rewards_per_func.device)
        # A weighted sum that propagates NaN: one missing term (of non-zero weight) makes the whole
        # sample unscorable, as rewards.WeightedSum does; TRL would nan-sum it to a partial score.
        weighted = torch.where(weights == 0, 0.0, self._rewards_per_func * weights)
        rewards = weighted.sum(dim=1).float().cpu()
        group_ids = torch.arange(rewards.shape[0]) // group_size
        advantages = self._estimator(rewards, group_ids, **self._estimator_options())
        keep = ~batching.failed(rewards)
        if self.algorithm.dynamic_sampling:
            kept = batching.dynamic_sampling_keep(rewards, group_ids)
            keep &= kept.keep
            self._metrics[mode]["dynamic_sampling/frac_dropped_groups"].append(
                kept.num_dropped_groups / max(1, kept.num_groups)
            )
        self._metrics[mode]["rewards/frac_failed"].append(batching.failed(rewards).float().mean().item())
        local = slice(
            self.accelerator.process_index * len(inputs), (self.accelerator.process_index + 1) * len(inputs)
        )
        device = output["completion_mask"].device
        row_mask = keep[local].to(device=device, dtype=output["completion_mask"].dtype)
        output["advantages"] = advantages[local].to(device) * row_mask
        output["zoo_row_mask"] = row_mask
        loss_mask = output["completion_mask"] * row_mask.unsqueeze(1)
        if "tool_mask" in output:
            loss_mask = loss_mask * output["tool_mask"]
        output["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()
        if mode == "train":
            self._select_rows(output, rewards, advantages, group_ids)
        weight_key = self.parts.loss.sample_weight
        if weight_key is not None:  # a paper's per-sample loss weight (GUI-G1's rate), from Sample.meta
            output["zoo_sample_weight"] = torch.tensor(
                [float(json.loads(x.get(META_COLUMN, "{}")).get(weight_key, 1.0)) for x in inputs], device=device
            )
        return output

    # --- rollout plug-ins ---------------------------------------------------------------------

    def _run_before_rewards(self, inputs, prompts, completion_ids_list) -> None:
        """Let plug-ins add fields to each row's meta (written back into the ``meta`` column) before scoring."""
        plugins = [p for p in self._plugins if p.adds_fields]
        if not plugins:
            return
        metas = [json.loads(x.get(META_COLUMN) or "{}") for x in inputs]
        rollout = Rollout(prompts=list(prompts), completion_ids=[list(c) for c in completion_ids_list], metas=metas,
                          continue_generation=self.continue_generation,
                          decode=functools.partial(self.processing_class.decode, skip_special_tokens=True))  # fmt: skip
        for plugin in plugins:
            plugin.before_rewards(rollout)
        for i, meta in enumerate(metas):
            inputs[i] = {**inputs[i], META_COLUMN: json.dumps(meta, sort_keys=True, default=str)}

    @torch.no_grad()
    def continue_generation(self, prompts: list[Any], prefixes: list[list[int]]) -> list[list[int]]:
        """One sampled continuation per request: ``prompts[i]``'s generation prompt, then ``prefixes[i]``.

        The prompt goes through TRL's own tokenisation (chat template, image processing) and the
        continuation through TRL's generation path (vLLM when the run uses it, else ``generate``), with
        the run's sampling settings; requests go in chunks of the per-device batch size.
        """
        out: list[list[int]] = []
        step = max(1, self.args.per_device_train_batch_size)
        for start in range(0, len(prompts), step):
            chunk = prefixes[start : start + step]
            prompt_ids, images, fields = self._tokenize_prompts(prompts[start : start + step])
            prompt_ids = [list(ids) + list(prefix) for ids, prefix in zip(prompt_ids, chunk)]
            for key, value in fields.items():  # per-token fields (mm_token_type_ids): the prefix is text, type 0
                if isinstance(value, list) and value and isinstance(value[0], list):
                    fields[key] = [list(row) + [0] * len(prefix) for row, prefix in zip(value, chunk)]
            completions, _ = self._generate_single_turn(prompt_ids, images, fields, num_generations=1)
            out += [list(c) for c in completions]
        return out

    def _select_rows(self, output: dict[str, Any], rewards, advantages, group_ids) -> None:
        """Record the plug-in's row order (``zoo_row_order``) for :meth:`_prepare_inputs` to apply."""
        for plugin in (p for p in self._plugins if p.selects_rows):
            batch = ScoredBatch(rewards=rewards, advantages=advantages, group_ids=group_ids,
                                step=self.state.global_step + 1, total_steps=int(self.state.max_steps or 0),
                                rng=self._plugin_rng)  # fmt: skip
            selection = plugin.select_rows(batch)
            if selection is None:
                continue
            if not selection.rows or len(selection.rows) % self.args.steps_per_generation:
                raise RuntimeError(f"rollout plug-in {plugin.name!r} chose {len(selection.rows)} rows, which do not "
                                   f"split into {self.args.steps_per_generation} optimiser micro-steps; adjust "
                                   "training.batch_size or grad_accum")  # fmt: skip
            output["zoo_row_order"] = selection.rows
            for key, value in selection.metrics.items():
                self._metrics["train"][f"{plugin.name}/{key}"].append(float(value))
            return

    def _prepare_inputs(self, generation_batch):
        # TRL's buffering, except that a plug-in's row order replaces TRL's random shuffle.
        if not self.model.training or not any(p.selects_rows for p in self._plugins):
            return super()._prepare_inputs(generation_batch)
        generate_every = self.args.steps_per_generation * self.num_iterations
        if self._step % generate_every == 0 or self._buffered_inputs is None:
            batch = split_pixel_values_by_grid(self._generate_and_score_completions(generation_batch))
            order = batch.pop("zoo_row_order", None)
            batch = take_rows(batch, order) if order is not None else batch
            loss_mask = batch["completion_mask"] * batch["zoo_row_mask"].unsqueeze(1)
            if batch.get("tool_mask") is not None:
                loss_mask = loss_mask * batch["tool_mask"]
            batch["num_items_in_batch"] = loss_mask.sum()
            chunks = split_tensor_dict(batch, self.args.steps_per_generation)
            self._buffered_inputs = [unsplit_pixel_values_by_grid(chunk) for chunk in chunks]
        return self._buffered_inputs[self._step % self.args.steps_per_generation]

    def _estimator_options(self) -> dict[str, Any]:
        params = inspect.signature(self._estimator).parameters
        return {"normalize_std": self.algorithm.normalize_std} if "normalize_std" in params else {}

    # --- loss -------------------------------------------------------------------------------

    def _compute_loss(self, model, inputs):
        mode = "train" if self.model.training else "eval"
        completion_mask = inputs["completion_mask"]
        logps, entropies, _ = self._get_per_token_logps_and_entropies(
            model,
            torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1),
            torch.cat([inputs["prompt_mask"], completion_mask], dim=1),
            inputs["completion_ids"].size(1),
            compute_entropy=True,
            **{k: inputs.get(k) for k in _MULTIMODAL_KEYS},
        )
        mask = completion_mask * inputs["zoo_row_mask"].unsqueeze(1)
        if "tool_mask" in inputs:
            mask = mask * inputs["tool_mask"]
        if not bool(mask.any()):
            # Every row is masked (all rewards missing, or every group flat under dynamic sampling).
            # verl's seq-mean aggregations (gspo, gui_g1) would divide 0 by 0 and write NaN into the
            # weights; there is nothing to learn, so the step's loss is an exact, differentiable 0.
            return (logps * 0.0).sum()
        old = inputs.get("old_per_token_logps")
        old = logps.detach() if old is None else old
        advantages = inputs["advantages"]
        if self.rollout.importance_sampling and "sampling_per_token_logps" in inputs:
            # TIS: a positive per-token weight on the advantage scales that token's clipped surrogate
            # (and dual clip) by exactly that weight, since each is linear in A for a fixed sign of A.
            weights, ratio = truncated_is_weights(old, inputs["sampling_per_token_logps"], mask, self.rollout.is_cap)
            advantages = advantages.unsqueeze(-1) * weights
            for key, value in ratio.items():
                self._metrics[mode][f"rollout/is_ratio_{key}"].append(value)
        agg, scale, accum_divisor = self._aggregation(inputs, mode)
        loss, stats = self._policy_loss(logps, old, advantages, mask, agg, scale, inputs.get("zoo_sample_weight"))
        if self.beta != 0.0:
            kl = losses.kl_penalty(logps, inputs["ref_per_token_logps"], self.algorithm.kl_estimator)
            loss = loss + self.beta * _reduce(kl, mask, agg, scale)
            self._metrics[mode]["kl"].append(_masked_mean(kl.detach(), mask))
        self._metrics[mode]["entropy"].append(_masked_mean(entropies, mask))
        self._metrics[mode]["clip_ratio/region_mean"].append(stats["clipfrac"].item())
        self._metrics[mode]["clip_ratio/dual_clip_mean"].append(stats["clipfrac_lower"].item())
        self._metrics[mode]["ppo_kl"].append(stats["ppo_kl"].item())
        return loss / accum_divisor

    def _aggregation(self, inputs, mode: str) -> tuple[Any, float | None, float]:
        """(aggregation, loss_scale_factor, divisor for gradient accumulation), mirroring TRL's scaling.

        Losses TRL has are reduced exactly as TRL reduces them; the others with their verl mode.
        """
        loss = self.parts.loss
        accum = self.current_gradient_accumulation_steps if mode == "train" else 1
        if loss.trl_loss_type is None:
            return loss.aggregation, loss.scale(self.max_completion_length), accum
        if loss.trl_loss_type == "dapo":
            # TRL: tokens of the whole generation batch, per process, per accumulation window.
            items = inputs["num_items_in_batch"] / self.accelerator.num_processes
            if mode == "train":
                items = items * self.current_gradient_accumulation_steps / self.args.steps_per_generation
            return functools.partial(losses.trl_aggregate, loss_type="dapo", num_items_in_batch=items), None, 1
        agg = functools.partial(
            losses.trl_aggregate, loss_type=loss.trl_loss_type, max_completion_length=self.max_completion_length
        )
        return agg, None, accum

    def _policy_loss(self, logps, old, advantages, mask, agg, scale, weights):
        clip_low, clip_high = self.parts.clips
        loss_fn = self.parts.policy_loss
        options = {"dual_clip": self.algorithm.dual_clip} if "dual_clip" in inspect.signature(loss_fn).parameters else {}
        return loss_fn(
            logps, old, advantages, mask, clip_low=clip_low, clip_high=clip_high, agg=agg, weights=weights,
            loss_scale_factor=scale, **options,
        )  # fmt: skip

    # --- checkpoints -----------------------------------------------------------------------------

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        # transformers 5's Trainer restores weights with a bare ``load_state_dict(strict=False)``, but
        # ``save_pretrained`` writes Qwen-VL weights under their legacy key names (``visual.*``,
        # ``model.layers.*``): every key misses and the resumed run silently trains the *initial*
        # weights. ``from_pretrained`` applies the key conversion, so load through it instead.
        model = self.model if model is None else model
        if _is_peft(model) or not hasattr(model, "config") or not hasattr(type(model), "from_pretrained"):
            return super()._load_from_checkpoint(resume_from_checkpoint, model)
        restored = load_vlm_weights(resume_from_checkpoint, dtype=model.dtype, model_class=type(model))
        model.load_state_dict(restored.state_dict(), strict=True)
        del restored
        logger.info("restored weights from %s", resume_from_checkpoint)

    def _load_optimizer_and_scheduler(self, checkpoint):
        # a corrupt optimizer.pt surfaces as a torch/pickle error with no file name: name the checkpoint
        try:
            super()._load_optimizer_and_scheduler(checkpoint)
        except (RuntimeError, EOFError, OSError, pickle.UnpicklingError, ValueError) as err:
            raise CorruptCheckpointError(
                f"could not read the optimizer or scheduler state (optimizer.pt, scheduler.pt) in {checkpoint}: {err}. "
                "Restore the checkpoint, or move it aside to resume from the one before it"
            ) from err

    # --- atomic checkpoints -------------------------------------------------------------------

    def _save_checkpoint(self, model, trial):
        folder = Path(self._get_output_dir(trial=trial)) / f"checkpoint-{self.state.global_step}"
        (folder / COMPLETE_MARKER).unlink(missing_ok=True)  # an overwritten checkpoint is invalid until done
        limit = self.args.save_total_limit
        self.args.save_total_limit = None  # rotate only once the new checkpoint is marked complete
        try:
            super()._save_checkpoint(model, trial)
        except OSError as err:  # a full disk, a quota: the older checkpoints were not touched
            raise checkpoint_write_error(folder, err) from err
        finally:
            self.args.save_total_limit = limit
        # every process writes its own RNG state into the folder (rng_state_<rank>.pth): mark it complete only
        # once all of them have, so that a kill in between never leaves a "complete" checkpoint without one
        self.accelerator.wait_for_everyone()
        if self.args.should_save:
            mark_complete(folder, self.state.global_step)
            if limit is not None:
                rotate_checkpoints(
                    str(folder.parent), limit, best_model_checkpoint=self.state.best_model_checkpoint
                )


def checkpoint_write_error(folder: Path, err: OSError) -> OSError:
    """The error of a failed checkpoint write, after removing the half-written folder (it only takes space)."""
    shutil.rmtree(folder, ignore_errors=True)
    previous = latest_checkpoint(folder.parent)
    kept = f"the last complete checkpoint, {previous.name}, is intact" if previous else "no checkpoint was complete yet"
    return OSError(
        err.errno,
        f"could not write {folder.name} ({err.strerror or err}); the partial folder was removed and {kept}. "
        "Once the cause is fixed (a full disk: free space), continue with `zoo train <recipe> --resume`",
    )


_MULTIMODAL_KEYS = (
    "pixel_values",
    "image_grid_thw",
    "num_images",
    "pixel_attention_mask",
    "spatial_shapes",
    "num_tiles",
    "image_sizes",
    "token_type_ids",
    "mm_token_type_ids",
    "image_position_ids",
)


def _is_peft(model: torch.nn.Module) -> bool:
    try:
        from peft import PeftModel
    except ImportError:
        return False
    return isinstance(model, PeftModel)


def _reduce(values: torch.Tensor, mask: torch.Tensor, agg: Any, scale: float | None) -> torch.Tensor:
    if callable(agg):
        return agg(values, mask)
    return losses.aggregate(values, mask, agg, loss_scale_factor=scale)


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> float:
    return ((values * mask).sum() / mask.sum().clamp(min=1.0)).item()


class RewardProgress(ProgressCallback):
    """transformers' progress bar showing the step's reward, loss and seconds per step, where it would print each
    step's whole metrics dict (~900 characters of TRL's) and scroll the bar away; the dict goes to ``metrics.csv``."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and self.training_bar is not None and logs:
            shown = {"reward": logs.get("reward"), "loss": logs.get("loss"), "s/step": logs.get("step_time")}
            self.training_bar.set_postfix({k: f"{v:.3g}" for k, v in shown.items() if isinstance(v, int | float)})


class MetricsCallback(TrainerCallback):
    """Feeds the Trainer's logs to :class:`~zoo.run_logging.MetricsLog` (``metrics.csv``, reward curve)."""

    def __init__(self, output_dir: str | Path) -> None:
        self.log = MetricsLog(output_dir)

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.log.start(state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            self.log.log(state.global_step, logs)
        if logs:  # every rank: the step's checkpoint, saved after the logs, must not hold NaN weights
            check_finite(f"step {state.global_step}",
                         **{k: float(logs[k]) for k in ("loss", "grad_norm") if isinstance(logs.get(k), int | float)})

    def on_train_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.log.finish()
