"""CPU stand-in for the robot papers' tasks: gymnasium-robotics FetchPush with a sparse success reward.

ResiP (FurnitureBench on IsaacGym) and ResFiT (robosuite/DexMimicGen) need a GPU or a heavy
simulator; FetchPush-v4 runs headless on CPU from the package index (MuJoCo, pinned ``mujoco<3.5``
because mujoco 4 breaks gymnasium-robotics 1.4.2's joint accessors). The task keeps what the papers'
results depend on (research notes §4.5): a **binary success reward** and **termination on success**
(the DPPO robomimic wrapper's missing success termination changed its results).

Observation: the flat 28-vector ``[observation(25), desired_goal(3)]``; in ``observation`` the
gripper position is ``[0:3]`` and the object position ``[3:6]``. Action: 4-D in ``[-1, 1]``
(end-effector displacement x, y, z and gripper), which the environment itself clips.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import gymnasium as gym
except ImportError as err:  # the robot domain's dependencies are the `robot` extra
    raise ImportError("the robot domain needs gymnasium, stable-baselines3 and gymnasium-robotics: "
                      "pip install -e '.[robot]'") from err  # fmt: skip

FETCH_PUSH = "FetchPush-v4"
OBS_DIM = 28
ACTION_DIM = 4
MAX_STEPS = 50


class FlatSparseSuccess(gym.Wrapper):
    """Flatten Fetch's goal dict, reward 1 on success else 0, and end the episode on success.

    ``info["is_success"]`` is the same success test before and after any policy change, so base and
    residual success rates are comparable. ``shaping > 0`` adds the potential-based term
    ``shaping * (d_prev - d)`` with ``d`` the object-goal distance (Ng et al. 1999, with an
    undiscounted potential difference): a denser learning signal that leaves success and
    termination unchanged; the papers' own runs use the sparse reward alone.
    """

    def __init__(self, env: gym.Env, shaping: float = 0.0) -> None:
        super().__init__(env)
        if shaping < 0:
            raise ValueError(f"shaping={shaping} must be >= 0")
        self.shaping = float(shaping)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)
        self._distance = 0.0

    @staticmethod
    def object_goal_distance(flat: np.ndarray) -> float:
        return float(np.linalg.norm(flat[3:6] - flat[25:28]))

    @staticmethod
    def flatten(obs: dict[str, np.ndarray]) -> np.ndarray:
        return np.concatenate([obs["observation"], obs["desired_goal"]]).astype(np.float32)

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        flat = self.flatten(obs)
        self._distance = self.object_goal_distance(flat)
        return flat, info

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, _, terminated, truncated, info = self.env.step(np.asarray(action, dtype=np.float32))
        success = bool(info.get("is_success", False))
        info["is_success"] = success
        flat = self.flatten(obs)
        distance = self.object_goal_distance(flat)
        reward = float(success) + self.shaping * (self._distance - distance)
        self._distance = distance
        return flat, reward, bool(terminated) or success, bool(truncated), info

    def get_state(self) -> dict[str, Any]:
        """The episode under way as tensors and plain values (:class:`~zoo.engines.policy.state.RestorableEnv`).

        MuJoCo's full integration state (``mjSTATE_INTEGRATION``: time, positions, velocities,
        controls, mocap targets, the solver's warm start), which continues the simulation bit for
        bit; the goal, the time limit's step count and the environment's generator (the next
        episode's start and goal).
        """
        import mujoco
        import torch

        sim = self.env.unwrapped
        vector = np.empty(mujoco.mj_stateSize(sim.model, mujoco.mjtState.mjSTATE_INTEGRATION))
        mujoco.mj_getState(sim.model, sim.data, vector, mujoco.mjtState.mjSTATE_INTEGRATION)
        return {"mujoco": torch.from_numpy(vector), "goal": torch.from_numpy(np.array(sim.goal)),
                "elapsed_steps": _time_limit(self.env)._elapsed_steps, "distance": self._distance,
                "np_random": sim.np_random.bit_generator.state}  # fmt: skip

    def set_state(self, state: dict[str, Any]) -> None:
        """Continue the episode :meth:`get_state` reported (the environment has been reset once)."""
        import mujoco

        sim = self.env.unwrapped
        mujoco.mj_setState(sim.model, sim.data, state["mujoco"].numpy(), mujoco.mjtState.mjSTATE_INTEGRATION)
        mujoco.mj_forward(sim.model, sim.data)  # FetchPush's step ends with one too (its gripper block), so the
        # derived quantities (site positions the next observation reads) are what the saved step left
        sim.goal = state["goal"].numpy()
        _time_limit(self.env)._elapsed_steps = state["elapsed_steps"]
        self._distance = state["distance"]
        sim.np_random.bit_generator.state = state["np_random"]


def _time_limit(env: gym.Env) -> gym.wrappers.TimeLimit:
    """The ``TimeLimit`` wrapper in ``env``'s chain (``make_fetch_push`` always adds one)."""
    while not isinstance(env, gym.wrappers.TimeLimit):
        if not isinstance(env, gym.Wrapper):
            raise TypeError("FetchPush's episode state needs the TimeLimit wrapper that make_fetch_push adds")
        env = env.env
    return env


def make_fetch_push(max_episode_steps: int = MAX_STEPS, render_mode: str | None = None, shaping: float = 0.0) -> gym.Env:
    """FetchPush-v4 with a flat observation, sparse success reward (plus optional shaping) and success termination."""
    import gymnasium_robotics

    gym.register_envs(gymnasium_robotics)
    env = gym.make(FETCH_PUSH, max_episode_steps=max_episode_steps, render_mode=render_mode)
    return FlatSparseSuccess(env, shaping=shaping)


def scripted_push(obs: np.ndarray, gain: float = 10.0) -> np.ndarray:
    """A stateless scripted pusher (the demonstrator): get behind the object, descend, push to the goal.

    Behind = 6 cm before the object on the object->goal line. The gripper stays closed. It is a
    plain proportional controller on the end-effector position, good but not perfect (the object
    slides off the line on some starts), which is what demonstrations usually are.
    """
    obs = np.asarray(obs, dtype=np.float64)
    grip, obj, goal = obs[0:3], obs[3:6], obs[25:28]
    to_goal = goal[:2] - obj[:2]
    direction = to_goal / max(np.linalg.norm(to_goal), 1e-6)
    pre = obj[:2] - 0.06 * direction
    rel = grip[:2] - obj[:2]
    along = rel @ direction
    lateral = abs(rel[0] * direction[1] - rel[1] * direction[0])
    low = grip[2] < obj[2] + 0.02
    if low and -0.09 < along < -0.01 and lateral < 0.02:  # behind and in line: push through
        target = np.r_[obj[:2] + 0.05 * direction, obj[2]]
    elif np.linalg.norm(grip[:2] - pre) < 0.015:  # above the pre-push point: descend
        target = np.r_[pre, obj[2]]
    else:  # travel above the pre-push point
        target = np.r_[pre, obj[2] + 0.06]
    return np.r_[np.clip(gain * (target - grip), -1.0, 1.0), -1.0].astype(np.float32)


def collect_demos(episodes: int, seed: int = 0, successful_only: bool = True) -> dict[str, np.ndarray]:
    """Roll out :func:`scripted_push` on seeds ``seed..seed+episodes-1``; arrays of the kept episodes.

    Returns ``observations (N, 28)``, ``actions (N, 4)``, ``next_observations``, ``rewards``,
    ``terminals`` and ``episode_index`` (N transitions), what a BC trainer and an offline
    replay buffer (ResFiT's 50/50 sampling) both need.
    """
    env = make_fetch_push()
    keys = ("observations", "actions", "next_observations", "rewards", "terminals", "episode_index")
    data: dict[str, list[Any]] = {k: [] for k in keys}
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        rows: dict[str, list[Any]] = {k: [] for k in keys}
        done, success = False, False
        while not done:
            action = scripted_push(obs)
            nxt, reward, terminated, truncated, info = env.step(action)
            for key, value in zip(keys, (obs, action, nxt, reward, terminated, episode)):
                rows[key].append(value)
            obs, done, success = nxt, terminated or truncated, bool(info["is_success"])
        if success or not successful_only:
            for key in keys:
                data[key].extend(rows[key])
    env.close()
    if not data["observations"]:
        raise RuntimeError(f"no successful demonstration in {episodes} episodes from seed {seed}")
    return {k: np.asarray(v, dtype=np.float32 if k != "episode_index" else np.int64) for k, v in data.items()}
