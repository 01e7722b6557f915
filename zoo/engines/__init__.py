"""Engines as peers: each trains one kind of model, behind one registry.

An engine owns its recipe class (the algorithm config dataclass and the checks of its own fields), a
``check(recipe)`` that resolves every name the recipe gives, once, in the order its loop uses them, and a
``train(recipe, out_dir, *, resume, dry_run, checked) -> Path`` function that takes what the check resolved;
``zoo train`` reads the recipe (:mod:`zoo.engines.reading`), calls the check, and calls the engine. What every engine shares (YAML, overrides, the run directory, resume,
metrics CSV / TensorBoard / reward curve) lives outside them, in :mod:`zoo.recipe`,
:mod:`zoo.runs` and :mod:`zoo.run_logging`; the maths they share is :mod:`zoo.rl`, on (B, T)
tensors whose T is tokens for a VLM, denoising steps for a diffusion model, env steps for a policy.

Built in:

* ``vlm-trl`` — GRPO-family RL of a VLM on one machine, TRL's ``GRPOTrainer`` with zoo's maths;
* ``vlm-semi-online`` — UI-S1's semi-online multi-turn RL of a VLM agent, a plain torch loop;
* ``vlm-verl`` — the same GRPO-family run exported to verl and launched on a Ray cluster;
* ``vlm-sft`` — the supervised warm start (and equal-time control arm) of a VLM, a plain torch loop;
* ``diffusion`` — Flow-GRPO, DanceGRPO, DDPO, RLCM, TreeGRPO, Adv-GRPO on diffusers + accelerate + peft;
* ``policy`` — RL of a control policy with gymnasium + stable-baselines3 (residual RL on a frozen
  base); the methods are registered by domains (:mod:`zoo.engines.policy.methods`).

A third-party package adds an engine by registering an :class:`Engine` with the same parts.
Modules are named by import strings so that listing engines imports no trainer. This registry sits
above :mod:`zoo.recipe`, which imports no engine: :func:`zoo.engines.reading.load_recipe` looks the
engine up here to pick the class a file is read into.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.import_strings import resolve
from zoo.recipe_file import RecipeError
from zoo_common.registry import Registry

if TYPE_CHECKING:
    from zoo.authors_run import StepBatch
    from zoo.sharding import Holds, Sharding


def _holds(**facts: Any) -> Holds:
    from zoo.sharding import Holds

    return Holds(**facts)


@dataclass(frozen=True)
class Engine:
    """One trainer behind ``zoo train``.

    Attributes:
        name: what a recipe's ``engine:`` says (``vlm-trl``).
        summary: one line for ``zoo engines``.
        recipe: ``"module:Class"`` of the engine's recipe dataclass (a :class:`~zoo.recipe.Recipe`).
        train: ``"module:function"`` called as ``fn(recipe, out_dir, resume=..., dry_run=..., checked=...) -> Path``,
            ``checked`` being what ``check`` returned.
        check: ``"module:function"`` called as ``fn(recipe)``: resolves every name the recipe gives (its dataset and
            the eval-data refusal, the entry's contract, loss row, estimator, plug-ins, rollout backend, rewards,
            environment, provenance), in the order the loop uses them, and returns them as the engine's frozen
            dataclass, or raises :class:`~zoo.recipe.RecipeError` naming the fix; it loads no weight.
        aliases: other accepted names.
        distributes: how a multi-process run of the engine holds its model (:data:`zoo.sharding.DISTRIBUTES`):
            ``accelerate`` applies the recipe's ``launch:`` config (TRL), ``zoo`` runs DDP and shards FSDP configs
            itself (the own loops), ``none`` runs one learner process and refuses a launch config, ``ray`` launches
            on a cluster and does not read it (verl).
        launch_check: ``"module:function"`` called as ``fn(recipe, sharding)`` that raises
            :class:`~zoo.sharding.ShardingError` for what else of a recipe the engine does not run under that sharding
            (LoRA under FSDP); the engine and ``zoo train --plan`` both ask :meth:`sharding`, so both refuse alike.
        holds: what else the engine holds per process (:class:`zoo.sharding.Holds`: gathered sampling, its KL
            reference's dtype, DDP's gradient buckets), which ``zoo train --plan`` prices.
        batch: ``"module:function"`` called as ``fn(recipe, processes)`` returning the prompts, completions and
            optimiser steps of one round over every process (:mod:`zoo.engines.batches`); ``None`` for an engine
            without rounds of sampled groups (SFT, policy).
    """

    name: str
    summary: str
    recipe: str
    train: str
    check: str
    aliases: tuple[str, ...] = ()
    distributes: str = "none"
    launch_check: str | None = None
    holds: Holds = field(default_factory=_holds)
    batch: str | None = None

    def recipe_class(self) -> type:
        """The engine's recipe dataclass, a :class:`~zoo.recipe.Recipe` subclass (imported on first use)."""
        return resolve(self.recipe, what=f"engine {self.name!r}")

    def check_recipe(self, recipe: Any) -> Any:
        """Every name ``recipe`` gives, resolved once by the engine's ``check`` (a :class:`~zoo.recipe.RecipeError`
        naming the fix for the first that does not resolve, or for a recipe object of another engine's class)."""
        runs = self.recipe_class()
        if not isinstance(recipe, runs):  # e.g. a vlm-trl recipe object given engine=vlm-verl after it was read
            raise RecipeError(f"engine {self.name!r} runs {runs.__name__} recipes, not {type(recipe).__name__}: read "
                              "the file with zoo.engines.reading.load_recipe (or zoo train --engine), which picks "
                              "the class")  # fmt: skip
        return resolve(self.check, what=f"engine {self.name!r}")(recipe)

    def run(self, recipe: Any, out_dir: Path, *, resume: bool = False, dry_run: bool = False,
            checked: Any = None) -> Path:  # fmt: skip
        """Train ``recipe`` into ``out_dir``; returns the run directory. ``checked`` is :meth:`check_recipe`'s result
        when the caller has it (``zoo train`` checks before it writes anything), else the check runs here."""
        checked = self.check_recipe(recipe) if checked is None else checked
        self.sharding(recipe.launch, recipe)  # a launch config the engine does not run is refused before anything starts
        train = resolve(self.train, what=f"engine {self.name!r}")
        return train(recipe, out_dir, resume=resume, dry_run=dry_run, checked=checked)


    def step_batch(self, recipe: Any, processes: int) -> StepBatch:
        """The batch of one round of ``recipe`` over ``processes`` processes, as this engine's loop draws it; a
        ``ValueError`` for an engine (or a recipe's method) without a fixed one."""
        if self.batch is None:
            raise ValueError(f"engine {self.name!r} samples no groups of completions: it has no round to count")
        return resolve(self.batch, what=f"engine {self.name!r}")(recipe, processes)

    def sharding(self, launch: str, recipe: Any = None) -> Sharding:
        """What this engine does under the launch config ``launch`` (``""``: none): replicated, FSDP sharded by the
        zoo, or accelerate's; a config it does not run, or (given ``recipe``) a setting it does not run under it, is a
        :class:`~zoo.sharding.ShardingError` saying what it runs."""
        from zoo.launch import read
        from zoo.sharding import decide

        sharding = decide(self.name, self.distributes, read(launch) if launch else None)
        if recipe is not None and self.launch_check is not None:
            resolve(self.launch_check, what=f"engine {self.name!r}")(recipe, sharding)
        return sharding

    def launched(self, launch: str, recipe: Any = None) -> Sharding:
        """:meth:`sharding`, after checking that this process's job was started as ``launch`` says
        (:func:`zoo.sharding.check_launched`; ``WORLD_SIZE`` processes): what a loop calls before it loads a weight."""
        import os

        from zoo.sharding import check_launched

        sharding = self.sharding(launch, recipe)
        check_launched(sharding, int(os.environ.get("WORLD_SIZE", "1") or 1))
        return sharding


ENGINES: Registry[Engine] = Registry("engine")


def register_engine(engine: Engine) -> Engine:
    """Add an engine (a different engine under a taken name is an error)."""
    return ENGINES.register(engine.name, engine, engine.aliases)


register_engine(Engine(
    "vlm-trl", "GRPO-family RL of a VLM on this machine (TRL GRPOTrainer + zoo.rl maths)",
    recipe="zoo.engines.vlm.recipe:VLMRecipe", train="zoo.engines.vlm.trl_engine:train",
    check="zoo.engines.vlm.checks:check_trl", aliases=("trl",),
    distributes="accelerate",
    # TRL's GRPOTrainer: its reference built in the policy's dtype (create_model_from_path(dtype=self.model.dtype)),
    # none beside a peft model; DDP through accelerate; under ZeRO-3 unwrap_model_for_generation gathers the policy
    # to generate (ds3_gather_for_generation, TRL's default, which trl_engine.grpo_config leaves)
    holds=_holds(samples_gathered=True, reference="loaded", ddp_reducer=True), batch="zoo.engines.batches:trl_batch",
))  # fmt: skip
register_engine(Engine(
    "vlm-verl", "the same VLM recipe exported to verl (parquet, reward module, config) and launched on Ray",
    recipe="zoo.engines.vlm.recipe:VerlRecipe", train="zoo.engines.vlm.verl_engine:train",
    check="zoo.engines.vlm.checks:check_verl", aliases=("verl",),
    distributes="ray",
))  # fmt: skip
register_engine(Engine(
    "vlm-semi-online", "UI-S1's semi-online multi-turn RL of a VLM agent (expert-patched rollouts, step advantages)",
    recipe="zoo.engines.vlm.recipe:SemiOnlineRecipe", train="zoo.engines.vlm.semi_online_engine:train",
    check="zoo.engines.vlm.checks:check_semi_online",
    aliases=("semi-online",), distributes="zoo", launch_check="zoo.engines.vlm.recipe:check_sharding",
    # SemiOnlineLearner: _frozen_copy in the frozen dtype before LoRA is added; rollouts and log-probabilities under
    # sampling (the gathered model); DataParallel.sum_gradients
    holds=_holds(samples_gathered=True, reference="frozen", reference_with_lora=True),
    batch="zoo.engines.batches:semi_online_batch",
))  # fmt: skip
register_engine(Engine(
    "vlm-sft", "supervised fine-tuning of a VLM on a dataset's reference answers (warm start, control arm)",
    recipe="zoo.engines.vlm.sft_recipe:SFTRecipe", train="zoo.engines.vlm.sft_engine:train",
    check="zoo.engines.vlm.checks:check_sft", aliases=("sft",),
    distributes="zoo",
))  # fmt: skip
register_engine(Engine(
    "diffusion", "RL of text-to-image diffusion/flow models: flow_grpo, dance_grpo, ddpo, rlcm, tree_grpo, adv_grpo",
    recipe="zoo.engines.diffusion.recipe:DiffusionRecipe", train="zoo.engines.diffusion.trainer:train",
    check="zoo.engines.diffusion.checks:check_diffusion",
    distributes="zoo", launch_check="zoo.engines.diffusion.placement:check_sharding",
    # setup.build_run: a deepcopy of the float32 denoiser as a full fine-tune's reference, sharded like it;
    # Run.sampling gathers the denoiser; DDP through accelerator.prepare
    holds=_holds(samples_gathered=True, reference="loaded", ddp_reducer=True), batch="zoo.engines.batches:diffusion_batch",
))  # fmt: skip
register_engine(Engine(
    "policy", "RL of a control policy (gymnasium + stable-baselines3): residual PPO/TD3 on a frozen base",
    recipe="zoo.engines.policy.recipe:PolicyRecipe", train="zoo.engines.policy.engine:train",
    check="zoo.engines.policy.checks:check_policy",
))  # fmt: skip
