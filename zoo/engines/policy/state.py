"""What a ``policy`` checkpoint holds, as tensors and JSON only, and how ``--resume`` loads it back.

A run directory may come from someone else, so ``--resume`` reads data, never code
(:mod:`zoo.runs`). stable-baselines3's own ``save``/``load`` is a zip whose ``data`` entries are
cloudpickles, and its replay buffer is a pickle: either runs whatever a crafted file names. A
checkpoint therefore holds

* ``algorithm.pt``: the algorithm's networks and optimisers (``get_parameters()``) and its
  current observations, read back with :func:`zoo.runs.read_state` (tensors and plain values);
* ``algorithm.json``: its counters and schedule position, the logger values the engine reads,
  the episode-statistics buffers and its action space's generator;
* ``replay_buffer.npz`` (off-policy methods): the filled part of the buffer, read with
  ``allow_pickle=False``.

Resuming builds the algorithm fresh from the recipe and loads this state into it. A checkpoint
that still holds a file only unpickling could read (an older zoo's ``sb3_model.zip`` or
``replay_buffer.pkl``, or one planted there) is refused before anything is built from it.

Exactness also needs the episodes under way: every environment a method's ``wrap`` returns is a
:class:`RestorableEnv` that reports its episode (simulator state, step counters, its generator)
as tensors and plain values and takes it back. The engine saves them beside the process RNGs.
"""

from __future__ import annotations

import json
import sys
import zipfile
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import torch

from zoo.model_files import npy_header, read_json
from zoo.records import RecordError, typed
from zoo.runs import CorruptCheckpointError, UnsafeStateError, read_state, restoring

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.buffers import ReplayBuffer
    from stable_baselines3.common.vec_env import VecEnv

ALGORITHM_STATE = "algorithm.pt"
ALGORITHM_SCALARS = "algorithm.json"
REPLAY_BUFFER = "replay_buffer.npz"
PICKLED_FILES = ("sb3_model.zip", "replay_buffer.pkl")
"""Names of stable-baselines3's pickle-based files, which earlier policy checkpoints held."""
BUFFER_ARRAYS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")
#: Room for an ``.npy`` member's header beside its data (NumPy reads headers of at most 10,000 bytes by default).
_NPY_HEADER = 1 << 16


@dataclass(frozen=True)
class AlgorithmScalars:
    """What :func:`save_sb3` writes to ``algorithm.json``, read strictly (:func:`~zoo.records.typed`)."""

    num_timesteps: int
    n_updates: int
    episode_num: int
    progress_remaining: float
    logger: Mapping[str, bool | int | float]
    """The logged values the engine reads back (numbers only)."""
    ep_info_buffer: tuple[Mapping[str, int | float], ...]
    """stable-baselines3's episode records (``r`` return, ``l`` length, ``t`` time)."""
    ep_success_buffer: tuple[bool | float, ...]
    action_space_rng: Mapping[str, Any]
    """NumPy's ``bit_generator.state`` of the action space (its setter checks it)."""


def read_scalars(file: Path) -> AlgorithmScalars:
    """``algorithm.json`` as :class:`AlgorithmScalars`; a malformed one is a :class:`~zoo.records.RecordError` naming
    the file and field (review-reliability 10.5: ``"num_timesteps": "many"``, an episode without ``r`` and a missing
    ``n_updates`` were 40-45-line tracebacks, the first two only once training had started)."""
    scalars = typed(AlgorithmScalars, read_json(file, what="a policy checkpoint's algorithm.json"), str(file))
    counters = {name: getattr(scalars, name) for name in ("num_timesteps", "n_updates", "episode_num")}
    negative = next((name for name, value in counters.items() if value < 0), None)
    if negative is not None:
        raise RecordError(f"{file}.{negative}: {counters[negative]} is negative; it counts what the run did")
    lacking = next((i for i, info in enumerate(scalars.ep_info_buffer) if not {"r", "l"} <= set(info)), None)
    if lacking is not None:
        raise RecordError(f"{file}.ep_info_buffer[{lacking}]: an episode record needs its return r and length l")
    return scalars


@runtime_checkable
class RestorableEnv(Protocol):
    """An environment whose episode under way a checkpoint can hold, so that ``--resume`` continues it.

    ``get_state`` returns tensors and plain values only (what :func:`zoo.runs.read_state` reads);
    ``set_state`` is called on an environment that has been reset once, and leaves it exactly
    where ``get_state`` found it (the next ``step`` returns what it would have returned then).
    """

    def get_state(self) -> dict[str, Any]:
        """The episode under way (simulator state, counters, the environment's generator)."""

    def set_state(self, state: dict[str, Any]) -> None:
        """Continue the episode :meth:`get_state` reported."""


def silence_logger(model: BaseAlgorithm) -> BaseAlgorithm:
    """Give ``model`` a logger without an output folder (unless it was asked for TensorBoard logs).

    Why: at every ``learn`` stable-baselines3 configures a logger whose folder defaults to
    ``tempfile.gettempdir()/SB3-<date>`` and creates it even when nothing is written there, one
    empty folder per run. The zoo reads ``logger.name_to_value`` and writes ``metrics.csv`` itself;
    ``verbose`` still prints to stdout.
    """
    from stable_baselines3.common.logger import HumanOutputFormat, Logger

    if model.tensorboard_log is None:
        model.set_logger(Logger(folder=None, output_formats=[HumanOutputFormat(sys.stdout)] if model.verbose else []))
    return model


def refuse_pickled(folder: Path) -> None:
    """Raise :class:`~zoo.runs.UnsafeStateError` when ``folder`` holds a stable-baselines3 pickle-based file."""
    for name in PICKLED_FILES:
        if (folder / name).exists():
            raise UnsafeStateError(
                f"refused to resume from {folder / name}: stable-baselines3 zips and pickles run code when read "
                "(an older zoo's checkpoint, or a planted file), and --resume reads policy checkpoints as tensors "
                "and JSON only; nothing of it was run"
            )


def _plain(value: Any) -> Any:
    """JSON's ``default``: NumPy scalars (stable-baselines3's logged values, success flags) as Python ones."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def save_sb3(model: BaseAlgorithm, folder: Path) -> None:
    """Write a stable-baselines3 algorithm's state as ``algorithm.pt`` and ``algorithm.json`` (module docstring)."""
    torch.save({"parameters": model.get_parameters(), "last_obs": torch.from_numpy(np.array(model._last_obs)),
                "last_episode_starts": torch.from_numpy(np.array(model._last_episode_starts))},
               folder / ALGORITHM_STATE)  # fmt: skip
    logged = {k: v for k, v in model.logger.name_to_value.items() if isinstance(v, (int, float, np.number))}
    scalars = {"num_timesteps": model.num_timesteps, "n_updates": model._n_updates, "episode_num": model._episode_num,
               "progress_remaining": model._current_progress_remaining, "logger": logged,
               "ep_info_buffer": list(model.ep_info_buffer or ()), "ep_success_buffer": list(model.ep_success_buffer or ()),
               "action_space_rng": model.action_space.np_random.bit_generator.state}  # fmt: skip
    (folder / ALGORITHM_SCALARS).write_text(json.dumps(scalars, default=_plain))


def restore_sb3(model: BaseAlgorithm, folder: Path) -> BaseAlgorithm:
    """Load what :func:`save_sb3` wrote into ``model``, a fresh algorithm built from the same recipe."""
    state = read_state(folder / ALGORITHM_STATE)
    scalars = read_scalars(folder / ALGORITHM_SCALARS)
    with restoring(folder / ALGORITHM_STATE):
        model.set_parameters(state["parameters"], exact_match=True, device=model.device)
        model._last_obs = state["last_obs"].numpy()  # no reset at the next learn: the episodes continue
        model._last_episode_starts = state["last_episode_starts"].numpy()
    model.num_timesteps, model._n_updates = scalars.num_timesteps, scalars.n_updates
    model._episode_num, model._current_progress_remaining = scalars.episode_num, scalars.progress_remaining
    model.logger.name_to_value.update(scalars.logger)  # a value not logged again keeps showing, as in the run
    window = model._stats_window_size
    model.ep_info_buffer = deque(map(dict, scalars.ep_info_buffer), maxlen=window)  # set, so learn() keeps them
    model.ep_success_buffer = deque(scalars.ep_success_buffer, maxlen=window)
    with restoring(folder / ALGORITHM_SCALARS):
        model.action_space.np_random.bit_generator.state = dict(scalars.action_space_rng)
    return model


def save_replay_buffer(buffer: ReplayBuffer, path: Path) -> None:
    """The filled part of a stable-baselines3 ``ReplayBuffer`` and its position, as ``.npz`` arrays."""
    size = buffer.buffer_size if buffer.full else buffer.pos
    arrays = {name: getattr(buffer, name)[:size] for name in BUFFER_ARRAYS if getattr(buffer, name, None) is not None}
    with path.open("wb") as f:
        np.savez(f, pos=np.int64(buffer.pos), full=np.bool_(buffer.full), **arrays)


def restore_replay_buffer(buffer: ReplayBuffer, path: Path) -> None:
    """Fill ``buffer`` (fresh, same size) from :func:`save_replay_buffer`'s file; every array is held to ``buffer``'s
    own before any is read (:func:`check_buffer_file`: object arrays are refused there)."""
    check_buffer_file(buffer, path)
    with restoring(path), np.load(path, allow_pickle=False) as data:
        pos, full = int(data["pos"]), bool(data["full"])
        if not 0 <= pos < buffer.buffer_size:
            raise CorruptCheckpointError(f"{path}: pos {pos} is outside this run's buffer of {buffer.buffer_size} "
                                         "rows; move its checkpoint aside to resume from the one before it")  # fmt: skip
        for name in BUFFER_ARRAYS:
            if name in data:
                saved = data[name]
                getattr(buffer, name)[: len(saved)] = saved
        buffer.pos, buffer.full = pos, full


def check_buffer_file(buffer: ReplayBuffer, path: Path) -> None:
    """Compare each array of ``path`` with ``buffer``, built fresh from the recipe, reading only the zip's central
    directory and the ``.npy`` headers: what a run can legitimately hold is at most that buffer, in its dtype.

    An array that would inflate past it, or whose header claims another dtype or a shape that does not fit, is a
    :class:`~zoo.runs.CorruptCheckpointError` naming it before anything is allocated (review-reliability 10.3: a
    1.5 MB file whose ``observations`` inflated to 1.5 GiB was decompressed whole before its shape was compared);
    an object array, which only unpickling could read, is an :class:`~zoo.runs.UnsafeStateError`.
    """
    expected = {name: getattr(buffer, name, None) for name in BUFFER_ARRAYS}
    expected |= {"pos": np.zeros((), np.int64), "full": np.zeros((), np.bool_)}
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, ValueError) as err:
        raise _not_a_buffer(path, err) from None
    with archive:
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")
            if name in expected:  # other members are never read
                _check_member(archive, info, expected[name], path)


def _not_a_buffer(path: Path, err: BaseException) -> CorruptCheckpointError:
    return CorruptCheckpointError(f"{path} is not a replay buffer this zoo writes ({err}); move its checkpoint aside "
                                  "to resume from the one before it")  # fmt: skip


def _check_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: np.ndarray | None, path: Path) -> None:
    """One array of a replay-buffer file against the buffer's ``target`` array (see :func:`check_buffer_file`)."""
    name = info.filename.removesuffix(".npy")
    if target is None:
        raise CorruptCheckpointError(f"{path}: holds {name}, which this run's buffer does not keep; it was written "
                                     "by another recipe")  # fmt: skip
    if info.file_size > target.nbytes + _NPY_HEADER:
        raise CorruptCheckpointError(f"{path}: {name} would inflate to {info.file_size:,} bytes; this run's buffer "
                                     f"holds {target.nbytes:,} bytes of it, so the file was not read")  # fmt: skip
    try:
        with archive.open(info) as member:
            shape, dtype = npy_header(member)
    except (zipfile.BadZipFile, ValueError, EOFError) as err:  # a malformed member or .npy header
        raise _not_a_buffer(path, err) from None
    if dtype.hasobject:
        raise UnsafeStateError(f"refused to read {path}: it holds pickled Python objects, and --resume reads replay "
                               "buffers as plain arrays only; nothing of it was run")  # fmt: skip
    fits = len(shape) == target.ndim and shape[1:] == target.shape[1:] and (not shape or shape[0] <= len(target))
    if not fits or dtype != target.dtype:
        raise CorruptCheckpointError(f"{path}: {name} is {dtype} of shape {shape}; this run's buffer holds "
                                     f"{target.dtype} of shape {target.shape} (at most that many rows), so the file "
                                     "was not read")  # fmt: skip


def require_restorable(venv: VecEnv, name: str) -> None:
    """Refuse, before training, environments whose episodes a checkpoint could not hold.

    The check is on each environment's outermost class (asked of the workers too, ``venv.get_attr``):
    a wrapper that hides an inner environment's ``get_state`` would lose its own part of the episode.
    """
    from zoo.recipe import RecipeError

    for kind in venv.get_attr("__class__"):
        if not issubclass(kind, RestorableEnv):
            raise RecipeError(
                f"env.name={name!r}: the training environment {kind.__name__} has no get_state()/set_state() "
                "(zoo.engines.policy.state.RestorableEnv), which checkpoints need to continue its episodes on --resume"
            )


def env_states(venv: VecEnv) -> list[dict[str, Any]]:
    """Every environment's episode under way (:meth:`RestorableEnv.get_state`, called where the environment runs)."""
    return venv.env_method("get_state")


def restore_env_states(venv: VecEnv, states: list[dict[str, Any]]) -> None:
    """Continue the episodes :func:`env_states` reported, in a freshly built ``venv`` of as many environments.

    The environments are reset first: that consumes the seeds ``venv.seed`` queued, as the run's
    first reset did, and wrappers that refuse a step before a reset (gymnasium's
    ``OrderEnforcing``) are satisfied; ``set_state`` then overwrites the episode.
    """
    if len(states) != venv.num_envs:
        raise ValueError(f"the checkpoint holds {len(states)} environments; the recipe runs {venv.num_envs}")
    venv.reset()
    for index, state in enumerate(states):
        venv.env_method("set_state", state, indices=index)
