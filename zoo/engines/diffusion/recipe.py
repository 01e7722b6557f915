"""The recipe of the ``diffusion`` engine: RL of a text-to-image diffusion or flow model.

The method is a field (``algorithm.method``) that picks the ``algorithm`` block's class: the knobs every method
reads (:class:`DiffusionAlgorithmConfig`) and the method's own (a tree's shape, Adv-GRPO's discriminator, the flat
methods' SDE window), so a key of another method is an unknown key. Its paper defaults come from the method table
(:mod:`zoo.engines.diffusion.methods`) and any field left ``null`` takes them. YAML layout::

    name: flow-grpo-tiny
    engine: diffusion
    model: {name: "tiny:sd3"}
    prompts: {train: ["a red square", ...], eval: ["a blue circle"]}
    rewards: [{name: brightness}]
    algorithm: {method: flow_grpo, group_size: 8, num_steps: 4, clip_range: 1.0e-2}
    training: {lr: 1.0e-3, steps: 30, prompts_per_step: 2, lora: {enabled: false}}
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal

from zoo.recipe import ChoiceConfig, DataConfig, Recipe, RecipeError, RewardSpec, TrainingBase
from zoo_common.registry import Registry

if TYPE_CHECKING:
    from zoo.engines.diffusion.methods import Method, StepSettings

@dataclass(frozen=True)
class DiffusionModelConfig:
    """The denoiser, its VAE, scheduler and prompt encoder."""

    name: str = "tiny:sd3"
    """A diffusers text-to-image pipeline (``model_index.json``: SD3/SD3.5, FLUX.1, SD 1.x/2.x, LCM) as a directory, a
    zoo name (``flux-1-dev``, ``stable-diffusion-3.5-medium``) or a Hub id; or
    ``tiny:sd3`` (SD3 transformer, flow matching), ``tiny:unet`` (UNet, DDIM), ``tiny:lcm`` (UNet, LCM
    scheduler): tiny random models built from configs with a hashed bag-of-words prompt encoder, for CPU
    runs; or a tiny model saved by :func:`zoo.engines.diffusion.models.save_tiny`."""
    revision: str | None = None
    """Hub revision (branch, tag or commit) of a zoo name or Hub id (``null``: the entry's pin, or ``main``)."""
    resolution: int | None = None
    """Image size in pixels for a pipeline directory (``null``: the denoiser's ``sample_size``; FLUX 1024)."""
    embedded_guidance: float | None = None
    """The guidance value a guidance-distilled denoiser takes as an input, in sampling and training: FLUX.1-dev's
    guidance embedding (``null``: DanceGRPO's 3.5) or a latent consistency model's ``timestep_cond`` of
    ``w = guidance - 1`` (``null``: RLCM's 8); unused by other denoisers. It is not classifier-free guidance
    (``algorithm.guidance_scale``), which would add a second, null-prompt forward."""
    max_sequence_length: int | None = None
    """T5 tokens of the prompt encoding for SD3 and FLUX pipelines (``null``: the pipeline's default, SD3 256 and
    FLUX 512; Flow-GRPO encodes with 128)."""
    tiny: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of the tiny builder (``sample_size``, ``seed``, ...)."""
    dtype: str = "float32"
    """``float32``, ``bfloat16`` or ``float16``: what the frozen parts (text encoders, VAE) are held and run in. The
    trained denoiser weights are float32 whatever it says (master weights; compute is the launch config's
    ``mixed_precision``), and log-probs are always float32."""


@dataclass(frozen=True)
class PromptsConfig:
    """Training and held-out prompts: inline lists, or a registered dataset's questions."""

    train: tuple[str, ...] = ()
    """Training prompts (used when ``data.name`` is empty)."""
    eval: tuple[str, ...] = ()
    """Held-out prompts sampled deterministically at every evaluation (none: ``data.eval_name``'s prompts, else
    the first training prompts)."""
    data: DataConfig = field(default_factory=DataConfig)
    """A registered dataset whose samples' question text are the training prompts (``data.name`` set), and
    ``data.eval_name`` / ``eval_kwargs`` one for held-out prompts. A sample's dict target (a GenEval row: objects,
    counts, colours, positions) reaches the rewards with its prompt."""


@dataclass(frozen=True)
class DiffusionAlgorithmConfig(ChoiceConfig):
    """The knobs every method reads. ``algorithm.method`` picks the method's own class (registered below), which adds
    the fields that method alone reads, so a key of another method is refused by name instead of silently ignored;
    ``null`` takes the method's paper default (:meth:`settings`)."""

    choices = Registry("diffusion method config")

    method: str = "flow_grpo"
    """``flow_grpo``, ``dance_grpo``, ``ddpo``, ``rlcm``, ``tree_grpo`` or ``adv_grpo`` (``zoo engines``)."""
    group_size: int = 8
    """Images per prompt per step (G); advantages are normalised within a prompt's images."""
    num_steps: int = 10
    """Denoising steps of a rollout (the authors sample with 10-50; 4 keeps CPU runs fast)."""
    eval_num_steps: int | None = None
    """Denoising steps of the held-out evaluation (Flow-GRPO trains on 10-step rollouts and evaluates with 40,
    its ``eval_num_steps``); ``null``: ``num_steps``."""
    clip_range: float | None = None
    """PPO clip epsilon on the per-step ratio (papers: 1e-4)."""
    adv_clip_max: float | None = None
    """Advantages are clamped to ``[-adv_clip_max, adv_clip_max]`` (5; RLCM 10)."""
    beta: float = 0.0
    """KL-to-reference coefficient on the step means (Flow-GRPO 0.04); 0 skips the reference."""
    timestep_fraction: float | None = None
    """Fraction of the stochastic steps trained per image (Flow-GRPO 0.99, DanceGRPO 0.6, DDPO 1.0); TreeGRPO trains
    every branch transition, so 1 is its only value."""
    guidance_scale: float | None = None
    """Classifier-free guidance ``w``, in sampling *and* in the trained step's mean:
    ``out = out_null + w (out_prompt - out_null)``, the null prompt being the encoded empty string
    (Flow-GRPO 4.5, DDPO 5.0; DanceGRPO and RLCM 1); 1 turns guidance off (one forward per step)."""
    filter_zero_advantage: bool | None = None
    """Drop images whose advantage is exactly 0 before training (Flow-GRPO: a group whose rewards all
    tie carries no signal); their share is logged as ``kept_fraction``."""
    num_inner_epochs: int = 1
    """Passes over each batch of rollouts."""

    def __post_init__(self) -> None:
        """The class must be the one ``method`` registered (a config built by hand, or ``replace``-d to another
        method, would carry the wrong method's fields), and the shared knobs must make a rollout and a loss."""
        chosen = DiffusionAlgorithmConfig.chosen({"method": self.method}, "algorithm.")
        if chosen is not type(self):
            raise RecipeError(
                f"algorithm.method={self.method!r} is read into {chosen.__name__}, not {type(self).__name__}"
            )
        if self.group_size < 2:
            raise RecipeError(f"algorithm.group_size={self.group_size}; group-relative advantages need >= 2")
        for key in ("num_steps", "eval_num_steps"):
            if getattr(self, key) is not None and getattr(self, key) < 2:
                raise RecipeError(f"algorithm.{key}={getattr(self, key)}; a rollout needs at least 2 denoising steps")
        if self.timestep_fraction is not None and not 0 < self.timestep_fraction <= 1:
            raise RecipeError(f"algorithm.timestep_fraction={self.timestep_fraction} must be in (0, 1]")
        for key in ("clip_range", "adv_clip_max"):
            if getattr(self, key) is not None and getattr(self, key) <= 0:
                raise RecipeError(f"algorithm.{key} must be > 0, got {getattr(self, key)}")
        if self.guidance_scale is not None and self.guidance_scale < 1:
            raise RecipeError(f"algorithm.guidance_scale={self.guidance_scale} must be >= 1 (1 is no guidance)")

    def settings(self, method: Method) -> StepSettings:
        """``method``'s paper values with this config's non-null ones over them; a knob this method's class lacks
        keeps the row's value (see :class:`~zoo.engines.diffusion.methods.StepSettings`)."""
        own = {f.name for f in fields(self)}
        return replace(method.defaults, **{f.name: getattr(self, f.name) for f in fields(method.defaults)
                                           if f.name in own and getattr(self, f.name) is not None})  # fmt: skip


@dataclass(frozen=True)
class NoisyStepConfig(DiffusionAlgorithmConfig):
    """The noise scale of a policy step that is given one: every method's but RLCM's, whose LCM step re-noises with
    the std its schedule fixes (:func:`zoo.rl.diffusion_steps.lcm_step_with_logprob`)."""

    noise_level: float | None = None
    """Flow-GRPO's ``a`` (0.7), DanceGRPO's ``eta`` (0.3), DDPO's DDIM ``eta`` (1.0)."""


@dataclass(frozen=True)
class FlatRolloutConfig(DiffusionAlgorithmConfig):
    """Where a method samples each prompt's images as separate chains (every method but TreeGRPO): whether a group
    starts from one noise, which of a chain's steps are trained, and Flow-GRPO-Fast's window of stochastic steps."""

    shuffle_timesteps: bool | None = None
    """Train a random subset of steps per image (DDPO, DanceGRPO) instead of the first ones (Flow-GRPO)."""
    init_same_noise: bool | None = None
    """All images of a group start from the same noise (DanceGRPO)."""
    sde_window_size: int = 0
    """Flow-GRPO-Fast: > 0 makes only ``sde_window_size`` consecutive steps stochastic (ODE elsewhere),
    at a start drawn each round, and trains exactly those steps (``timestep_fraction`` unused); 0: off."""
    sde_window_range: tuple[int, int] | None = None
    """``[lo, hi)`` step range the window lies in (start uniform in ``[lo, hi - size]``); ``null``:
    ``[0, num_steps // 2)``, the authors' fast presets."""

    def __post_init__(self) -> None:
        """A window size of zero or more; whether it fits the method's stochastic steps asks the method table
        (:func:`zoo.engines.diffusion.checks.check_diffusion`)."""
        super().__post_init__()
        if self.sde_window_size < 0:
            raise RecipeError(f"algorithm.sde_window_size={self.sde_window_size}: needs >= 0 (0: no window)")


@DiffusionAlgorithmConfig.register("flow_grpo")
@dataclass(frozen=True)
class FlowGRPOConfig(FlatRolloutConfig, NoisyStepConfig):
    """Flow-GRPO (arXiv 2505.05470), and Flow-GRPO-Fast with ``sde_window_size``: the shared knobs, a noise scale
    and flat chains, nothing of its own."""


@DiffusionAlgorithmConfig.register("dance_grpo")
@dataclass(frozen=True)
class DanceGRPOConfig(FlatRolloutConfig, NoisyStepConfig):
    """DanceGRPO (arXiv 2505.07818): what sets it apart (its shifted schedule, the untrained last step) is the method
    row's, not a recipe field."""

    method: str = "dance_grpo"


@DiffusionAlgorithmConfig.register("ddpo")
@dataclass(frozen=True)
class DDPOConfig(FlatRolloutConfig, NoisyStepConfig):
    """DDPO (arXiv 2305.13301): the DDIM step's ``eta`` is its noise scale."""

    method: str = "ddpo"


@DiffusionAlgorithmConfig.register("rlcm")
@dataclass(frozen=True)
class RLCMConfig(FlatRolloutConfig):
    """RLCM (arXiv 2404.03673): flat chains of LCM steps, which take no noise scale."""

    method: str = "rlcm"


@DiffusionAlgorithmConfig.register("tree_grpo")
@dataclass(frozen=True)
class TreeGRPOConfig(NoisyStepConfig):
    """TreeGRPO (arXiv 2512.08153): a prompt's group is one tree (:mod:`zoo.engines.diffusion.tree`) whose leaves share
    their start and whose branch transitions are all trained, so the flat chains' knobs do not apply."""

    method: str = "tree_grpo"
    branch_steps: tuple[int, ...] = (1, 2, 3)
    """TreeGRPO: step indices where each node splits into ``branch_factor`` children (SDE there, ODE elsewhere)."""
    branch_factor: int = 2
    """TreeGRPO: children per split; ``group_size`` must equal ``branch_factor ** len(branch_steps)``."""

    def __post_init__(self) -> None:
        """A tree of ``group_size`` leaves that branches before the last step."""
        super().__post_init__()
        if self.timestep_fraction not in (None, 1.0):
            raise RecipeError(f"algorithm.timestep_fraction={self.timestep_fraction}: tree_grpo trains every branch "
                              "transition (1 or null)")  # fmt: skip
        steps = sorted(set(self.branch_steps))
        if not steps or steps[0] < 0 or steps[-1] >= self.num_steps - 1 or len(steps) != len(self.branch_steps):
            raise RecipeError(f"algorithm.branch_steps={list(self.branch_steps)} must be distinct step indices in "
                              f"[0, num_steps - 2] = [0, {self.num_steps - 2}]")  # fmt: skip
        b = self.branch_factor
        if b < 2 or self.group_size != b ** len(steps):
            raise RecipeError(f"tree_grpo: group_size={self.group_size} must equal branch_factor ** len(branch_steps) = "
                              f"{b}**{len(steps)} = {b ** len(steps)} (branch_factor >= 2)")  # fmt: skip


@DiffusionAlgorithmConfig.register("adv_grpo")
@dataclass(frozen=True)
class AdvGRPOConfig(FlatRolloutConfig, NoisyStepConfig):
    """Adv-GRPO (arXiv 2511.20256): Flow-GRPO's chains rewarded by a discriminator trained online against reference
    images (:mod:`zoo.engines.diffusion.adversarial`). Its fields stay flat under ``algorithm``, as the recipes,
    their provenance rows and ``--set algorithm.discriminator=...`` name them."""

    method: str = "adv_grpo"
    sde_window_size: int = 2
    """Adv-GRPO samples fast: two SDE steps, ODE elsewhere, in every preset of the authors' (``train_num_steps = 2``,
    showlab/Adv-GRPO@8287f90:config/grpo.py:42 ``dino_cotrain_sd3_fast``, :113 ``dino_cotrain_sd3_patch_fast``,
    :326 ``pickscore_cotrain_sd3_fast``); 0 turns the window off."""
    sde_window_range: tuple[int, int] | None = (0, 2)
    """The window starts at the first step (``random_timestep = 0`` in the same presets, config/grpo.py:55, :126,
    :339)."""
    discriminator: str = "dinov2"
    """Adv-GRPO: whose score is the reward: ``dinov2`` (a head on a frozen DINOv2, their
    ``train_sd3_fast_dino_patch.py``) or ``pickscore`` (PickScore's CLIP, its last vision layers fine-tuned,
    their ``train_sd3_fast_pickscore.py``); :mod:`zoo.engines.diffusion.adversarial`."""
    discriminator_lr: float | None = None
    """Adv-GRPO: learning rate of what the discriminator trains (``null``: the authors' ``d_lr``, 1e-4 for
    ``dinov2``'s head, 5e-6 for ``pickscore``'s layers)."""
    d_times: int = 10
    """Adv-GRPO ``dinov2``: the alternation period. Round ``r`` (0-based) trains the generator alone when
    ``(r + 1) % d_times == 0`` and the discriminator alone otherwise: the authors' 10 gives 9
    discriminator-only rounds per generator round; 1 never trains the discriminator (their ``train_d=False``).
    Unused by ``pickscore``, whose rounds go by the scores (its script comments the ``d_times`` test out)."""
    discriminator_backbone: str | None = None
    """Adv-GRPO: the discriminator's weights (Hub id or directory; ``null``: ``facebook/dinov2-base`` for
    ``dinov2``, ``yuvalkirstain/PickScore_v1`` for ``pickscore``), or ``tiny:dinov2`` / ``tiny:clip`` (a small
    random one built from a config, seeded, for CPU runs)."""
    discriminator_tune_layer: int = -1
    """Adv-GRPO ``pickscore``: the vision encoder layers from this index on are trained, the rest of the CLIP is
    frozen (the authors' ``config.tune_layer``, -1: the last layer alone)."""
    reference_images: DataConfig = field(default_factory=DataConfig)
    """Adv-GRPO: a registered dataset whose sample images are the discriminator's positives for their sample's prompt
    (every training prompt needs at least one; the authors pair references with prompts)."""

    def __post_init__(self) -> None:
        """References and a period that trains the generator; the discriminator and its backbone are the
        discriminator table's (:func:`zoo.engines.diffusion.checks.check_diffusion`)."""
        super().__post_init__()
        if not self.reference_images.name:
            raise RecipeError("adv_grpo needs algorithm.reference_images.name: a registered dataset whose images are "
                              "the discriminator's positives")  # fmt: skip
        if self.d_times < 1:
            raise RecipeError(f"algorithm.d_times={self.d_times} must be >= 1 (every d_times-th round trains "
                              "the generator, the others the discriminator)")  # fmt: skip


@dataclass(frozen=True)
class DiffusionLoraConfig:
    """LoRA adapters through peft on the denoiser's attention projections (the papers' default)."""

    enabled: bool = True
    """Train adapters; ``false`` trains every denoiser weight (fastest learning on tiny CPU models)."""
    r: int = 32
    """Rank (Flow-GRPO 32, DDPO/RLCM 4-8)."""
    alpha: int = 64
    """lora_alpha."""
    target_modules: tuple[str, ...] = ()
    """Module names; empty picks the architecture's attention projections."""


@dataclass(frozen=True, kw_only=True)
class DiffusionTrainingConfig(TrainingBase):
    """Sampling rounds, optimiser and output. One ``step`` is one round: sample, score, train."""

    lr: float = 3e-4
    """AdamW learning rate (Flow-GRPO/DDPO 3e-4 with LoRA)."""
    prompts_per_step: int = 2
    """Prompts drawn per round; each gets ``algorithm.group_size`` images."""
    train_batch_size: int = 8
    """Images per forward/backward micro-batch."""
    grad_accum: int | None = None
    """Backward passes (micro-batch x trained step) per optimiser step; ``null``: one optimiser
    step per pass over the round (the authors'); 1: a step after every backward."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm."""
    weight_decay: float = 1e-4
    """AdamW weight decay."""
    ema_decay: float | None = None
    """EMA of the trained weights, used for evaluation (Flow-GRPO on); ``null`` disables it."""
    ema_warmup: bool = True
    """Warm the EMA decay up as ``min((1 + s) / (10 + s), ema_decay)``, ``s`` the optimiser steps taken when it is
    called (Flow-GRPO's ``EMAModuleWrapper``, yifan123/flow_grpo@ac4c86e:flow_grpo/ema.py:33-37); ``false`` decays
    by ``ema_decay`` at every update (DanceGRPO's ``FSDP_EMA``,
    XueZeyue/DanceGRPO@15cc71d:fastvideo/train_grpo_flux.py:76-85)."""
    ema_every: Literal["optimizer_step", "round"] = "optimizer_step"
    """When the EMA is called: ``optimizer_step``, ``ema_calls_per_step`` times for each optimiser step (Flow-GRPO
    calls it after every sample batch, yifan123/flow_grpo@ac4c86e:scripts/train_sd3.py:954-955); ``round``, once
    after each round's training (DanceGRPO, after ``train_one_step``,
    XueZeyue/DanceGRPO@15cc71d:fastvideo/train_grpo_flux.py:866-867)."""
    ema_calls_per_step: int = 1
    """Calls per optimiser step under ``ema_every: optimizer_step``: Flow-GRPO's sample batches per optimiser step
    (its ``train.gradient_accumulation_steps``), all but the last made with the previous step's weights and count
    (:mod:`zoo.engines.diffusion.ema`)."""
    ema_interval: int = 1
    """A call moves the EMA only when ``(s + 1) % ema_interval == 0``, ``s`` the optimiser steps taken (Adv-GRPO's
    discriminator rounds counted too): Flow-GRPO's ``update_step_interval`` 8
    (yifan123/flow_grpo@ac4c86e:flow_grpo/ema.py:45, scripts/train_sd3.py:445)."""
    ema_device: str | None = None
    """Where the EMA is kept: ``null`` (or ``""``) beside the trained weights, ``cpu`` in CPU memory (DanceGRPO keeps
    its EMA of FLUX's 12B weights there, 44 GiB in float32, XueZeyue/DanceGRPO@15cc71d:fastvideo/train_grpo_flux.py:69-73).
    Under FSDP each rank keeps the rows of the weights it holds."""
    eval_every: int = 10
    """Evaluate held-out prompts (deterministic sampler, fixed noise) every N rounds and at the end."""
    eval_seed: int = 1234
    """Seed of the evaluation noise (the same images' noise at every evaluation)."""
    lora: DiffusionLoraConfig = field(default_factory=DiffusionLoraConfig)
    """LoRA settings (on by default)."""
    num_threads: int | None = 1
    """torch CPU threads; tiny models are 10-60x slower with 2 threads on a 2-core machine."""
    use_cpu: bool | None = None
    """Force CPU; ``null`` uses a GPU when accelerate sees one."""


@dataclass(frozen=True, kw_only=True)
class DiffusionRecipe(Recipe):
    """A diffusion/flow RL run: a method, a model, prompts and image rewards."""

    rewards: tuple[RewardSpec, ...] = ()
    """Reward terms on the decoded images (``rewards`` protocol, images in); the weighted sum is trained.
    Empty for an adversarial method (Adv-GRPO), whose online discriminator is the reward."""
    prompts: PromptsConfig = field(default_factory=PromptsConfig)
    """Training and held-out prompts."""
    model: DiffusionModelConfig = field(default_factory=DiffusionModelConfig)
    """The model."""
    algorithm: DiffusionAlgorithmConfig = field(default_factory=FlowGRPOConfig)
    """The method."""
    training: DiffusionTrainingConfig = field(default_factory=DiffusionTrainingConfig)
    """Rounds, optimiser, checkpoints."""

    def validate(self) -> None:
        """Prompts and usable training settings; what the method row asks of the rest (its rewards, a model of its
        sampler family) is the engine's check (:func:`zoo.engines.diffusion.checks.check_diffusion`)."""
        tr = self.training
        if not self.prompts.train and not self.prompts.data.name:
            raise RecipeError("prompts.train is empty and prompts.data.name is unset; give training prompts")
        if tr.train_batch_size < 1 or tr.prompts_per_step < 1 or (tr.grad_accum is not None and tr.grad_accum < 1):
            raise RecipeError("training.train_batch_size, prompts_per_step and grad_accum must be >= 1")
        if tr.ema_decay is not None and not 0 < tr.ema_decay < 1:
            raise RecipeError(f"training.ema_decay={tr.ema_decay} must be in (0, 1) or null")
        if tr.ema_calls_per_step < 1 or tr.ema_interval < 1:
            raise RecipeError(f"training.ema_calls_per_step={tr.ema_calls_per_step} and ema_interval={tr.ema_interval} "
                              "must be >= 1")  # fmt: skip
        if tr.ema_every == "round" and tr.ema_calls_per_step != 1:
            raise RecipeError(f"training.ema_calls_per_step={tr.ema_calls_per_step} counts calls per optimiser step; "
                              "with ema_every: round the EMA is called once a round, set it to 1")  # fmt: skip
        if tr.ema_device not in (None, "", "cpu"):
            raise RecipeError(f"training.ema_device={tr.ema_device!r}: null keeps the EMA beside the trained weights, "
                              "cpu in CPU memory")  # fmt: skip


def sde_window_range(alg: FlatRolloutConfig) -> tuple[int, int]:
    """``[lo, hi)`` the SDE window is drawn in: the recipe's, or ``[0, num_steps // 2)``."""
    if alg.sde_window_range is None:
        return 0, alg.num_steps // 2
    lo, hi = alg.sde_window_range
    return int(lo), int(hi)
