"""The recipes of the VLM RL loops: a GRPO-family run on a VLM that writes text, one class per loop.

:class:`VLMRLRecipe` holds what every loop reads (prompts, rewards, policy, algorithm, budget) and
checks its own fields; :class:`VLMRecipe` (``vlm-trl``, single-turn GRPO on TRL), :class:`SemiOnlineRecipe`
(``vlm-semi-online``, UI-S1's multi-turn loop) and :class:`VerlRecipe` (``vlm-verl``, the export to a
cluster) each add the block only their loop reads and refuse what it cannot run, so a recipe never
carries settings its engine ignores. The shared machinery (YAML, overrides, run directory) is
:mod:`zoo.recipe`'s. What the names resolve to (the entry, the loss row of :mod:`zoo.algorithms`, the estimator,
the plug-ins, the rollout backend, the rewards) is the engines' check step (:mod:`zoo.engines.vlm.checks`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from zoo.recipe import DataConfig, Recipe, RecipeError, RewardSpec, TrainingBase

if TYPE_CHECKING:
    from zoo.kinds import VLMSpec
    from zoo.sharding import Sharding


@dataclass(frozen=True)
class ModelConfig:
    """Which policy to train."""

    name: str = "tiny:qwen2_5_vl"
    """A zoo model name (``zoo list``), a local directory with a transformers checkpoint, a Hugging Face
    repository id (``Qwen/Qwen2.5-VL-7B-Instruct``: the base models recipes start from), or
    ``tiny:qwen2_5_vl`` / ``tiny:qwen3_vl`` for a random tiny model built offline (CPU smoke runs)."""
    revision: str | None = None
    """Hub revision (commit or tag) when ``name`` resolves to a Hub repository; ``None`` uses the entry's pin."""
    dtype: str = "auto"
    """The compute dtype: ``auto`` (float32 on CPU, bfloat16 on a GPU), ``float32``, ``bfloat16`` or ``float16``. The
    trained weights stay float32 masters under a 16-bit compute (:mod:`zoo.precision`; ``training.fp32_master_weights``)
    and frozen copies (a KL reference, a LoRA base) are held in this dtype."""
    tiny: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for :func:`zoo.tiny.build_tiny_vlm` (``hidden``, ``layers``, ``seed``...) when
    ``name`` is ``tiny:*``. Without ``corpus`` the tokenizer is trained on the training prompts and targets."""
    added_tokens: str | None = None
    """``"package.module:NAME"`` of a sequence of strings the model's vocabulary must hold as whole tokens
    (an action codebook, as AutoVLA adds its action tokens to Qwen2.5-VL): a ``tiny:`` model builds them
    into its tokenizer, any other model gets the missing ones added and its embeddings resized."""
    trust_remote_code: bool = False
    """Allow Python code shipped with the model (a config's ``auto_map``); as for ``zoo.load``, a model
    that has some is refused without it. Read the code first."""
    min_pixels: int | None = None
    """Smallest image area the processor resizes to (Qwen-VL smart resize). ``None``: the entry's
    :attr:`~zoo.kinds.VLMSpec.min_pixels` when ``name`` is a zoo entry, else the processor's own. The
    processor carries it into training, into saved checkpoints (so ``zoo eval`` sees the same frame) and
    into each sample's ``target["resized_size"]``, the frame box rewards map predictions from."""
    max_pixels: int | None = None
    """Largest image area the processor resizes to (Vision-R1 trains at 401408); ``None`` as ``min_pixels``."""
    entry: str | None = None
    """The zoo entry whose input contract the run trains with, as ``zoo.load`` applies it at inference:
    its system prompt and user template wrap each sample's question (the dataset yields raw questions),
    and its pixel limits size the images. ``None``: the samples' prompts as the dataset wrote them."""
    variant: str | None = None
    """One of ``entry``'s named system prompts (:attr:`zoo.kinds.VLMSpec.variants`) to train with instead of
    its default, when the authors train with another than they infer with (Visual-RFT's ``train``: none).
    ``zoo run ENTRY --system NAME`` asks with the same one."""

    def __post_init__(self) -> None:
        for key in ("min_pixels", "max_pixels"):
            value = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise RecipeError(f"model.{key}={value!r}: a pixel count must be a positive integer (or null)")
        if self.min_pixels is not None and self.max_pixels is not None and self.min_pixels > self.max_pixels:
            raise RecipeError(f"model.min_pixels={self.min_pixels} is above model.max_pixels={self.max_pixels}")
        if self.variant is not None and self.entry is None:
            raise RecipeError(f"model.variant={self.variant!r} names a prompt of model.entry, which is not set")

    def contract(self) -> VLMSpec | None:
        """The :class:`~zoo.kinds.VLMSpec` of ``entry`` (``None`` without one), its system prompt the named
        ``variant`` when set; a missing or non-VLM entry, or an unknown variant, is a :class:`RecipeError`.
        The engines' check step looks it up first and the loops take its result (:mod:`zoo.engines.vlm.checks`)."""
        if self.entry is None:
            return None
        from zoo.kinds import VLMSpec
        from zoo.registry import info
        from zoo_common.registry import UnknownNameError

        try:
            spec = info(self.entry).spec
        except UnknownNameError as err:
            raise RecipeError(f"model.entry: {err}") from None
        if not isinstance(spec, VLMSpec):
            raise RecipeError(f"model.entry={self.entry!r} is not a vision-language entry")
        if self.variant is None:
            return spec
        if self.variant not in spec.variants:
            raise RecipeError(f"model.variant={self.variant!r}: {self.entry} publishes "
                              f"{', '.join(sorted(spec.variants)) or 'no prompt variants'}")  # fmt: skip
        return replace(spec, system=spec.variants[self.variant] or None)


def check_own_loop_dtype(model: ModelConfig, loop: str) -> None:
    """The zoo's own loops (``vlm-sft``, ``vlm-semi-online``) compute in float32 or bfloat16: float16 would need a loss
    scaler they do not run (TRL's engine takes it through accelerate's)."""
    if model.dtype == "float16":
        raise RecipeError(f"model.dtype=float16: {loop} runs no loss scaler for float16's narrow range; use bfloat16")


def check_sharding(recipe: VLMRLRecipe, sharding: Sharding) -> None:
    """What the ``vlm-semi-online`` engine refuses under a sharding (its :class:`~zoo.engines.Engine` ``launch_check``):
    LoRA with an FSDP launch, whose adapters are small enough to hold whole on every GPU."""
    from zoo.sharding import ShardingError

    if sharding.sharded and recipe.training.lora.enabled:
        raise ShardingError(f"training.lora with launch: {sharding.launch} (FSDP): LoRA's adapters are small enough to "
                            "hold whole on every GPU; launch with ddp, or train the full model")  # fmt: skip


@dataclass(frozen=True)
class PromptDataConfig(DataConfig):
    """Training prompts, and the longest prompt the loop takes (verl's ``data.max_prompt_length`` and
    ``data.truncation``): the data block of the engines that bound their prompts, ``vlm-semi-online`` and
    ``vlm-verl``."""

    max_prompt_length: int | None = None
    """The most tokens one prompt may have, counted on the processor's output: the chat template with its generation
    prompt, each image placeholder expanded to the image's tokens; in a multi-turn loop, each turn's whole dialogue as
    the policy sees it. ``None``: no limit (``vlm-verl`` then sizes verl's from the longest exported prompt)."""
    truncation: Literal["error", "left", "right"] = "error"
    """What a longer prompt does, in verl's names. ``error`` stops the run, naming the sample and its length (a
    ``vlm-verl`` export refuses it before verl starts when it counts exactly). ``left`` and ``right`` (drop the first or
    last tokens) are refused: the zoo's VLM prompts carry images, whose tokens a cut would part from their pixels (verl
    0.9.1 refuses to cut a multimodal prompt too: experimental/agent_loop/agent_loop.py:353)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        limit = self.max_prompt_length
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise RecipeError(f"data.max_prompt_length={limit!r}: a token count >= 1, or null for no limit")
        if self.truncation != "error":
            raise RecipeError(f"data.truncation={self.truncation!r}: a cut prompt would part image tokens from their "
                              "pixels; use error and raise data.max_prompt_length (or lower model.max_pixels)")  # fmt: skip


@dataclass(frozen=True)
class PluginSpec:
    """One rollout plug-in (:data:`zoo.engines.vlm.plugins.ROLLOUT_PLUGINS`) and its arguments."""

    name: str = ""
    """Registered plug-in name (``shuffle-r1``, ``scs``)."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of the plug-in's class (its docstring lists them)."""


@dataclass(frozen=True)
class AlgorithmConfig:
    """The GRPO-family algorithm: advantage estimator, surrogate loss and sampling."""

    loss_type: str = "grpo"
    """A row of the loss table (:data:`zoo.algorithms.LOSS_TYPES`): ``grpo`` (per-sequence token
    mean), ``dr_grpo`` (sum / (B·L_max)), ``dapo`` (token mean over the batch), ``bnpo`` (token mean
    over the local batch), ``gspo`` (sequence-level ratio), or a domain's own (``gui_g1``)."""
    adv_estimator: str = "grpo"
    """Registered advantage estimator in :mod:`zoo.rl.advantages` (``grpo``, ``rloo``, ...)."""
    normalize_std: bool = True
    """Divide group-centred rewards by the group std (GRPO); ``False`` is Dr. GRPO's and GUI-G1's choice."""
    clip_low: float | None = None
    """PPO clip epsilon below 1 (ratio floor 1 - clip_low); ``None``: the loss's paper default
    (0.2; GSPO 3e-4)."""
    clip_high: float | None = None
    """PPO clip epsilon above 1; ``None``: the loss's paper default (0.2; DAPO's clip-higher 0.28; GSPO 4e-4)."""
    dual_clip: float | None = None
    """Dual-clip constant c (> 1) bounding the loss of negative-advantage tokens; ``None`` disables it."""
    beta: float = 0.0
    """KL coefficient against the reference policy; 0 skips the reference model entirely."""
    kl_estimator: Literal["k1", "k2", "k3"] = "k3"
    """KL estimator (Schulman's k1/k2/k3) used when ``beta > 0``."""
    num_generations: int = 8
    """Group size G: completions sampled per prompt."""
    temperature: float = 1.0
    """Sampling temperature for rollouts."""
    top_p: float = 1.0
    """Nucleus sampling threshold for rollouts."""
    top_k: int = 0
    """Sample among the ``top_k`` most likely tokens only; 0 (or verl's -1) keeps every token. Set it where the
    authors' sampler cuts: a trainer that builds ``transformers.GenerationConfig(do_sample=True, ...)`` without
    naming ``top_k`` samples with the class default 50. Rollouts never inherit the model's own
    ``generation_config`` (Qwen2.5-VL's ships ``top_k: 1`` and ``repetition_penalty: 1.05``): every engine passes
    its sampler whole."""
    max_completion_length: int = 64
    """Maximum new tokens per completion."""
    num_iterations: int = 1
    """Optimisation passes over each generated batch (PPO epochs, mu in the GRPO paper)."""
    dynamic_sampling: bool = False
    """Drop groups whose rewards are all equal from the loss (DAPO); they carry no signal."""
    plugins: tuple[PluginSpec, ...] = ()
    """Rollout plug-ins, in call order (:mod:`zoo.engines.vlm.plugins`): a paper's change to what is
    scored or trained (``scs`` resamples trajectory tails for a consistency reward; ``shuffle-r1``
    keeps contrasting pairs and re-orders them by advantage). ``vlm-trl`` engine, one process."""
    reward_chunks: int = 1
    """Generate each batch in this many chunks (whole groups each) and score a chunk on a background
    thread while the next one generates, so a render reward's sandbox work overlaps generation
    (:mod:`zoo.engines.vlm.overlap`); 1 scores after generation, as TRL does. One process only."""



@dataclass(frozen=True)
class LoraConfig:
    """Low-rank adapters through peft; ``enabled: false`` trains every unfrozen weight."""

    enabled: bool = False
    """Train LoRA adapters instead of the full model."""
    r: int = 16
    """Adapter rank."""
    alpha: int = 32
    """Adapter scaling (lora_alpha)."""
    dropout: float = 0.05
    """Dropout on the adapter input."""
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    """Module names (of the language model) that get adapters."""


@dataclass(frozen=True, kw_only=True)
class TrainingConfig(TrainingBase):
    """Optimiser, batch, checkpointing and output of a VLM run (the shared fields, plus the VLM ones)."""

    batch_size: int = 8
    """Completions per device per micro-step (prompts x num_generations); a multiple of
    ``algorithm.num_generations``."""
    grad_accum: int = 1
    """Gradient-accumulation micro-steps per optimiser step."""
    lr_scheduler: str = "constant"
    """transformers scheduler name: ``constant``, ``linear``, ``cosine``, ..."""
    warmup_steps: int = 0
    """Linear warm-up steps (with any scheduler but ``constant``, which has none: use ``constant_with_warmup``)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm."""
    freeze_vision: bool = True
    """Keep the vision tower frozen, as the papers do."""
    lora: LoraConfig = field(default_factory=LoraConfig)
    """LoRA settings; disabled means full fine-tuning of the unfrozen weights."""
    gradient_checkpointing: bool = False
    """Trade compute for memory on large models."""
    use_cpu: bool | None = None
    """Force CPU; ``None`` uses a GPU when one is visible."""
    fp32_master_weights: bool = True
    """Keep the trained weights, their gradients and AdamW's moments in float32 under ``model.dtype``'s 16-bit compute
    (:mod:`zoo.precision`). ``false`` steps the 16-bit weights themselves (half the weight memory) and warns: an update
    below half a bf16 weight's spacing (6e-5 at |w| = 0.02) rounds away, which at lr 1e-6 is nearly every update."""
    shuffle: bool = True
    """Draw prompts in random order; ``false`` keeps the dataset's order, which is how a curriculum
    dataset (easy stages first, Curr-ReFT) is trained."""


@dataclass(frozen=True)
class MultiTurnConfig:
    """Semi-online multi-turn rollout settings (UI-S1) of the ``vlm-semi-online`` engine.

    Defaults are the authors' (X-PLUG/MobileAgent@11cea575 ``UI-S1/scripts/train_example.sh``,
    ``universal_multiround.py``), except ``mini_batches`` (1, one on-policy step; theirs is 4).
    """

    episodes_per_step: int = 8
    """Episodes (prompt groups) kept per training step (``data.train_batch_size`` 8 per node upstream)."""
    patch_threshold: int = 2
    """Wrong steps per copy that the expert's answer patches before the copy stops; -1 = always, 0 = never."""
    image_limit: int = 2
    """Screenshots kept in a dialogue (the newest ones)."""
    gamma: float = 0.5
    """Discount of the step-level future return."""
    mode: str = "mean_std_norm"
    """``mean_std_norm`` or ``mean_norm`` normalisation of both advantage terms."""
    episode_weight: float = 1.0
    """Weight of the episode-level advantage term."""
    step_weight: float = 1.0
    """Weight of the step-level advantage term."""
    filter_std_threshold: float | None = 0.3
    """Keep episodes whose step-0 future returns have a std above this (DAPO-style filter); ``None`` keeps all.
    Filtered-out episodes are replaced by further rollouts until ``episodes_per_step`` are kept, as upstream."""
    max_gen_batches: int = 10
    """Rollout batches one training step may draw to refill the filtered batch before it fails (verl's
    ``filter_groups.max_num_gen_batches``); 0 = no limit."""
    mini_batches: int = 1
    """Optimiser steps per training step: the kept turns are split, in batch order, into this many
    mini-batches, each one AdamW step against the log-probabilities computed once before the first
    (so the PPO clip and dual clip act from the second on). 1 (the default, unlike the authors) is one
    on-policy step whose ratio is 1; UI-S1's script takes 4 (X-PLUG/MobileAgent@11cea575
    ``UI-S1/scripts/train_example.sh:69-70``, ``verl/workers/actor/dp_actor.py:346-353``)."""
    expert_format: str = "ui-s1-action"
    """Registered answer format (``zoo.data.ANSWER_FORMATS``) writing the expert's turn that patches a wrong one."""
    match_component: str = "extract_match"
    """Component of the first reward that says a step matched the expert (type and arguments)."""
    sampler: str | None = None
    """``"module:Class"`` drawing each step's episodes (e.g. ``domains.gui.curriculum:CurriculumSampler``);
    ``None`` draws uniformly. Built as ``Class(episodes, rng, **sampler_kwargs)``; its ``state_dict()``
    (curriculum state and RNG) is checkpointed and restored by ``--resume``."""
    sampler_kwargs: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of ``sampler``."""


@dataclass(frozen=True)
class RolloutConfig:
    """How the ``vlm-trl`` engine generates its rollouts (:mod:`zoo.engines.vlm.rollout`).

    Every backend takes the algorithm's sampling settings (temperature, top-p,
    ``max_completion_length``, stop at EOS) and hands the same structures to the advantage and loss code.
    """

    backend: Literal["auto", "hf", "static", "vllm"] = "hf"
    """``hf``: transformers ``generate`` with a dynamic KV cache. ``static``: a static KV cache and a
    compiled decode step (``torch.compile`` on CUDA; on CPU the static cache alone). ``vllm``: TRL's
    colocated vLLM (CUDA, ``pip install vllm``), weights synced every step. ``auto``: ``vllm`` when it is
    installed and a GPU is visible, else ``static`` on a GPU, else ``hf``."""
    importance_sampling: bool = False
    """Truncated importance sampling (TIS): weight each token's policy-gradient term by
    ``min(π_trainer / π_rollout, is_cap)`` (:func:`zoo.rl.importance.truncated_is_weights`); logs the
    ratio's mean and max. Worth it when the rollout is not the trainer's own forward (``vllm``)."""
    is_cap: float = 2.0
    """The TIS cap C (the TIS paper's value; TRL's default for vLLM is 3)."""
    vllm_gpu_memory_utilization: float = 0.3
    """GPU memory share vLLM may take in colocate mode (TRL's default)."""


@dataclass(frozen=True)
class VerlConfig:
    """Cluster settings of the ``vlm-verl`` engine."""

    overrides: tuple[str, ...] = ()
    """Extra Hydra overrides passed verbatim to verl (``trainer.nnodes=2``)."""
    n_gpus_per_node: int = 8
    """GPUs per node."""
    nnodes: int = 1
    """Number of nodes."""
    rollout: str = "vllm"
    """Rollout backend (``vllm`` or ``sglang``)."""


@dataclass(frozen=True, kw_only=True)
class VLMRLRecipe(Recipe):
    """What every GRPO-family loop of a VLM reads: prompts, rewards, the policy, the algorithm, the budget.

    Each loop has its own recipe class below, holding the settings only it reads and refusing what it
    cannot run; ``engine:`` picks the class (:data:`zoo.engines.ENGINES`). The shared checks are here.
    """

    data: DataConfig
    """Training prompts."""
    rewards: tuple[RewardSpec, ...]
    """Reward terms; the trained reward is their weighted sum."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """The policy."""
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    """GRPO-family settings."""
    training: TrainingConfig = field(default_factory=TrainingConfig)
    """Optimiser and checkpoint settings."""

    #: What the loop is called in error messages.
    loop: ClassVar[str] = ""

    @property
    def is_multi_turn(self) -> bool:
        """Whether the estimator needs a multi-turn rollout (run by :mod:`zoo.engines.vlm.semi_online_engine`)."""
        from zoo.algorithms import ADVANTAGE_ESTIMATORS

        return bool(getattr(ADVANTAGE_ESTIMATORS.get(self.algorithm.adv_estimator), "rollout_fields", ()))

    def validate(self) -> None:
        """The recipe's own fields; the names they give are the engine's check (:mod:`zoo.engines.vlm.checks`)."""
        alg, tr = self.algorithm, self.training
        if not self.data.name:
            raise RecipeError("data.name is empty; name a registered dataset (zoo.data.DATASETS.list())")
        if not self.rewards:
            raise RecipeError("rewards is empty; list at least one {name: <registered reward>, weight: 1.0}")
        for i, spec in enumerate(self.rewards):
            if spec.weight != spec.weight or spec.weight in (float("inf"), float("-inf")):
                raise RecipeError(f"rewards[{i}].weight={spec.weight}: a reward weight must be a finite number")
        if alg.num_generations < 2:
            raise RecipeError(f"algorithm.num_generations={alg.num_generations}; GRPO needs groups of at least 2")
        if alg.top_k < -1:
            raise RecipeError(f"algorithm.top_k={alg.top_k}: a token count, or 0 (-1) to keep every token")
        if tr.batch_size % alg.num_generations:
            g = alg.num_generations
            raise RecipeError(
                f"training.batch_size={tr.batch_size} is not a multiple of algorithm.num_generations={g}; "
                f"use e.g. batch_size={g * max(1, tr.batch_size // g)}"
            )
        for key in ("clip_low", "clip_high"):
            if (getattr(alg, key) or 0) < 0:
                raise RecipeError(f"algorithm.{key} must be >= 0, got {getattr(alg, key)}")
        if alg.reward_chunks < 1:
            raise RecipeError(f"algorithm.reward_chunks must be >= 1 (1: no overlap), got {alg.reward_chunks}")
        if alg.dual_clip is not None and alg.dual_clip <= 1:
            raise RecipeError(f"algorithm.dual_clip must be > 1 (or null), got {alg.dual_clip}")
        if tr.warmup_steps > 0 and tr.lr_scheduler == "constant":  # transformers' constant schedule has no warm-up
            raise RecipeError(f"training.warmup_steps={tr.warmup_steps} does nothing with lr_scheduler: constant; "
                              "use lr_scheduler: constant_with_warmup (or linear, cosine)")  # fmt: skip
        self.validate_loop()

    def validate_loop(self) -> None:
        """The checks of one loop's own fields: what it reads, what it cannot run."""

    def _no_plugins_or_chunks(self) -> None:
        """Rollout plug-ins and chunked scoring live in the vlm-trl engine's single-turn GRPO loop."""
        alg = self.algorithm
        if alg.plugins:
            raise RecipeError(f"algorithm.plugins {[p.name for p in alg.plugins]} run in the vlm-trl engine's "
                              f"single-turn GRPO loop; {self.loop} does not call them: use engine: vlm-trl")  # fmt: skip
        if alg.reward_chunks > 1:
            raise RecipeError(f"algorithm.reward_chunks={alg.reward_chunks}: chunked scoring is the vlm-trl engine's; "
                              f"{self.loop} scores whole batches (use 1)")  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class VLMRecipe(VLMRLRecipe):
    """Engine ``vlm-trl``: single-turn GRPO-family RL of a VLM on one machine (TRL's ``GRPOTrainer`` + ``zoo.rl``)."""

    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    """Rollout backend and the importance-sampling correction."""

    loop: ClassVar[str] = "engine vlm-trl"

    def validate_loop(self) -> None:
        alg, ro = self.algorithm, self.rollout
        if alg.reward_chunks > 1 and alg.plugins:
            raise RecipeError("algorithm.reward_chunks > 1 scores chunks before the batch is complete; rollout plug-ins "
                              f"({', '.join(p.name for p in alg.plugins)}) need the whole batch: use reward_chunks: 1")
        if not ro.is_cap > 0:
            raise RecipeError(f"rollout.is_cap={ro.is_cap}: the importance-sampling cap must be > 0")


@dataclass(frozen=True, kw_only=True)
class SemiOnlineRecipe(VLMRLRecipe):
    """Engine ``vlm-semi-online``: UI-S1's semi-online multi-turn RL (:mod:`zoo.engines.vlm.semi_online_engine`).

    The estimator must be a multi-turn one (``ui-s1``); rollouts are the loop's own (transformers
    ``generate``, one process), patched by the expert's answers. ``model.entry`` writes each step's turn
    (:func:`zoo.engines.vlm.contract.with_turn_contract`) and places its screenshot; the dataset yields raw goals.
    """

    data: PromptDataConfig
    """Training trajectories, and the longest turn the rollout takes."""
    multi_turn: MultiTurnConfig = field(default_factory=MultiTurnConfig)
    """Semi-online rollout settings."""

    loop: ClassVar[str] = "the semi-online loop"

    def validate_loop(self) -> None:
        mt, alg = self.multi_turn, self.algorithm
        check_own_loop_dtype(self.model, "engine vlm-semi-online")
        self._no_plugins_or_chunks()
        if alg.num_iterations != 1:
            raise RecipeError(f"algorithm.num_iterations={alg.num_iterations}: the semi-online loop takes one pass")
        if mt.episodes_per_step < 1 or mt.image_limit < 1:
            raise RecipeError("multi_turn.episodes_per_step and multi_turn.image_limit must be >= 1")
        if isinstance(mt.patch_threshold, bool) or not isinstance(mt.patch_threshold, int) or mt.patch_threshold < -1:
            raise RecipeError(f"multi_turn.patch_threshold={mt.patch_threshold!r}: an int >= -1 (-1 = always patch)")
        if mt.mode not in ("mean_std_norm", "mean_norm"):
            raise RecipeError(f"multi_turn.mode={mt.mode!r}; choose mean_std_norm or mean_norm")
        if isinstance(mt.max_gen_batches, bool) or not isinstance(mt.max_gen_batches, int) or mt.max_gen_batches < 0:
            raise RecipeError(f"multi_turn.max_gen_batches={mt.max_gen_batches!r}: an int >= 0 (0 = no limit)")
        if isinstance(mt.mini_batches, bool) or not isinstance(mt.mini_batches, int) or mt.mini_batches < 1:
            raise RecipeError(f"multi_turn.mini_batches={mt.mini_batches!r}: an int >= 1 (optimiser steps per batch)")


@dataclass(frozen=True, kw_only=True)
class VerlRecipe(VLMRLRecipe):
    """Engine ``vlm-verl``: the same GRPO-family run exported to verl (parquet, reward module, config) and
    launched on Ray. A ``vlm-trl`` recipe moves here with ``--engine vlm-verl`` when it sets no ``rollout:``
    block (verl rolls out with ``verl.rollout``)."""

    data: PromptDataConfig
    """Training prompts, and the longest prompt verl takes."""
    verl: VerlConfig = field(default_factory=VerlConfig)
    """Cluster settings."""

    loop: ClassVar[str] = "engine vlm-verl"

    def validate_loop(self) -> None:
        self._no_plugins_or_chunks()
