"""The ``policy`` engine's training loop: iterations of a stable-baselines3 method, zoo's run directory.

Per iteration the method's algorithm collects ``n_envs * rollout_steps`` environment steps and
updates; the loop logs ``metrics.csv`` (success rate of the episodes that ended in the iteration,
environment steps, the algorithm's own losses) with a ``success_rate_curve.png``, writes atomic
``checkpoint-N/`` folders that ``--resume`` continues from exactly (a resumed run is the
uninterrupted one: the same ``metrics.csv`` cells but ``cpu_minutes``, a bit-identical ``final/``),
exports ``final/`` as a zoo policy directory (and ``pretrained/``, for a method that pre-trains its
own starting policy) and, with ``training.eval_episodes``, compares base (or pre-trained) and
trained policy on the same seeded episodes (``eval.json``). The environments step in this process or in
worker processes (``training.vec_env``, :mod:`zoo.engines.policy.envs`); the learner stays here either way.

A checkpoint holds tensors and JSON only, since a run directory may come from someone else: the
method's algorithm state (:mod:`zoo.engines.policy.state`), ``training_state.pt`` with the
process RNGs (Python, NumPy, torch) and every environment's episode under way
(:class:`~zoo.engines.policy.state.RestorableEnv`), and ``policy_state.json`` (iteration,
environment steps). ``--resume`` builds the method's algorithm fresh from the recipe, loads that
state into it, continues the episodes and restores the RNGs last; a checkpoint holding a file
that needs unpickling is refused with one sentence, and nothing of it runs.
"""

from __future__ import annotations

import json
import logging
import shutil
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from zoo.engines.policy.checks import PolicyChecked, check_policy
from zoo.engines.policy.envs import EnvFactory, make_environment, training_envs
from zoo.engines.policy.recipe import PolicyRecipe
from zoo.engines.policy.state import env_states, refuse_pickled, require_restorable, restore_env_states
from zoo.run_logging import MetricsLog
from zoo.runs import mark_complete, prune_checkpoints, read_state, restoring, rng_state, set_rng_state, start_run

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.vec_env import VecEnv

    from zoo.engines.policy.methods import PolicyMethod
    from zoo.pipelines.policy import PolicyPipeline

logger = logging.getLogger(__name__)

STATE_FILE = "policy_state.json"
TRAINING_STATE = "training_state.pt"
EVAL_FILE = "eval.json"


def _base(recipe: PolicyRecipe) -> PolicyPipeline | None:
    if not recipe.base.model:
        return None
    import zoo

    return zoo.load(recipe.base.model, device="cpu", dtype="float32")


class EpisodeOutcomes(BaseCallback):
    """Successes of the episodes that end while the algorithm steps."""

    def __init__(self) -> None:
        super().__init__()
        self.successes: list[bool] = []

    def _on_step(self) -> bool:
        for done, info in zip(self.locals["dones"], self.locals["infos"]):
            if done:
                self.successes.append(bool(info.get("is_success", False)))
        return True


def train(recipe: PolicyRecipe, output_dir: Path, *, resume: bool = False, dry_run: bool = False,
          checked: PolicyChecked | None = None) -> Path:  # fmt: skip
    """Run ``recipe`` into ``output_dir`` (``final/`` holds the exported policy); returns ``output_dir``. ``checked``:
    what the engine's check resolved (:func:`~zoo.engines.policy.checks.check_policy`; it runs here when not given)."""
    if dry_run:
        return output_dir
    import torch

    checked = check_policy(recipe) if checked is None else checked
    method, base = checked.method, _base(recipe)
    tr = recipe.training
    torch.manual_seed(tr.seed)
    factory = EnvFactory(method, recipe, base)
    with closing(training_envs(factory, recipe.algorithm.n_envs, tr.vec_env)) as env:  # workers stop at the end
        env.seed(tr.seed)
        require_restorable(env, recipe.env.name)
        model = _iterate(method, env, recipe, output_dir, resume)
        final = method.export(model, base, recipe, output_dir / "final")
        before = recipe.base.model
        if not before and hasattr(method, "export_pretrained"):  # a method that pre-trains its own starting policy
            before = str(method.export_pretrained(model, output_dir / "pretrained"))
    if tr.eval_episodes:
        report = evaluate(recipe, final, episodes=tr.eval_episodes, seed=tr.eval_seed, base=before)
        (output_dir / EVAL_FILE).write_text(json.dumps(report, indent=2))
        logger.info("evaluation: %s", report)
    return output_dir


def _iterate(method: PolicyMethod, env: VecEnv, recipe: PolicyRecipe, output_dir: Path, resume: bool) -> BaseAlgorithm:
    """The iterations from the newest checkpoint (``resume``) or from a fresh algorithm; returns the trained one."""
    a, tr = recipe.algorithm, recipe.training
    start = start_run(output_dir, resume=resume)
    iteration = start.step
    if start.checkpoint is not None:
        model = _resume(method, start.checkpoint, env, recipe)
        logger.info("resumed from %s (iteration %d)", start.checkpoint, iteration)
    else:
        model = method.build(env, recipe)
    log = MetricsLog.for_run(start, curve="success_rate")
    outcomes = EpisodeOutcomes()
    per_iteration = a.n_envs * a.rollout_steps
    while iteration < tr.steps:
        outcomes.successes.clear()
        model.learn(per_iteration, reset_num_timesteps=False, callback=outcomes)
        iteration += 1
        last = iteration == tr.steps
        if iteration % tr.logging_steps == 0 or last:
            log.log(iteration, _metrics(model, outcomes.successes))
        if iteration % tr.save_steps == 0 or last:
            _save(method, model, env, output_dir / f"checkpoint-{iteration}", iteration)
            prune_checkpoints(output_dir, tr.save_total_limit)
    log.finish()
    return model


def _save(method: PolicyMethod, model: BaseAlgorithm, env: VecEnv, folder: Path, iteration: int) -> None:
    """Write ``checkpoint-<iteration>/``: the method's state, the RNGs and episodes, then the marker.

    A folder of that name is removed first (a fresh run after a crash, a resumed one repeating an
    iteration): its old completion marker must never vouch for a half-written new state.
    """
    import torch

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    method.save(model, folder)
    torch.save({"rng": rng_state(), "envs": env_states(env)}, folder / TRAINING_STATE)
    (folder / STATE_FILE).write_text(json.dumps({"iteration": iteration, "env_steps": model.num_timesteps}))
    mark_complete(folder, iteration)


def _resume(method: PolicyMethod, folder: Path, env: VecEnv, recipe: PolicyRecipe) -> BaseAlgorithm:
    """The algorithm of ``folder`` on ``env``, its episodes continued and the RNGs as they were when it was saved.

    The RNGs go last: building the algorithm and resetting the environments draw from them.
    """
    refuse_pickled(folder)
    state = read_state(folder / TRAINING_STATE)
    model = method.load(folder, env, recipe)
    with restoring(folder / TRAINING_STATE):  # a hand-edited state file: one error naming it
        restore_env_states(env, state["envs"])
        set_rng_state(state["rng"])
    return model


def _metrics(model: BaseAlgorithm, successes: list[bool]) -> dict[str, Any]:
    metrics: dict[str, Any] = {"env_steps": model.num_timesteps, "episodes": len(successes),
                               "success_rate": float(np.mean(successes)) if successes else None}  # fmt: skip
    for key, value in model.logger.name_to_value.items():
        if key.startswith("train/"):
            metrics[key.removeprefix("train/")] = float(value)
    return metrics


def evaluate(recipe: PolicyRecipe, policy_dir: Path, *, episodes: int, seed: int, base: str = "") -> dict[str, Any]:
    """Base (``base``, else the recipe's) and trained policy (deterministic, queued ``act``) on the same seeded episodes."""
    import zoo
    from zoo.engines.policy.evaluate import success_rate

    env = make_environment(recipe.env.name, **recipe.env.kwargs)
    report: dict[str, Any] = {"seed": seed}
    for label, source in (("base", base or recipe.base.model), ("trained", str(policy_dir))):
        if not source:
            continue
        pipe = zoo.load(source, device="cpu", dtype="float32")
        report[label] = success_rate(env, pipe.act, episodes, seed, on_reset=pipe.reset).to_json()
    return report
