"""Everything a diffusion run holds: model, sampler, optimiser, EMA, tracker, RNG, prompts, rewards.

:func:`build_run` turns a recipe into a :class:`Run`; the training loop (:mod:`.trainer`) only calls
its small methods, so it reads in training order. One ``torch.Generator`` per process drives every
random choice (prompts, noise, trained steps, shuffles), seeded apart per rank (:func:`zoo.distributed.rank_seed`), so
that a checkpoint that stores each rank's state resumes the exact same run.

The denoiser is replicated (one process, or DDP through accelerate) or sharded with FSDP2 when the recipe's launch
config says so (:mod:`.placement`); the optimiser and the EMA (:mod:`.ema`) are built after, over the parameters
actually trained. Sharded, every forward is a collective: sampling runs inside :meth:`Run.sampling` (the denoiser
gathered once, no collective per forward) and every rank runs as many training micro-batches as every other
(:func:`zoo.engines.diffusion.trainer.optimise`).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from rewards.base import RewardSample, WeightedSum
from zoo.data import load_dataset
from zoo.distributed import rank_seed
from zoo.engines import ENGINES
from zoo.engines.diffusion.adversarial import (
    DISCRIMINATORS,
    AdversarialReward,
    DinoDiscriminator,
    References,
    decode_reference,
    load_backbone,
)
from zoo.engines.diffusion.adversarial_pickscore import PickScoreReward, load_pickscore
from zoo.engines.diffusion.checks import DiffusionChecked, check_diffusion
from zoo.engines.diffusion.distributed import gather_all
from zoo.engines.diffusion.ema import ShardEMA
from zoo.engines.diffusion.methods import Method, StepSettings
from zoo.engines.diffusion.models import DiffusionModel, load_model
from zoo.engines.diffusion.placement import adapt, run_precision
from zoo.engines.diffusion.recipe import DiffusionRecipe, sde_window_range
from zoo.engines.diffusion.sampling import Sampler
from zoo.rl.diffusion_loss import PerPromptStatTracker
from zoo.runs import check_finite
from zoo.sharding import full_state_dict, gathered, shard

logger = logging.getLogger(__name__)
SAMPLES_DIR = "samples"


@dataclass
class Run:
    """The live objects of one training run (see the module docstring)."""

    recipe: DiffusionRecipe
    model: DiffusionModel
    sampler: Sampler
    accelerator: Any
    optimizer: torch.optim.Optimizer
    trainable: list[torch.nn.Parameter]
    reward: Any
    prompts: list[str]
    eval_prompts: list[str]
    settings: StepSettings
    generator: torch.Generator
    output_dir: Path
    tracker: PerPromptStatTracker | None = None
    ema: ShardEMA | None = None
    reference_model: torch.nn.Module | None = None
    round_cond: tuple[torch.Tensor, torch.Tensor] | None = None
    targets: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    """By prompt, what its dataset says the image must show (GenEval's row), merged into the rewards' targets."""
    eval_sampler: Sampler | None = None
    """The evaluation's own step count (``algorithm.eval_num_steps``) on a copy of the scheduler; ``None``: ``sampler``."""
    extra: dict[str, Any] = field(default_factory=dict)
    sharded: bool = False
    """The denoiser is split over the ranks with FSDP2 (:mod:`.placement`): its forwards are collectives."""

    # --- sampling ---------------------------------------------------------------------------
    def draw_prompts(self) -> list[str]:
        """``prompts_per_step`` training prompts, drawn with replacement by the run's generator."""
        picks = torch.randint(len(self.prompts), (self.recipe.training.prompts_per_step,), generator=self.generator)
        return [self.prompts[i] for i in picks.tolist()]

    def encode(self, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        return _encode(self.model, prompts)

    @staticmethod
    def select_cond(cond: tuple[torch.Tensor, torch.Tensor], index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return cond[0][index.to(cond[0].device)], cond[1][index.to(cond[1].device)]

    def initial_noise(self, n_prompts: int, group: int, *, same_within_group: bool,
                      generator: torch.Generator | None = None) -> torch.Tensor:  # fmt: skip
        """(n_prompts * group, C, H, W) starting noise; one draw per group when ``same_within_group`` (DanceGRPO)."""
        draws = n_prompts if same_within_group else n_prompts * group
        noise = torch.randn((draws, *self.model.latent_shape), generator=generator or self.generator)
        noise = noise.repeat_interleave(group, dim=0) if same_within_group else noise
        return noise.to(self.model.device)

    def sde_window(self) -> range | None:
        """Flow-GRPO-Fast's window of stochastic steps for this round: ``sde_window_size`` steps from a start
        drawn uniformly in ``[lo, hi - size]`` (flow_grpo ``sd3_pipeline_with_logprob_fast.py``); ``None``: off."""
        size = self.recipe.algorithm.sde_window_size
        if size == 0:
            return None
        lo, hi = sde_window_range(self.recipe.algorithm)
        start = int(torch.randint(lo, hi - size + 1, (1,), generator=self.generator))
        return range(start, start + size)

    def trained_steps(self, n_images: int, policy_steps: int, window: range | None = None) -> torch.Tensor:
        """(N, J) step indices trained per image: every step of the SDE window when there is one (Flow-GRPO-Fast),
        else the first J (Flow-GRPO) or a random J per image (DDPO, DanceGRPO)."""
        if window is not None:
            return torch.arange(window.start, window.stop).expand(n_images, len(window))
        count = max(1, int(policy_steps * self.settings.timestep_fraction))
        if not self.settings.shuffle_timesteps:
            return torch.arange(count).expand(n_images, count)
        return torch.stack([torch.randperm(policy_steps, generator=self.generator)[:count] for _ in range(n_images)])

    # --- rewards ----------------------------------------------------------------------------
    def score(self, latents: torch.Tensor, prompts: list[str]) -> tuple[torch.Tensor, dict[str, float]]:
        """(N,) rewards of the decoded images (NaN where a reward could not be computed) and per-term means.

        A term's mean is over every process's images (gathered, every term in one collective: every rank scores in
        lockstep), as the round's ``reward`` is: the mean of the ranks' own means would be NaN in a round where one
        rank's images all went unscored by that term (a prompt it cannot judge) and would weigh the ranks alike when
        they scored different numbers of images."""
        images = self.model.decode(latents).cpu()
        self.extra["last_scored"] = (images, prompts)
        samples = [RewardSample(target={"prompt": p, **self.targets.get(p, {})}) for p in prompts]
        results = self.reward(list(images), samples)
        rewards = torch.tensor([math_nan(r.score) for r in results], dtype=torch.float32)
        metrics = {"reward_missing": float(torch.isnan(rewards).float().mean())}
        labels = [label for label, _, _ in getattr(self.reward, "parts", [])]
        if labels:  # one gather for every term: an (N, T) table of this rank's images by term
            table = torch.tensor([[math_nan(r.components.get(label)) for label in labels] for r in results])
            means = torch.nanmean(gather_all(table).reshape(-1, len(labels)), dim=0)  # an empty gather comes back flat
            metrics.update({f"rewards/{label}/mean": float(mean) for label, mean in zip(labels, means, strict=True)})
        return rewards, metrics

    def advantages(
        self, method: Method, prompts: list[str], group_ids: torch.Tensor, rewards: torch.Tensor
    ) -> torch.Tensor:
        """Advantages over all processes' rewards (gathered), returned for this process's images."""
        from accelerate.utils import gather_object

        all_prompts = gather_object(list(prompts))
        offset = self.accelerator.process_index * int(group_ids.max() + 1)
        all_groups = gather_all(group_ids + offset)
        adv = method.advantages(self.tracker, all_prompts, all_groups, gather_all(rewards))
        start = self.accelerator.process_index * len(prompts)
        return adv[start : start + len(prompts)]

    def over_processes(self, metrics: dict[str, float]) -> dict[str, float]:
        """One round's metrics for the whole run, the same on every process (what ``metrics.csv`` logs).

        Counts (``*_evals``: compute) are summed over the processes; the rest are averaged, which is the
        mean over all images since every process samples as many (per-batch means such as
        ``train/loss`` weigh each process's batches alike). Values already equal everywhere (the
        gathered ``reward`` and reward terms' means, the evaluation) pass unchanged."""
        from accelerate.utils import gather_object

        if self.accelerator.num_processes == 1:
            return metrics
        everyone: list[dict[str, float]] = gather_object([metrics])
        out = {}
        for key in dict.fromkeys(k for m in everyone for k in m):
            values = [m[key] for m in everyone if key in m]
            if key.endswith("_evals"):
                out[key] = sum(values)
            else:
                out[key] = values[0] if all(v == values[0] for v in values) else sum(values) / len(values)
        return out

    def sampling(self) -> contextlib.AbstractContextManager[None]:
        """The block in which a rollout or an evaluation samples: a sharded denoiser gathered whole (in the compute
        dtype) once for it, so that its forwards need no collective; nothing for a replicated one."""
        return gathered(self.model.denoiser)

    # --- optimisation -----------------------------------------------------------------------
    def backward(self, loss: torch.Tensor, rows: int, window_rows: int) -> None:
        """Backward of ``loss``, the mean over ``rows`` rows of this rank, weighted as ``rows`` of the ``window_rows``
        rows that all ranks train in the optimiser step's window: the gradient summed over the ranks is the window's
        mean over every rank's rows, the one-process gradient. FSDP2 sums the ranks' gradients and DDP averages
        them, hence the factor. A filler micro-batch (``rows`` 0) adds nothing, but runs the collectives."""
        ranks = 1 if self.sharded else self.accelerator.num_processes
        self.accelerator.backward(loss * (rows * ranks) / window_rows)

    def optimizer_step(self) -> float:
        norm = self.accelerator.clip_grad_norm_(self.trainable, self.recipe.training.max_grad_norm)
        check_finite("the round's optimiser step", grad_norm=float(norm))
        if self.ema is not None:  # the calls of the step's window before it (Flow-GRPO's: one per sample batch)
            self.ema.before_optimizer_step(self.trainable)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.ema is not None:
            self.ema.after_optimizer_step(self.trainable)
        return float(norm)

    def end_round(self, *, discriminator_step: bool) -> None:
        """The EMA's part of a round's end: DanceGRPO's once-a-round call after a generator round, or the count
        an Adv-GRPO discriminator round adds to the authors' step counter (:mod:`.ema`)."""
        if self.ema is None:
            return
        if discriminator_step:
            self.ema.count_step()
        else:
            self.ema.after_round(self.trainable)

    @contextlib.contextmanager
    def reference(self) -> Iterator[None]:
        """The reference policy for the KL term: the adapters switched off, or the frozen initial copy."""
        if self.reference_model is not None:
            trained, self.model.denoiser = self.model.denoiser, self.reference_model
            try:
                yield
            finally:
                self.model.denoiser = trained
            return
        denoiser = self.accelerator.unwrap_model(self.model.denoiser)
        denoiser.disable_adapters()
        try:
            yield
        finally:
            denoiser.enable_adapters()

    # --- evaluation and output --------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self, step: int) -> dict[str, float]:
        """Held-out prompts, deterministic sampler (ODE / DDIM eta 0), fixed noise; EMA weights when kept.

        Writes ``samples/step-<step>.png`` (one row per prompt) and returns ``eval/reward`` (+ per-term means).
        """
        group = min(4, self.recipe.algorithm.group_size)
        gen = torch.Generator().manual_seed(self.recipe.training.eval_seed)
        start = self.initial_noise(len(self.eval_prompts), group, same_within_group=False, generator=gen)
        cond_index = torch.arange(len(self.eval_prompts)).repeat_interleave(group)
        cond = self.select_cond(self.encode(self.eval_prompts), cond_index)
        with self.ema_weights(), self.sampling():  # the EMA in the shards first, then gathered
            latents, _ = (self.eval_sampler or self.sampler).run(start, cond, 0.0, gen, sde_steps=set())
        prompts = [p for p in self.eval_prompts for _ in range(group)]
        rewards, metrics = self.score(latents, prompts)
        if self.accelerator.is_main_process:
            save_grid(self.model.decode(latents).cpu(), group, self.output_dir / SAMPLES_DIR / f"step-{step:05d}.png")
        out = {"eval/reward": float(torch.nanmean(rewards))}
        out.update({f"eval/{k}": v for k, v in metrics.items() if k.startswith("rewards/")})
        return out

    def ema_weights(self) -> contextlib.AbstractContextManager[None]:
        """The trained weights replaced by their EMA for the block (nothing when the run keeps none)."""
        return contextlib.nullcontext() if self.ema is None else self.ema.applied(self.trainable)

    def trainable_state(self) -> dict[str, torch.Tensor]:
        """The trained tensors by name (LoRA adapters, or every denoiser weight), whole and on the CPU. Sharded, they
        are gathered on the main process (a collective: every rank calls it; the others get ``{}``)."""
        denoiser = self.accelerator.unwrap_model(self.model.denoiser)
        if self.sharded:
            state = full_state_dict(denoiser)
            return {name: state[name] for name, p in denoiser.named_parameters() if p.requires_grad} if state else {}
        names = {id(p): n for n, p in denoiser.named_parameters()}
        return {names[id(p)]: p.detach().cpu().contiguous() for p in self.trainable}

    def save_final(self, directory: Path) -> None:
        """``final/trained.safetensors`` (EMA weights when kept) beside the resolved recipe."""
        from safetensors.torch import save_file

        from zoo.distributed import DataParallel

        with self.ema_weights():  # the state's CPU tensors share the weights' storage: used inside the block only
            state = self.trainable_state()
            if not self.sharded:  # replicas must end on the same trained weights (DDP's averaged gradients)
                DataParallel(cuda=self.accelerator.device.type == "cuda").check_same_weights(state)
            if self.accelerator.is_main_process:
                directory.mkdir(parents=True, exist_ok=True)
                save_file(state, str(directory / "trained.safetensors"))
        if self.accelerator.is_main_process:
            self.recipe.to_yaml(directory / "recipe.yaml")


def _encode(model: DiffusionModel, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(embeds, pooled)`` of ``prompts`` on the denoiser's device, in float32: the text encoders run in
    ``model.dtype`` and the denoiser's inputs are cast to its compute dtype by autocast or FSDP2, not here."""
    embeds, pooled = model.encoder(prompts)
    return embeds.to(model.device, torch.float32), pooled.to(model.device, torch.float32)


def math_nan(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def save_grid(images: torch.Tensor, per_row: int, path: Path) -> Path:
    """A PNG grid of (N, 3, H, W) images in [0, 1], ``per_row`` images per row, each upscaled to >= 64 px."""
    from torchvision.utils import save_image

    path.parent.mkdir(parents=True, exist_ok=True)
    scale = max(1, 64 // images.shape[-1])
    images = torch.nn.functional.interpolate(images, scale_factor=scale, mode="nearest") if scale > 1 else images
    save_image(images, str(path), nrow=per_row, padding=2)
    return path


def build_run(recipe: DiffusionRecipe, output_dir: Path, checked: DiffusionChecked | None = None) -> Run:
    """Model, adapters or full weights (sharded when the launch config says so), optimiser, EMA, tracker, generator,
    prompts and rewards for ``recipe``, from the method row and rewards the engine's check resolved (``checked``; it
    runs here when not given)."""
    from accelerate import Accelerator

    checked = check_diffusion(recipe) if checked is None else checked
    tr, alg = recipe.training, recipe.algorithm
    method = checked.method
    sharding = ENGINES.get(recipe.engine).launched(recipe.launch, recipe)
    accelerator = Accelerator(cpu=bool(tr.use_cpu))
    # a group of one shards too (`accelerate launch` starts an FSDP config on one GPU as one; `torchrun
    # --nproc_per_node 1` gets one here, as DataParallel.prepare gives the VLM loops): the mixed-precision policy
    # applies, and accelerate's own FSDP never replaces parameters the run has captured
    if sharding.sharded and "WORLD_SIZE" in os.environ and not torch.distributed.is_initialized():
        torch.distributed.init_process_group("nccl" if accelerator.device.type == "cuda" else "gloo")
    sharded = sharding.sharded and torch.distributed.is_available() and torch.distributed.is_initialized()
    precision = run_precision(str(accelerator.mixed_precision), recipe.model.dtype, sharded=sharded)
    if tr.num_threads is not None and accelerator.device.type == "cpu":
        torch.set_num_threads(tr.num_threads)
    # prompts first: a wrong prompt file is an error in a second, not after the base model has loaded
    prompts, eval_prompts, targets = _prompts(recipe)
    torch.manual_seed(tr.seed)  # every rank builds the same weights: sharding splits them as they are
    model = load_model(recipe.model.name, {"seed": tr.seed, **recipe.model.tiny}, recipe.model.resolution,
                       embedded_guidance=recipe.model.embedded_guidance, revision=recipe.model.revision,
                       max_sequence_length=recipe.model.max_sequence_length, dtype=precision.dtype("frozen"))  # fmt: skip
    _check_family(method, model)
    if getattr(model.encoder, "pipe", None) is not None:  # a pipeline's text encoders run on the device
        model.encoder.pipe.to(accelerator.device)
    model.vae.requires_grad_(False)
    model.vae.to(accelerator.device, dtype=precision.dtype("frozen"))
    reference_model = adapt(model, recipe, accelerator.device)
    if sharded:
        for denoiser in (model.denoiser, reference_model):
            if denoiser is not None:
                shard(denoiser, sharding, precision, accelerator.device)
        if reference_model is not None:  # FSDP2 keeps a root's weights gathered for the backward, which a reference
            reference_model.set_reshard_after_forward(True)  # never runs: free them after each forward
    trainable = [p for p in model.denoiser.parameters() if p.requires_grad]  # after sharding: the shards it made
    optimizer = torch.optim.AdamW(trainable, lr=tr.lr, betas=(0.9, 0.999), weight_decay=tr.weight_decay)
    if not sharded:  # DDP over several processes; a denoiser sharded by the zoo must not be wrapped in it
        model.denoiser, optimizer = accelerator.prepare(model.denoiser, optimizer)
    ema = None
    if tr.ema_decay is not None:  # over the parameters the optimiser steps, once they are where they train
        device = torch.device(tr.ema_device) if tr.ema_device else None
        ema = ShardEMA(trainable, tr.ema_decay, warmup=tr.ema_warmup, interval=tr.ema_interval,
                       calls_per_step=tr.ema_calls_per_step, every=tr.ema_every, device=device)
    generator = torch.Generator().manual_seed(rank_seed(tr.seed, accelerator.process_index))
    settings = alg.settings(method)
    null_cond = _encode(model, [""]) if settings.guidance_scale != 1.0 else None  # the authors' null prompt
    guidance = {"guidance_scale": settings.guidance_scale, "null_cond": null_cond,
                "detach_uncond": settings.detach_uncond}  # fmt: skip
    sampler = Sampler(model, method.step, alg.num_steps, **guidance)
    eval_sampler = None
    if alg.eval_num_steps not in (None, alg.num_steps):  # its own scheduler: DDIM's step reads the step count from it
        eval_model = replace(model, scheduler=copy.deepcopy(model.scheduler))
        eval_sampler = Sampler(eval_model, method.step, alg.eval_num_steps, **guidance)
    run = Run(recipe=recipe, model=model, sampler=sampler, accelerator=accelerator,
              optimizer=optimizer, trainable=trainable, reward=_reward(recipe, checked.rewards), prompts=prompts,
              eval_prompts=eval_prompts, targets=targets, settings=settings, generator=generator,
              output_dir=Path(output_dir), tracker=method.tracker() if method.tracker else None, ema=ema,
              reference_model=reference_model, eval_sampler=eval_sampler, sharded=sharded)  # fmt: skip
    if method.adversarial:
        attach_discriminator(run)
    world = accelerator.num_processes
    held = (f"FSDP2 over {world} ranks ({'/'.join(sharding.units)} blocks, launch {sharding.launch})" if sharded
            else f"replicated on {world} process(es)")  # fmt: skip
    logger.info("%s: %d trainable parameters (%s), method %s, compute %s over float32 weights, %s", recipe.name,
                sum(p.numel() for p in trainable), "LoRA" if tr.lora.enabled else "full", alg.method,
                precision.compute, held)  # fmt: skip
    return run


def _prompts(recipe: DiffusionRecipe) -> tuple[list[str], list[str], dict[str, Mapping[str, Any]]]:
    """Training prompts, held-out prompts and, by prompt, the targets their datasets carry (a GenEval row: what
    the image must hold), which the rewards read beside the prompt."""
    config = recipe.prompts
    train = [] if config.train else config.data.load()
    held_out = []
    if not config.eval and config.data.eval_name:  # a held-out split by design: no training-on-test warning
        held_out = list(load_dataset(config.data.eval_name, **config.data.eval_kwargs))
    prompts = list(config.train) or [s.question for s in train]
    eval_prompts = list(config.eval) or [s.question for s in held_out] or prompts[:4]
    targets = {s.question: s.target for s in (*train, *held_out) if isinstance(s.target, Mapping)}
    return prompts, eval_prompts, targets


def _check_family(method: Method, model: DiffusionModel) -> None:
    family = {"FlowMatchEulerDiscreteScheduler": "flow", "DDIMScheduler": "ddim", "LCMScheduler": "lcm"}
    found = family.get(type(model.scheduler).__name__)
    if found != method.family:
        raise ValueError(f"method {method.name!r} needs a {method.family} model; {model.config.get('name')} "
                         f"samples with {type(model.scheduler).__name__}")  # fmt: skip


def _reward(recipe: DiffusionRecipe, rewards: tuple[Any, ...]) -> WeightedSum | None:
    """The recipe's weighted reward terms, built from what the check looked up (``rewards``); ``None`` for an
    adversarial method: its discriminator is attached next."""
    if not recipe.rewards:
        return None
    return WeightedSum([(spec.configure(reward), spec.weight) for spec, reward in zip(recipe.rewards, rewards)],
                       name="reward")  # fmt: skip


def load_references(run: Run) -> References:
    """The reference dataset's images, indexed by their sample's prompt and decoded at the model's output size when
    a step draws them (:class:`~zoo.engines.diffusion.adversarial.References`); every training prompt must have one
    (the authors' run stops at a prompt without references)."""
    size = run.model.latent_shape[-1] * 2 ** (len(run.model.vae.config.block_out_channels) - 1)
    name = run.recipe.algorithm.reference_images.name
    sources, rows = [], {}
    for sample in run.recipe.algorithm.reference_images.load():
        for image in sample.images:
            rows.setdefault(sample.question, []).append(len(sources))
            sources.append(image)
    if not sources:
        raise ValueError(f"adv_grpo: dataset {name!r} has no images")
    references = References(sources, rows, functools.partial(decode_reference, size=size))
    if absent := references.missing(run.prompts):
        raise ValueError(f"adv_grpo: {len(absent)} training prompt(s) have no reference image in {name!r} (e.g. "
                         f"{absent[:3]}); its samples' prompts must name the training prompts they depict")  # fmt: skip
    return references


def attach_discriminator(run: Run) -> None:
    """Make the run's reward its discriminator (an adversarial recipe lists no other) and keep it for checkpoints;
    the recipe's ``null`` backbone and learning rate take the discriminator's own
    (:data:`~zoo.engines.diffusion.adversarial.DISCRIMINATORS`)."""
    alg = run.recipe.algorithm
    kind, seed = DISCRIMINATORS[alg.discriminator], run.recipe.training.seed
    backbone = alg.discriminator_backbone or kind.weights
    lr = kind.lr if alg.discriminator_lr is None else alg.discriminator_lr
    if alg.discriminator == "pickscore":
        clip = load_pickscore(backbone, alg.discriminator_tune_layer, seed, run.accelerator.device)
        reward = PickScoreReward(load_references(run), lr, run.generator, clip)
    else:
        dino = DinoDiscriminator(load_backbone(backbone, seed))
        reward = AdversarialReward(load_references(run), lr, run.generator, dino, alg.d_times)
    run.reward = reward
    run.extra["discriminator"] = reward
