"""The ``policy`` engine's environments: one by name, and the training ones, stepped here or in worker processes.

``algorithm.n_envs`` environments are stepped together; ``training.vec_env`` says where:

* ``dummy`` (the default): one after another in the learner's process (stable-baselines3's ``DummyVecEnv``).
  Nothing to start and nothing copied through pipes: the layout for short runs (the smoke recipes step for less
  time than workers take to start), for machines with no core to spare beside the learner (CI, a laptop), and
  for environments whose step costs about a pipe round trip (tens of microseconds).
* ``subproc``: each environment in its own worker process (:class:`EnvWorkers`, stable-baselines3's
  ``SubprocVecEnv``), all stepping at once while the learner waits for them. It pays off when a step costs well
  above a round trip (FetchPush's MuJoCo step with a residual's base network, highway-env's Python simulation:
  milliseconds each) and each worker has a free core; ``bench/policy_envs.py`` measures both on the machine at hand.

Workers start with ``forkserver`` (``spawn`` where a platform has none), never ``fork``. By the time the
environments are built, this process has run torch (the seed set, the base policy loaded) and holds its
OpenMP/MKL thread pool; a forked child copies that pool's locks without its threads and can hang in its first
parallel region. A forkserver child is forked from a server process that has run nothing; the server preloads
the modules a worker needs (torch, stable-baselines3, the method's and the environment's), so they are imported
once per process rather than once per worker (seconds each). As with any of these start methods, a script that
trains with workers keeps its top level under ``if __name__ == "__main__":`` (the server imports the script).
Each worker runs torch on one thread: ``n`` workers with a thread pool as wide as the machine each would
oversubscribe it (zoo: the parallelism is the workers').

The layout does not change the numbers: every worker builds its environment with the same picklable
:class:`EnvFactory`, ``VecEnv.seed`` seeds them alike, and :class:`EnvWorkers` hands the learner observations in
the space's dtype and rewards in float32, as ``DummyVecEnv``'s buffers do (``SubprocVecEnv`` stacks whatever the
environments return: a Python float reward becomes float64). ``tests/engines/test_policy_vec_env.py`` checks
that both layouts train bit-identical policies.

A method that needs one environment in its own process (a residual's scale and action limits at export, ResFiT's
offline buffer relabelled by the base) asks :func:`single_env`, which works for both layouts.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from zoo.recipe import RecipeError

if TYPE_CHECKING:
    import gymnasium as gym

    from zoo.engines.policy.methods import PolicyMethod
    from zoo.engines.policy.recipe import PolicyRecipe
    from zoo.pipelines.policy import PolicyPipeline

VEC_ENVS = ("dummy", "subproc")
START_METHOD = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def make_environment(name: str, **kwargs: Any) -> gym.Env:
    """The environment ``name`` from the domain that registered it (``Domain.environments``)."""
    from zoo.import_strings import resolve

    return resolve(_environment_factory(name), what=f"environment {name!r}")(**kwargs)


def _environment_factory(name: str) -> str:
    """The ``"module:factory"`` a domain registered as environment ``name``."""
    from zoo.engines.policy.methods import ENVIRONMENTS

    if name not in ENVIRONMENTS:
        known = ", ".join(ENVIRONMENTS.list()) or "none"
        raise RecipeError(f"env.name={name!r} is not a registered environment; known: {known}")
    return ENVIRONMENTS.get(name)


@dataclass(frozen=True)
class EnvFactory:
    """One training environment as ``method`` wraps it (around ``base``, if the method has one).

    A picklable callable rather than a closure, so that each worker process builds its own
    environment from the same recipe and the same base weights.
    """

    method: PolicyMethod
    recipe: PolicyRecipe
    base: PolicyPipeline | None = None

    def __call__(self) -> gym.Env:
        env = make_environment(self.recipe.env.name, **self.recipe.env.kwargs)
        return self.method.wrap(env, self.base, self.recipe)

    def modules(self) -> list[str]:
        """What a worker imports to run this: the method's module and the environment factory's."""
        return [type(self.method).__module__, _environment_factory(self.recipe.env.name).partition(":")[0]]


@dataclass(frozen=True)
class _InWorker:
    """Build ``make``'s environment in a worker process, whose torch runs on one thread (module docstring)."""

    make: Callable[[], gym.Env]

    def __call__(self) -> gym.Env:
        import torch

        torch.set_num_threads(1)
        return self.make()


def _as_space_dtype(obs: Any, space: spaces.Space) -> Any:
    """Stacked observations cast to ``space``'s dtypes (per key of a ``Dict``, per item of a ``Tuple``)."""
    if isinstance(space, spaces.Dict):
        return {key: _as_space_dtype(obs[key], sub) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_as_space_dtype(o, sub) for o, sub in zip(obs, space.spaces, strict=True))
    return np.asarray(obs, dtype=space.dtype)


class EnvWorkers(SubprocVecEnv):
    """``SubprocVecEnv`` whose steps read as ``DummyVecEnv``'s, and which can build one environment locally.

    Observations come in the observation space's dtype, rewards in float32 and infos as a list, as
    ``DummyVecEnv`` returns them; :meth:`local_env` is an environment of the same factory in this
    process, built on first use (most methods never ask for one). ``preload``: modules the forkserver
    imports before it forks the workers (it takes them when this process starts it, the first time
    workers are started; a server already running keeps its own, and each worker imports the rest).
    """

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], preload: Sequence[str] = ()) -> None:
        self._make_local, self._local = env_fns[0], None
        if START_METHOD == "forkserver":
            multiprocessing.set_forkserver_preload(["__main__", __name__, *preload])
        try:
            super().__init__([_InWorker(make) for make in env_fns], start_method=START_METHOD)
        except (EOFError, ConnectionError) as err:  # a worker died before it answered: its traceback is on stderr
            for process in getattr(self, "processes", ()):
                process.terminate()
            raise RuntimeError("an environment worker failed to build its environment (its traceback is printed "
                               "above); training.vec_env=dummy builds them in this process, where the error is "
                               "raised directly") from err  # fmt: skip

    def reset(self) -> Any:
        return _as_space_dtype(super().reset(), self.observation_space)

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = super().step_wait()
        return _as_space_dtype(obs, self.observation_space), rewards.astype(np.float32), dones, list(infos)

    def local_env(self) -> gym.Env:
        """An environment of the workers' factory in this process (not stepped by training)."""
        if self._local is None:
            self._local = self._make_local()
        return self._local

    def close(self) -> None:
        super().close()
        if self._local is not None:
            self._local.close()


def training_envs(factory: EnvFactory, n_envs: int, vec_env: str) -> VecEnv:
    """``n_envs`` environments of ``factory``, stepped in this process (``dummy``) or in workers (``subproc``)."""
    if vec_env == "dummy":
        return DummyVecEnv([factory] * n_envs)
    if vec_env == "subproc":
        return EnvWorkers([factory] * n_envs, preload=factory.modules())
    raise RecipeError(f"training.vec_env={vec_env!r}: choose one of {list(VEC_ENVS)}")


def single_env(venv: VecEnv) -> gym.Env:
    """One environment in this process, as the training ones are built (wrappers of ``venv`` looked through).

    ``DummyVecEnv``: its first environment, which training steps too; :class:`EnvWorkers`:
    :meth:`EnvWorkers.local_env`. So read it (spaces, a wrapper's scale and limits, its base policy), never step it.
    """
    inner = venv.unwrapped
    if isinstance(inner, DummyVecEnv):
        return inner.envs[0]
    if isinstance(inner, EnvWorkers):
        return inner.local_env()
    raise TypeError(f"{type(inner).__name__} holds no environment in this process; build the training environments "
                    "with zoo.engines.policy.envs.training_envs")  # fmt: skip
