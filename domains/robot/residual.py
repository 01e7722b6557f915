"""Residual RL on a frozen base policy, as stable-baselines3 environments and algorithms.

Two published parameterisations (research notes §2.1, §2.2, §4.4), both a *per-step* correction on
top of a possibly chunked base whose action is part of the residual's input:

* **ResiP** (Ankile et al. 2024, arXiv 2407.16677; ``ankile/robust-rearrangement``, MIT): in the
  base's *normalised* action space, ``a = a_base + 0.1 * r`` with ``r ~ N(mu(s, a_base), e^-1)``
  (fixed log-std -1), trained with PPO; the residual's output layer starts at zero and has no bias,
  and neither the residual nor the sum is clipped. ResiP's PPO itself is in :mod:`domains.robot.resip`.
* **ResFiT** (Ankile et al. 2025, arXiv 2509.19301; ``amazon-science/residual-offpolicy-rl``,
  CC-BY-NC-4.0, read at commit 66262b0): actions min-max scaled to [-1, 1] by the demonstrations'
  range widened by ``1 + scale`` (:func:`resfit_action_limits`); the actor outputs
  ``scale * tanh(.)`` and the environment executes ``clamp(a_base + r, -1, 1)``; the replay buffer
  stores the **unclamped** sum and the critic learns ``Q(s, a_base + r)``; batches are half offline
  demonstrations, half online; the critic trains alone for a warm-up before the actor moves, then
  four critic updates and one actor update per environment step (:class:`ResidualTD3`).

The base is never trained: :class:`FrozenBase` turns its parameters' gradients off and only the
residual's parameters reach an optimiser (``tests/domains/robot`` checks the weights stay bit-identical).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import TD3
from stable_baselines3.common.buffers import NStepReplayBuffer, ReplayBuffer
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.policies import ContinuousCritic
from stable_baselines3.common.utils import polyak_update
from stable_baselines3.td3.policies import Actor, TD3Policy
from torch import nn

from zoo.engines.policy.state import silence_logger
from zoo.pipelines.policy import PolicyPipeline, feedforward

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
        combine: ``"resip"``: the base's normalised frame, ``base + scale * r``, no clip, unbounded
            ``r``. ``"resfit"``: actions min-max scaled to [-1, 1] by ``action_limits``; the action is
            the residual *already scaled* (ResFiT's actor outputs ``scale * tanh``), ``r`` in [-1, 1];
            the sum ``base + r`` is reported unclamped (what ResFiT stores) and executed clamped to
            [-1, 1] (``residual_env_wrapper.py:136-145``, ``normalization.py:128-132``).
        scale: the residual scale (ResiP 0.1; ResFiT 0.1, applied by its actor and recorded here for export).
        action_limits: ResFiT: ``(low, high)`` of the scaling, :func:`resfit_action_limits` of the
            demonstrations; default the environment's action box.
    """

    def __init__(self, env: gym.Env, base: FrozenBase, combine: Combine = "resip", scale: float = RESIP_SCALE,
                 action_limits: tuple[np.ndarray, np.ndarray] | None = None) -> None:  # fmt: skip
        super().__init__(env)
        if combine not in ("resip", "resfit"):
            raise ValueError(f"combine={combine!r}: choose 'resip' or 'resfit'")
        space = env.action_space
        if not isinstance(space, gym.spaces.Box) or space.shape != (base.config.action_dim,):
            raise ValueError(f"the environment's action space {space} is not a Box of the base's "
                             f"{base.config.action_dim} dimensions")  # fmt: skip
        low, high = action_limits if action_limits is not None else (space.low, space.high)
        low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
        if combine == "resfit" and not (np.isfinite(low).all() and np.isfinite(high).all() and (high > low).all()):
            raise ValueError("ResFiT scales actions to [-1, 1] between finite limits low < high; these are not")
        self.base, self.combine, self.scale = base, combine, float(scale)
        dim = base.config.observation_dim + base.config.action_dim
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (dim,), np.float32)
        bound = RESIP_BOUND if combine == "resip" else 1.0
        self.action_space = gym.spaces.Box(-bound, bound, (base.config.action_dim,), np.float32)
        self._low, self._high = low, high
        self._base_action = np.zeros(base.config.action_dim)

    def to_unit(self, action: np.ndarray) -> np.ndarray:
        """Env units -> [-1, 1] between the limits, clamped to them first (ResFiT's ``ActionScaler.scale``)."""
        return 2 * (np.clip(action, self._low, self._high) - self._low) / (self._high - self._low) - 1

    def from_unit(self, unit: np.ndarray) -> np.ndarray:
        """[-1, 1] -> env units, clamped to [-1, 1] first (ResFiT's ``ActionScaler.unscale``)."""
        return self._low + (np.clip(unit, -1.0, 1.0) + 1) * (self._high - self._low) / 2

    def _observe(self, obs: np.ndarray) -> np.ndarray:
        naction = self.base.next_action(obs)
        if self.combine == "resip":
            self._base_action = naction.astype(np.float64)
        else:
            self._base_action = self.to_unit(self.base.denormalize_action(naction))
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
        """The corrected action in the residual's frame, before any clamp (see ``combine``)."""
        scale = self.scale if self.combine == "resip" else 1.0  # ResFiT's residual arrives scaled
        return self._base_action + scale * np.asarray(residual, dtype=np.float64)

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


# ResFiT's values, from amazon-science/residual-offpolicy-rl@66262b0 (the file and line beside each).
RESFIT_MIN_ACTION_RANGE = 0.1  # resfit/rl_finetuning/config/residual_td3.py:21 (min_action_range)
RESFIT_MIN_Q_HEADS = 2  # config/rlpd.py:58: the TD target is the min over 2 random heads
RESFIT_WARMUP_ACTION_SCALE = 0.2  # config/residual_td3.py:56 (random_action_noise_scale)
RESFIT_TARGET_NOISE_CLIP = 0.3  # config/rlpd.py:102 (stddev_clip)
RESFIT_GRAD_CLIP = 1.0  # config/rlpd.py:115-116 (critic_grad_clip_norm, actor_grad_clip_norm)


def resfit_action_limits(actions: np.ndarray, action_scale: float,
                         min_range: float = RESFIT_MIN_ACTION_RANGE) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """ResFiT's action scaling limits from demonstration actions ``(N, A)``: ``(low, high)``.

    The per-dimension range of the data, at least ``min_range`` wide, widened about its middle by
    ``1 + action_scale`` so that the base plus a residual can leave the demonstrated range
    (``resfit/rl_finetuning/utils/normalization.py:62-77``, built from the dataset's action min/max and
    the actor's ``action_scale`` in ``scripts/train_residual_td3.py:246-251``).
    """
    actions = np.asarray(actions, dtype=np.float64)
    low, high = actions.min(0), actions.max(0)
    middle, half = (low + high) / 2, np.maximum((high - low) / 2, min_range / 2) * (1 + action_scale)
    return middle - half, middle + half


def resfit_critic_loss(q_all: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """ResFiT's critic loss for ``q_all`` ``(K, B, 1)`` of K heads and the TD target ``(B, 1)``.

    Per sample the absolute TD error averaged over the heads, squared, then averaged over the batch
    (``off_policy/rl/q_agent.py:377-388``): the heads share one error, unlike stable-baselines3's sum
    of per-critic MSEs.
    """
    td_errors = (q_all - target.unsqueeze(0)).abs().mean(dim=0)
    return (td_errors**2).mean()


class _Scale(nn.Module):
    """Multiply by a constant: ResFiT's actor scales its tanh output by ``action_scale`` (``rl/actor.py:168-172``)."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = float(scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


class ResfitCritic(ContinuousCritic):
    """stable-baselines3's critics with ResFiT's heads: ``Linear -> LayerNorm -> ReLU`` per hidden layer.

    ``rl/critic.py:447-465`` (``HeadMLP``, ``use_layer_norm`` True in ``config/rlpd.py:56``). The heads
    keep PyTorch's default initialisation, as the authors' do: their orthogonal init
    (``critic.py:540-550``) passes a tensor to ``utils.orth_weight_init``, which only acts on modules.
    """

    def __init__(self, *args: Any, layer_norm: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not layer_norm:
            return
        linears = [m for m in self.q_networks[0] if isinstance(m, nn.Linear)]
        sizes = [linears[0].in_features, *(m.out_features for m in linears)]
        for index in range(len(self.q_networks)):
            head = feedforward(sizes, layer_norm=True)
            self.add_module(f"qf{index}", head)
            self.q_networks[index] = head


class ResfitPolicy(TD3Policy):
    """TD3's actor and critics built as ResFiT's (for one flat observation; the authors' image encoder aside).

    Actor (``rl/actor.py:12-28, 104-112, 117-148, 168-172``): ``build_fc`` with ``layer_norm=1``, i.e.
    ``Linear -> LayerNorm -> Dropout -> ReLU`` per hidden layer (``use_layer_norm`` True,
    ``config/rlpd.py:93``; dropout 0, ``config/rlpd.py:70``, so it is left out here), then ``Linear ->
    Tanh`` times ``action_scale``. Hidden Linears orthogonal with zero bias (``orth`` 1, ``rlpd.py:71``,
    turns the ``default`` intermediate init into ``orthogonal``), LayerNorms PyTorch's default, the output
    layer zero (``actor_last_layer_init_scale`` 0 with the ``normal`` distribution, ``config/residual_td3.py:98``).
    ``actor_layer_norm=False`` is the authors' ablation without it. Critics: :class:`ResfitCritic`.
    Optimisers: AdamW with PyTorch's default weight decay (``q_agent.py:111-113``), passed as ``optimizer_class``.
    """

    def __init__(self, *args: Any, action_scale: float = 0.1, actor_layer_norm: bool = True,
                 critic_layer_norm: bool = True, **kwargs: Any) -> None:  # fmt: skip
        self.action_scale = float(action_scale)
        self.actor_layer_norm, self.critic_layer_norm = actor_layer_norm, critic_layer_norm
        super().__init__(*args, **kwargs)

    def make_actor(self, features_extractor: Any = None) -> Actor:
        actor = super().make_actor(features_extractor)
        linears = [m for m in actor.mu if isinstance(m, nn.Linear)]
        sizes = [linears[0].in_features, *(m.out_features for m in linears)]
        mu = feedforward(sizes, layer_norm=self.actor_layer_norm)
        hidden = [m for m in mu if isinstance(m, nn.Linear)]
        with torch.no_grad():
            for layer in hidden[:-1]:
                nn.init.orthogonal_(layer.weight)
                layer.bias.zero_()
            hidden[-1].weight.zero_()
            hidden[-1].bias.zero_()
        actor.mu = nn.Sequential(*mu, nn.Tanh(), _Scale(self.action_scale)).to(self.device)
        return actor

    def make_critic(self, features_extractor: Any = None) -> ResfitCritic:
        critic_kwargs = self._update_features_extractor(self.critic_kwargs, features_extractor)
        return ResfitCritic(**critic_kwargs, layer_norm=self.critic_layer_norm).to(self.device)


class ResidualTD3(TD3):
    """stable-baselines3 TD3 run as ResFiT's residual agent (``rl/q_agent.py``, ``scripts/train_residual_td3.py``).

    * the buffer holds the executed **combined** action ``base + r`` unclamped (the wrapper's
      ``info["combined_action"]``; ``residual_env_wrapper.py:136-145``); the critic learns ``Q(s, a)``
      on it, and the actions of the TD target and the actor loss are ``clamp(base + r, -1, 1)`` with
      the base action read from the observation's last ``action_dim`` entries (``q_agent.py:329, 443``);
    * the TD target takes the minimum over two randomly chosen critics of the target ensemble
      (``critic.py:328-340``), the next residual carrying clipped Gaussian noise and clamped to [-1, 1]
      (``q_agent.py:318-324``, ``common_utils/utils.py:164-181``); the critic loss is
      :func:`resfit_critic_loss`; the actor maximises the mean over all critics (``critic.py:353-355``);
      both gradients are clipped at norm 1; the critic's target network follows every critic update,
      the actor's every actor update (``q_agent.py:636, 651``);
    * each batch is half offline demonstrations (``offline_buffer``), half online (``config/rlpd.py:159``);
    * after ``learning_starts`` random steps (a uniform residual of at most ``warmup_action_scale``
      around the base, ``train_residual_td3.py:729-747``), the first training call runs
      ``critic_warmup`` critic-only updates with no target noise (``train_residual_td3.py:867-937``);
    * then per environment step ``gradient_steps`` critic updates and an actor update on every
      ``policy_delay``-th of them (``num_updates_per_iteration 4``, ``actor_updates_per_iteration 1``:
      ``config/rlpd.py:154-155``, ``train_residual_td3.py:1023-1060``);
    * the actor learns ``actor_lr_ratio`` times slower than the critic (ResFiT: 1e-6 vs 1e-4).
    """

    def __init__(self, *args: Any, critic_warmup: int = 0, offline_buffer: ReplayBuffer | None = None,
                 actor_lr_ratio: float = 1.0, warmup_action_scale: float = RESFIT_WARMUP_ACTION_SCALE,
                 **kwargs: Any) -> None:  # fmt: skip
        self.actor_lr_ratio = float(actor_lr_ratio)
        self.critic_warmup = int(critic_warmup)
        self.offline_buffer = offline_buffer
        self.warmup_action_scale = float(warmup_action_scale)
        super().__init__(*args, **kwargs)

    @staticmethod
    def _combine(observations: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        base = observations[:, -residual.shape[1]:]
        return (base + residual).clamp(-1.0, 1.0)

    def _sample_action(self, learning_starts: int, action_noise: Any = None,
                       n_envs: int = 1) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """During ``learning_starts``: a uniform residual in ``±warmup_action_scale``, no noise (ResFiT's warm-up)."""
        if self.num_timesteps < learning_starts:
            action = np.array([self.action_space.sample() for _ in range(n_envs)]) * self.warmup_action_scale
            return action, action
        return super()._sample_action(learning_starts, action_noise, n_envs)

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

    def _update(self, batch_size: int, *, update_actor: bool, target_noise: float) -> tuple[float, float | None]:
        """One critic update and, with ``update_actor``, one actor update; returns the two losses."""
        batch = self._sample(batch_size)
        discounts = batch.discounts if batch.discounts is not None else self.gamma
        with torch.no_grad():
            clip = self.target_noise_clip
            noise = (torch.randn_like(batch.actions) * target_noise).clamp(-clip, clip)
            residual = (self.actor_target(batch.next_observations) + noise).clamp(-1.0, 1.0)
            next_actions = self._combine(batch.next_observations, residual)
            next_q = torch.stack(self.critic_target(batch.next_observations, next_actions))
            heads = torch.randperm(len(next_q))[:RESFIT_MIN_Q_HEADS]
            target = batch.rewards + (1 - batch.dones) * discounts * next_q[heads].min(dim=0).values
        critic_loss = resfit_critic_loss(torch.stack(self.critic(batch.observations, batch.actions)), target)
        self.critic.optimizer.zero_grad()
        critic_loss.backward()
        nn.utils.clip_grad_norm_(self.critic.parameters(), RESFIT_GRAD_CLIP)
        self.critic.optimizer.step()
        polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
        if not update_actor:
            return critic_loss.item(), None
        actions = self._combine(batch.observations, self.actor(batch.observations))
        actor_loss = -torch.stack(self.critic(batch.observations, actions)).mean(dim=0).mean()
        self.actor.optimizer.zero_grad()
        actor_loss.backward()
        nn.utils.clip_grad_norm_(self.actor.parameters(), RESFIT_GRAD_CLIP)
        self.actor.optimizer.step()
        polyak_update(self.actor.parameters(), self.actor_target.parameters(), self.tau)
        return critic_loss.item(), actor_loss.item()

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate([self.actor.optimizer, self.critic.optimizer])
        for group in self.actor.optimizer.param_groups:
            group["lr"] *= self.actor_lr_ratio
        critic_losses, actor_losses = [], []
        if self._n_updates == 0:  # the first call: ResFiT's critic-only warm-up block
            for _ in range(self.critic_warmup):
                critic_losses.append(self._update(batch_size, update_actor=False, target_noise=0.0)[0])
            self._n_updates += self.critic_warmup
        for step in range(gradient_steps):
            critic_loss, actor_loss = self._update(batch_size, update_actor=(step + 1) % self.policy_delay == 0,
                                                   target_noise=self.target_policy_noise)  # fmt: skip
            critic_losses.append(critic_loss)
            if actor_loss is not None:
                actor_losses.append(actor_loss)
        self._n_updates += gradient_steps
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        if actor_losses:
            self.logger.record("train/actor_loss", float(np.mean(actor_losses)))
        self.logger.record("train/critic_loss", float(np.mean(critic_losses)))


def offline_buffer(demos: dict[str, np.ndarray], env: ResidualEnv, *, n_steps: int = 1,
                   gamma: float = 0.99) -> ReplayBuffer:  # fmt: skip
    """Demonstrations as ResFiT's offline half: relabelled with the base's action, the demo action as combined.

    Each demo observation gets the base's first chunk action for it (ResFiT relabels offline
    transitions with the base policy's action, ``use_base_policy_for_base_actions`` True:
    ``config/residual_td3.py:19``, ``train_residual_td3.py:556-581``); the stored action is the
    demonstrator's, scaled like the base's; reward 1 at the successful last step. With
    ``n_steps > 1`` the buffer returns n-step returns like the online one (the authors apply the
    same ``MultiStepTransform`` to both, ``train_residual_td3.py:406, 502``).
    """
    n = len(demos["observations"])
    kwargs: dict[str, Any] = {"n_steps": n_steps, "gamma": gamma} if n_steps > 1 else {}
    buffer = (NStepReplayBuffer if n_steps > 1 else ReplayBuffer)(n, env.observation_space, env.action_space,
                                                                   device="cpu", **kwargs)  # fmt: skip

    def relabel(obs: np.ndarray) -> np.ndarray:
        base = env.to_unit(env.base.denormalize_action(env.base.chunk(obs)[:, 0]))
        features = np.clip(env.base.normalize_obs(obs), -OBS_CLAMP, OBS_CLAMP)
        return np.concatenate([features, base], axis=1).astype(np.float32)

    observations, next_observations = relabel(demos["observations"]), relabel(demos["next_observations"])
    actions = env.to_unit(demos["actions"]).astype(np.float32)
    for i in range(n):
        buffer.add(observations[i:i + 1], next_observations[i:i + 1], actions[i:i + 1],
                   demos["rewards"][i:i + 1], demos["terminals"][i:i + 1], [{}])  # fmt: skip
    return buffer


def resfit_td3(env: Any, *, residual_scale: float = 0.1, exploration_std: float = 0.05,
               hidden: tuple[int, ...] = (1024, 1024), n_critics: int = 10, actor_layer_norm: bool = True,
               critic_layer_norm: bool = True, updates_per_step: int = 4, actor_updates_per_step: int = 1,
               **td3_kwargs: Any) -> ResidualTD3:  # fmt: skip
    """:class:`ResidualTD3` with ResFiT's defaults (each from ``amazon-science/residual-offpolicy-rl@66262b0``).

    ``residual_scale`` 0.1 (``config/residual_td3.py:97``); exploration and target noise std 0.05 on
    the scaled residual (``config/residual_td3.py:67-68``), target noise clipped at 0.3
    (``config/rlpd.py:102``); actor and critics ``hidden`` 1024 x 1024 (``config/rlpd.py:42, 54, 69,
    91``) with LayerNorm (``config/rlpd.py:56, 93``), ten critics (``num_q``, ``config/rlpd.py:48``);
    ``updates_per_step`` critic updates per environment step of which ``actor_updates_per_step``
    also update the actor (``config/rlpd.py:154-155``); 3-step returns (``config/rlpd.py:165``);
    critic lr 1e-4 with the actor at 1e-6 (``config/residual_td3.py:93-94``); tau 0.005
    (``config/residual_td3.py:95``); batch 256, buffer 200 000, 10 000 random steps, gamma 0.99
    (``config/rlpd.py:146-151``); 10 000 critic-only updates (``config/residual_td3.py:49``).
    ``gradient_steps`` counts updates per step of *all* environments, hence ``updates_per_step * n_envs``.
    """
    if updates_per_step % actor_updates_per_step:
        raise ValueError(f"updates_per_step={updates_per_step} must be a multiple of "
                         f"actor_updates_per_step={actor_updates_per_step}")  # fmt: skip
    dim = env.action_space.shape[0]
    defaults = {"action_noise": NormalActionNoise(np.zeros(dim), exploration_std * np.ones(dim)),
                "target_policy_noise": exploration_std, "target_noise_clip": RESFIT_TARGET_NOISE_CLIP,
                "learning_rate": 1e-4, "actor_lr_ratio": 0.01, "tau": 0.005, "gamma": 0.99, "batch_size": 256,
                "buffer_size": 200_000, "learning_starts": 10_000, "critic_warmup": 10_000, "n_steps": 3,
                "train_freq": 1, "gradient_steps": updates_per_step * env.num_envs,
                "policy_delay": updates_per_step // actor_updates_per_step,
                "policy_kwargs": {"net_arch": list(hidden), "n_critics": n_critics, "action_scale": residual_scale,
                                  "actor_layer_norm": actor_layer_norm, "critic_layer_norm": critic_layer_norm,
                                  "optimizer_class": torch.optim.AdamW}}  # fmt: skip
    return silence_logger(ResidualTD3(ResfitPolicy, env, **{**defaults, **td3_kwargs}))
