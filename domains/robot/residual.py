"""Residual RL on a frozen base policy, as stable-baselines3 environments and algorithms.

Two published parameterisations (research notes §2.1, §2.2, §4.4), both a *per-step* correction on
top of a possibly chunked base whose action is part of the residual's input:

* **ResiP** (Ankile et al. 2024, arXiv 2407.16677; ``ankile/robust-rearrangement``, MIT): in the
  base's *normalised* action space, ``a = a_base + 0.1 * r`` with ``r ~ N(mu(s, a_base), e^-1)``
  (fixed log-std -1), trained with PPO; the residual's output layer starts at zero and has no bias,
  and neither the residual nor the sum is clipped.
* **ResFiT** (Ankile et al. 2025, arXiv 2509.19301; code CC-BY-NC, so this is written from the
  paper): in the action space min-max scaled to [-1, 1], ``a = clamp(a_base + scale * tanh(.), -1, 1)``
  from a deterministic TD3 actor; the replay buffer stores the **combined** action and the critic is
  ``Q(s, a_base + r)``; batches are half offline demonstrations, half online transitions; the critic
  trains alone for a warm-up before the actor moves.

The base is never trained: :class:`FrozenBase` turns its parameters' gradients off and only the
residual's parameters reach an optimiser (``tests/domains/robot`` checks the weights stay bit-identical).
ResiP's PPO itself (networks, reward scaling, optimisers) is in :mod:`domains.robot.resip`.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import TD3
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.utils import polyak_update
from torch.nn import functional as F

from zoo.engines.policy.state import silence_logger
from zoo.pipelines.policy import PolicyPipeline

OBS_CLAMP = 3.0  # ResiP clamps the normalised observations it feeds the residual to [-3, 3]
RESIP_SCALE = 0.1
# stable-baselines3 needs a finite action box and clips samples to it; at 1e3 (about 2700 standard
# deviations of e^-1) the clip never binds, so ResiP's residual stays unclipped in effect.
RESIP_BOUND = 1e3
Combine = Literal["resip", "resfit"]


class FrozenBase:
    """A loaded base policy used by one environment: its own chunk queue, shared frozen weights.

    ``next_action(obs)`` returns the base's next action in its normalised action space, running the
    network only when the queue of the current chunk is empty (ResiP consumes the chunk one action
    per environment step and the residual corrects every step).
    """

    def __init__(self, pipe: PolicyPipeline) -> None:
        self.model = pipe.model.eval()
        for parameter in self.model.parameters():
            parameter.requires_grad_(False)
        self.config = pipe.config
        self.norm = pipe.normalization
        self._queue: deque[np.ndarray] = deque()

    def normalize_obs(self, obs: np.ndarray) -> np.ndarray:
        return (np.asarray(obs, dtype=np.float64) - self.norm.obs_mean) / self.norm.obs_std

    def denormalize_action(self, naction: np.ndarray) -> np.ndarray:
        return np.asarray(naction) * self.norm.action_std + self.norm.action_mean

    @torch.no_grad()
    def chunk(self, obs: np.ndarray) -> np.ndarray:
        """``(B, chunk, A)`` normalised actions for ``(B, obs_dim)`` observations (no queue)."""
        x = torch.as_tensor(self.normalize_obs(obs), dtype=torch.float32)
        return self.model(x).numpy().reshape(len(x), self.config.action_chunk, self.config.action_dim)

    def next_action(self, obs: np.ndarray) -> np.ndarray:
        if not self._queue:
            self._queue.extend(self.chunk(np.asarray(obs)[None])[0])
        return self._queue.popleft()

    def reset(self) -> None:
        self._queue.clear()

    def get_state(self) -> torch.Tensor:
        """The rest of the current chunk, ``(n, action_dim)`` (part of an episode under way)."""
        queued = np.array(list(self._queue), dtype=np.float32).reshape(-1, self.config.action_dim)
        return torch.from_numpy(queued)

    def set_state(self, queued: torch.Tensor) -> None:
        self._queue = deque(queued.numpy())


class ResidualEnv(gym.Wrapper):
    """The environment as the residual policy sees it.

    Observation: ``[clamp(normalised obs, ±3), base action]`` (the base action in the frame the
    residual adds to). Action: the residual. ``info`` gets ``base_action`` and ``combined_action`` (in
    that frame) every step; ResFiT's algorithm stores the latter.

    Args:
        env: a flat-``Box`` environment (``domains.robot.envs.make_fetch_push``).
        base: the frozen base, one per environment (it holds the chunk queue).
        combine: ``"resip"`` (normalised frame, ``base + 0.1 r``, no clip, unbounded residual) or
            ``"resfit"`` (env action box scaled to [-1, 1], ``clamp(base + scale r, -1, 1)``, r in [-1, 1]).
        scale: the residual scale (ResiP 0.1; ResFiT 0.1-0.2).
    """

    def __init__(self, env: gym.Env, base: FrozenBase, combine: Combine = "resip", scale: float = RESIP_SCALE) -> None:
        super().__init__(env)
        if combine not in ("resip", "resfit"):
            raise ValueError(f"combine={combine!r}: choose 'resip' or 'resfit'")
        space = env.action_space
        if not isinstance(space, gym.spaces.Box) or space.shape != (base.config.action_dim,):
            raise ValueError(f"the environment's action space {space} is not a Box of the base's "
                             f"{base.config.action_dim} dimensions")  # fmt: skip
        if combine == "resfit" and not (np.isfinite(space.low).all() and np.isfinite(space.high).all()):
            raise ValueError("ResFiT scales actions to [-1, 1] by the action box; this box is unbounded")
        self.base, self.combine, self.scale = base, combine, float(scale)
        dim = base.config.observation_dim + base.config.action_dim
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (dim,), np.float32)
        bound = RESIP_BOUND if combine == "resip" else 1.0
        self.action_space = gym.spaces.Box(-bound, bound, (base.config.action_dim,), np.float32)
        self._low, self._high = space.low.astype(np.float64), space.high.astype(np.float64)
        self._base_action = np.zeros(base.config.action_dim)

    def to_unit(self, action: np.ndarray) -> np.ndarray:
        """Env units -> [-1, 1] by the action box (ResFiT's min-max action scaling)."""
        return 2 * (np.asarray(action) - self._low) / (self._high - self._low) - 1

    def from_unit(self, unit: np.ndarray) -> np.ndarray:
        return self._low + (np.asarray(unit) + 1) * (self._high - self._low) / 2

    def _observe(self, obs: np.ndarray) -> np.ndarray:
        naction = self.base.next_action(obs)
        if self.combine == "resip":
            self._base_action = naction.astype(np.float64)
        else:
            self._base_action = np.clip(self.to_unit(self.base.denormalize_action(naction)), -1, 1)
        features = np.clip(self.base.normalize_obs(obs), -OBS_CLAMP, OBS_CLAMP)
        return np.concatenate([features, self._base_action]).astype(np.float32)

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        self.base.reset()
        obs, info = self.env.reset(**kwargs)
        return self._observe(obs), info

    def get_state(self) -> dict[str, Any]:
        """The episode under way (:class:`~zoo.engines.policy.state.RestorableEnv`): the base's queue and action, the inner env's."""
        return {"queue": self.base.get_state(), "base_action": torch.from_numpy(self._base_action.copy()),
                "env": self.env.get_state()}  # fmt: skip

    def set_state(self, state: dict[str, Any]) -> None:
        self.base.set_state(state["queue"])
        self._base_action = state["base_action"].numpy()
        self.env.set_state(state["env"])

    def combined(self, residual: np.ndarray) -> np.ndarray:
        """The corrected action in the residual's frame (see ``combine``)."""
        total = self._base_action + self.scale * np.asarray(residual, dtype=np.float64)
        return total if self.combine == "resip" else np.clip(total, -1.0, 1.0)

    def step(self, residual: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        combined = self.combined(residual)
        if self.combine == "resip":
            action = self.base.denormalize_action(combined)
        else:
            action = self.from_unit(combined)
        base_action = self._base_action
        obs, reward, terminated, truncated, info = self.env.step(action.astype(np.float32))
        info["base_action"], info["combined_action"] = base_action, combined.astype(np.float32)
        return self._observe(obs), reward, terminated, truncated, info


class ResidualTD3(TD3):
    """Stable-baselines3 TD3 with ResFiT's changes to what is stored and what the critic sees.

    * the buffer holds the **combined** action ``clamp(base + scale r, -1, 1)`` (from the wrapper's
      ``info["combined_action"]``), and the critic learns ``Q(s, combined)``;
    * the actor's action for the critic and the TD target is rebuilt the same way from the base
      action carried in the observation's last ``action_dim`` entries;
    * each batch is half offline demonstrations (``offline_buffer``), half online (RLPD-style);
    * the first ``critic_warmup`` gradient steps update the critic only;
    * the actor learns ``actor_lr_ratio`` times slower than the critic (ResFiT: 1e-6 vs 1e-4).

    Simplified against the paper: two critics (TD3's clipped double Q) rather than a 10-head REDQ
    ensemble, and 1-step rather than 3-step returns.
    """

    def __init__(self, *args: Any, residual_scale: float = 0.1, critic_warmup: int = 0,
                 offline_buffer: ReplayBuffer | None = None, actor_lr_ratio: float = 1.0, **kwargs: Any) -> None:  # fmt: skip
        self.residual_scale = float(residual_scale)
        self.actor_lr_ratio = float(actor_lr_ratio)
        self.critic_warmup = int(critic_warmup)
        self.offline_buffer = offline_buffer
        super().__init__(*args, **kwargs)

    def _setup_model(self) -> None:
        super()._setup_model()
        with torch.no_grad():  # zero-initialised output layer: the initial residual is 0
            for actor in (self.actor, self.actor_target):
                actor.mu[-2].weight.zero_()
                actor.mu[-2].bias.zero_()

    def _combine(self, observations: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        base = observations[:, -residual.shape[1]:]
        return (base + self.residual_scale * residual).clamp(-1.0, 1.0)

    def _store_transition(self, replay_buffer: ReplayBuffer, buffer_action: np.ndarray, new_obs: Any,
                          reward: np.ndarray, dones: np.ndarray, infos: list[dict[str, Any]]) -> None:  # fmt: skip
        combined = np.stack([info["combined_action"] for info in infos]).astype(buffer_action.dtype)
        super()._store_transition(replay_buffer, combined, new_obs, reward, dones, infos)

    def _sample(self, batch_size: int) -> Any:
        if self.offline_buffer is None or self.offline_buffer.size() == 0:
            return self.replay_buffer.sample(batch_size)
        half = batch_size // 2
        online = self.replay_buffer.sample(batch_size - half)
        offline = self.offline_buffer.sample(half)
        return type(online)(*(torch.cat([a, b]) if a is not None else None for a, b in zip(online, offline)))

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate([self.actor.optimizer, self.critic.optimizer])
        for group in self.actor.optimizer.param_groups:
            group["lr"] *= self.actor_lr_ratio
        actor_losses, critic_losses = [], []
        for _ in range(gradient_steps):
            self._n_updates += 1
            batch = self._sample(batch_size)
            with torch.no_grad():
                noise = torch.randn_like(batch.actions) * self.target_policy_noise
                residual = (self.actor_target(batch.next_observations)
                            + noise.clamp(-self.target_noise_clip, self.target_noise_clip)).clamp(-1, 1)
                next_actions = self._combine(batch.next_observations, residual)
                next_q = torch.cat(self.critic_target(batch.next_observations, next_actions), dim=1)
                target = batch.rewards + (1 - batch.dones) * self.gamma * next_q.min(dim=1, keepdim=True)[0]
            critic_loss = sum(F.mse_loss(q, target) for q in self.critic(batch.observations, batch.actions))
            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()
            critic_losses.append(critic_loss.item())
            if self._n_updates % self.policy_delay:
                continue
            if self._n_updates > self.critic_warmup:
                actions = self._combine(batch.observations, self.actor(batch.observations))
                actor_loss = -self.critic.q1_forward(batch.observations, actions).mean()
                self.actor.optimizer.zero_grad()
                actor_loss.backward()
                self.actor.optimizer.step()
                actor_losses.append(actor_loss.item())
                polyak_update(self.actor.parameters(), self.actor_target.parameters(), self.tau)
            polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        if actor_losses:
            self.logger.record("train/actor_loss", float(np.mean(actor_losses)))
        self.logger.record("train/critic_loss", float(np.mean(critic_losses)))


def offline_buffer(demos: dict[str, np.ndarray], env: ResidualEnv, size: int | None = None) -> ReplayBuffer:
    """Demonstrations as ResFiT's offline half: relabelled with the base's action, the demo action as combined.

    Each demo observation gets the base's first chunk action for it (ResFiT relabels offline
    transitions with the base policy's action); the stored action is the demonstrator's, in the
    [-1, 1] frame; reward 1 at the successful last step.
    """
    n = len(demos["observations"])
    buffer = ReplayBuffer(size or n, env.observation_space, env.action_space, device="cpu")

    def relabel(obs: np.ndarray) -> np.ndarray:
        base = np.clip(env.to_unit(env.base.denormalize_action(env.base.chunk(obs)[:, 0])), -1, 1)
        features = np.clip(env.base.normalize_obs(obs), -OBS_CLAMP, OBS_CLAMP)
        return np.concatenate([features, base], axis=1).astype(np.float32)

    observations, next_observations = relabel(demos["observations"]), relabel(demos["next_observations"])
    actions = np.clip(env.to_unit(demos["actions"]), -1, 1).astype(np.float32)
    for i in range(n):
        buffer.add(observations[i:i + 1], next_observations[i:i + 1], actions[i:i + 1],
                   demos["rewards"][i:i + 1], demos["terminals"][i:i + 1], [{}])  # fmt: skip
    return buffer


def resfit_td3(env: Any, *, residual_scale: float = 0.1, exploration_std: float = 0.05,
               hidden: tuple[int, ...] = (256, 256), **td3_kwargs: Any) -> ResidualTD3:  # fmt: skip
    """:class:`ResidualTD3` with ResFiT's defaults scaled to this task.

    The exploration noise (ResFiT: std 0.05 on the scaled residual) is given on the residual before
    scaling, hence ``exploration_std / residual_scale``; likewise the target-policy noise.
    """
    dim = env.action_space.shape[0]
    sigma = exploration_std / residual_scale
    defaults = {"action_noise": NormalActionNoise(np.zeros(dim), sigma * np.ones(dim)),
                "target_policy_noise": min(sigma, 0.5), "target_noise_clip": min(3 * sigma, 1.0),
                "learning_rate": 1e-4, "tau": 0.005, "gamma": 0.99, "batch_size": 256,
                "policy_kwargs": {"net_arch": list(hidden)}}  # fmt: skip
    return silence_logger(ResidualTD3("MlpPolicy", env, residual_scale=residual_scale, **{**defaults, **td3_kwargs}))
