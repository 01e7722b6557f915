"""Diffusion-policy PPO (DPPO, Ren et al. 2024, arXiv 2409.00588): a compact trainer for the ``policy`` engine.

Why not stable-baselines3: its PPO scores one Gaussian action per environment step, while DPPO's
policy is the chain of ``K'`` fine-tuned denoising steps behind each action chunk, and its PPO
samples minibatches over (environment step, denoising step) pairs with a per-step clip and
discount. That needs the stored chain and a loss per pair, so the loop is written here and
exposes the small surface the engine drives (``learn``, ``num_timesteps``, ``logger``,
``get_env``), the maths coming from :mod:`zoo.rl.dppo`.

Following ``irom-princeton/dppo`` (MIT, commit cc7234a: ``agent/finetune/train_ppo_diffusion_agent.py``,
``model/diffusion/diffusion_ppo.py``, ``diffusion_vpg.py``): the pre-trained noise network is
frozen and copied into a fine-tuned one for the last ``K'`` steps; rollouts sample with the
std floored at 0.1; GAE over chunk steps; per pair the log-prob (std floor 0.1, clamp [-5, 2],
mean over the executed actions), advantage normalised per minibatch and discounted by
``gamma_denoise^(K'-i-1)``, clip from 1e-3 to 0.01; value loss ``0.5 * MSE`` times ``vf_coef``;
AdamW actor (lr ``training.lr``) and critic (``critic_lr``), actor gradient norm clipped, actor
frozen for ``critic_warmup`` iterations, early stop after the update whose KL passed ``target_kl``.
The zoo's choices, not DPPO's: a truncated episode is bootstrapped from its last observation's
value (DPPO's wrapper resets inside the step and bootstraps across the boundary), and its
running reward scaling (``reward_scale_running``) is not applied (sparse 0/1 rewards here).
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from zoo.engines.policy.dppo_settings import DPPOSettings
from zoo.pipelines.diffusion_policy import DiffusionPolicy
from zoo.pipelines.policy import Normalization, PolicyConfig, feedforward, read_policy_config, save_policy
from zoo.rl.dppo import denoising_log_prob, denoising_minibatches, dppo_policy_loss
from zoo.runs import read_state

logger = logging.getLogger(__name__)

STATE_FILE = "dppo_state.pt"
PRETRAINED_DIR = "pretrained_policy"


class ChunkEnv(gym.Wrapper):
    """One step executes a chunk: action ``(Ta * Da,)`` in env units, rewards summed, stops at the episode's end.

    ``info["env_steps"]`` counts the environment steps the chunk took (fewer at an episode end).
    """

    def __init__(self, env: gym.Env, chunk: int) -> None:
        super().__init__(env)
        if chunk < 1:
            raise ValueError(f"chunk={chunk} must be >= 1")
        self.chunk, self.dim = chunk, env.action_space.shape[0]
        self.action_space = gym.spaces.Box(-np.inf, np.inf, (chunk * self.dim,), np.float32)

    def step(self, action: np.ndarray) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        total, info = 0.0, {}
        for k, a in enumerate(np.asarray(action, dtype=np.float32).reshape(self.chunk, self.dim)):
            obs, reward, terminated, truncated, info = self.env.step(a)
            total += float(reward)
            if terminated or truncated:
                break
        info["env_steps"] = k + 1
        return obs, total, terminated, truncated, info

    def get_state(self) -> dict[str, Any]:
        """The inner environment's episode (a chunk ends within one ``step``, so this wrapper keeps nothing)."""
        return self.env.get_state()

    def set_state(self, state: dict[str, Any]) -> None:
        self.env.set_state(state)


def minmax_normalization(observations: np.ndarray, actions: np.ndarray) -> Normalization:
    """Observations by mean and std; actions min-max to [-1, 1] (DPPO's, where the sampler clips).

    All four in float64, the dtype :meth:`Normalization.read` gives them: a resumed run (and the
    exported policy) read them back from ``normalization.json`` and must compute as the run did.
    """
    low, high = actions.min(0), actions.max(0)
    stats = (observations.mean(0), np.maximum(observations.std(0), 1e-3), (high + low) / 2,
             np.maximum((high - low) / 2, 1e-3))  # fmt: skip
    return Normalization(*(np.asarray(s, dtype=np.float64) for s in stats))


def pretrain(observations: np.ndarray, chunks: np.ndarray, config: PolicyConfig, *, steps: int, lr: float = 1e-3,
             batch_size: int = 256, seed: int = 0) -> tuple[DiffusionPolicy, Normalization, list[float]]:  # fmt: skip
    """Behaviour cloning of a :class:`DiffusionPolicy` on ``(N, Do)`` observations and ``(N, Ta, Da)`` chunks."""
    norm = minmax_normalization(observations, chunks.reshape(-1, chunks.shape[-1]))
    x = torch.as_tensor((observations - norm.obs_mean) / norm.obs_std, dtype=torch.float32)
    y = torch.as_tensor((chunks - norm.action_mean) / norm.action_std, dtype=torch.float32).clamp(-1, 1)
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    policy = DiffusionPolicy(config)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=lr, weight_decay=1e-6)
    losses = []
    from tqdm.auto import trange

    for _ in trange(steps, desc="diffusion BC", disable=None):
        index = torch.randint(len(x), (min(batch_size, len(x)),), generator=generator)
        loss = policy.bc_loss(x[index], y[index], generator)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return policy.eval(), norm, losses


class _Log:
    """What the engine reads of a stable-baselines3 logger: ``name_to_value``."""

    def __init__(self) -> None:
        self.name_to_value: dict[str, float] = {}


class DiffusionPPO:
    """PPO over the denoising chain of a :class:`DiffusionPolicy` (module docstring); one ``learn`` call = one iteration."""

    def __init__(self, policy: DiffusionPolicy, config: PolicyConfig, norm: Normalization, env: Any,
                 settings: DPPOSettings, hidden: tuple[int, ...] = (256, 256), seed: int = 0) -> None:  # fmt: skip
        self.pretrained = copy.deepcopy(policy)
        self.policy, self.config, self.norm, self.env, self.s = policy, config, norm, env, settings
        if policy.net_ft is None:
            policy.start_fine_tuning(settings.ft_steps)
        self.critic = feedforward([config.observation_dim, *hidden, 1], nn.Mish)
        self.actor_opt = torch.optim.AdamW(policy.net_ft.parameters(), lr=settings.actor_lr, weight_decay=0.0)
        self.critic_opt = torch.optim.AdamW(self.critic.parameters(), lr=settings.critic_lr, weight_decay=0.0)
        self.generator = torch.Generator().manual_seed(seed)
        self.num_timesteps, self.iteration = 0, 0
        self.logger = _Log()
        self._obs = env.reset()

    def get_env(self) -> Any:
        return self.env

    def _normalize(self, obs: np.ndarray) -> torch.Tensor:
        return torch.as_tensor((obs - self.norm.obs_mean) / self.norm.obs_std, dtype=torch.float32)

    @torch.no_grad()
    def _value(self, obs: np.ndarray) -> np.ndarray:
        return self.critic(self._normalize(obs)).squeeze(-1).numpy()

    @torch.no_grad()
    def collect(self, callback: Any = None) -> dict[str, torch.Tensor]:
        """``n_steps`` chunk steps in every environment: observations, chains, rewards, dones, values."""
        obs_l, chains, rewards, dones, values = [], [], [], [], []
        for _ in range(self.s.n_steps):
            obs_n = self._normalize(self._obs)
            action, chain = self.policy.sample(obs_n, min_std=self.s.min_sampling_std, generator=self.generator)
            env_action = action.numpy() * self.norm.action_std + self.norm.action_mean
            next_obs, reward, done, infos = self.env.step(env_action.reshape(len(env_action), -1))
            reward = np.asarray(reward, dtype=np.float64).copy()
            for i, info in enumerate(infos):  # bootstrap a time limit from the value of its last state
                if done[i] and info.get("TimeLimit.truncated", False):
                    reward[i] += self.s.gamma * self._value(info["terminal_observation"][None])[0]
                self.num_timesteps += int(info.get("env_steps", 1))
            obs_l.append(obs_n), chains.append(chain), rewards.append(reward), dones.append(done)
            values.append(self._value(self._obs))
            if callback is not None:
                callback.update_locals({"dones": done, "infos": infos})
                callback.on_step()
            self._obs = next_obs
        batch = {"obs": torch.stack(obs_l), "chains": torch.stack(chains)}
        batch |= {k: torch.as_tensor(np.stack(v), dtype=torch.float32)
                  for k, v in (("rewards", rewards), ("dones", dones), ("values", values))}  # fmt: skip
        batch["last_values"] = torch.as_tensor(self._value(self._obs), dtype=torch.float32)
        return batch

    def advantages(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE over chunk steps ``(T, N)``: advantages and returns (an episode end stops the recursion)."""
        rewards, dones, values = batch["rewards"], batch["dones"], batch["values"]
        adv, last = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
        for t in reversed(range(len(rewards))):
            next_values = batch["last_values"] if t == len(rewards) - 1 else values[t + 1]
            alive = 1.0 - dones[t]
            delta = rewards[t] + self.s.gamma * next_values * alive - values[t]
            adv[t] = last = delta + self.s.gamma * self.s.gae_lambda * alive * last
        return adv, adv + values

    def _log_probs(self, obs: torch.Tensor, chains: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """Per-element log-probs ``(B, Ta, Da)`` of fine-tuned step ``index`` (0 = noisiest) of each chain."""
        rows = torch.arange(len(obs))
        t = self.s.ft_steps - 1 - index
        mean, logvar = self.policy.mean_logvar(chains[rows, index], t, obs, fine_tuned=True)
        return denoising_log_prob(mean, logvar, chains[rows, index + 1])

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """PPO epochs over (env step, denoising step) pairs; returns the last minibatch's diagnostics."""
        adv, returns = (x.flatten() for x in self.advantages(batch))
        obs, chains = batch["obs"].flatten(0, 1), batch["chains"].flatten(0, 1)
        k = self.s.ft_steps
        with torch.no_grad():
            old = torch.stack([self._log_probs(obs, chains, torch.full((len(obs),), i)) for i in range(k)], dim=1)
        train_actor = self.iteration >= self.s.critic_warmup
        horizon = self.s.act_steps or self.config.action_chunk
        stats: dict[str, float] = {}
        for _ in range(self.s.epochs):
            stop = False
            for sample, step in denoising_minibatches(len(obs), k, self.s.batch_size, self.generator):
                new = self._log_probs(obs[sample], chains[sample], step)
                pg, kl = dppo_policy_loss(new, old[sample, step], adv[sample], step, ft_steps=k,
                                          reward_horizon=horizon, gamma_denoise=self.s.gamma_denoise,
                                          clip_base=self.s.clip_base, clip_final=self.s.clip_final,
                                          clip_rate=self.s.clip_rate)  # fmt: skip
                v_loss = 0.5 * ((self.critic(obs[sample]).squeeze(-1) - returns[sample]) ** 2).mean()
                self.actor_opt.zero_grad()
                self.critic_opt.zero_grad()
                (pg + self.s.vf_coef * v_loss).backward()
                if train_actor:
                    nn.utils.clip_grad_norm_(self.policy.net_ft.parameters(), self.s.max_grad_norm)
                    self.actor_opt.step()
                self.critic_opt.step()
                stats = {"pg_loss": pg.item(), "value_loss": v_loss.item(), "approx_kl": kl.approx_kl,
                         "clip_fraction": kl.clip_fraction, "ratio": kl.ratio_mean}  # fmt: skip
                if kl.approx_kl > self.s.target_kl:
                    stop = True
                    break
            if stop:
                break
        var = returns.var().item()
        stats["explained_variance"] = 1 - (returns - batch["values"].flatten()).var().item() / var if var > 0 else 0.0
        return stats

    def learn(self, total_timesteps: int = 0, reset_num_timesteps: bool = False, callback: Any = None) -> DiffusionPPO:
        """One iteration: collect, then update (``total_timesteps`` is the engine's budget and not used)."""
        if callback is not None:
            callback.init_callback(self)
        self.policy.train()
        batch = self.collect(callback)
        stats = self.update(batch)
        self.iteration += 1
        self.logger.name_to_value = {f"train/{k}": v for k, v in stats.items()}
        return self

    def save(self, folder: Path) -> None:
        """Network, optimiser and sampler states with the current observations (``dppo_state.pt``), and the
        pre-trained policy with its config and statistics (what :meth:`from_checkpoint` builds the trainer from)."""
        self.export(folder / PRETRAINED_DIR, pretrained=True)
        torch.save({"policy": self.policy.state_dict(), "pretrained": self.pretrained.state_dict(),
                    "critic": self.critic.state_dict(), "actor_opt": self.actor_opt.state_dict(),
                    "critic_opt": self.critic_opt.state_dict(), "num_timesteps": self.num_timesteps,
                    "iteration": self.iteration, "generator": self.generator.get_state(),
                    "obs": torch.from_numpy(np.array(self._obs))}, folder / STATE_FILE)  # fmt: skip

    @classmethod
    def from_checkpoint(cls, folder: Path, env: Any, settings: DPPOSettings, *, hidden: tuple[int, ...] = (256, 256),
                        seed: int = 0) -> DiffusionPPO:  # fmt: skip
        """The trainer :meth:`save` wrote into ``folder`` (``--resume``)."""
        config = read_policy_config(folder / PRETRAINED_DIR)
        norm = Normalization.read(folder / PRETRAINED_DIR / "normalization.json", config)
        config = PolicyConfig(config.observation_dim, config.action_dim, config.architecture, config.action_chunk,
                              config.hidden, {"denoising_steps": config.extra["denoising_steps"]})  # fmt: skip
        return cls(DiffusionPolicy(config), config, norm, env, settings, hidden=hidden, seed=seed).load(folder)

    def load(self, folder: Path) -> DiffusionPPO:
        """Load :meth:`save`'s state (read as tensors and plain values only: :func:`zoo.runs.read_state`)."""
        state = read_state(folder / STATE_FILE)
        self.policy.load_state_dict(state["policy"])
        self.pretrained.load_state_dict(state["pretrained"])
        self.critic.load_state_dict(state["critic"])
        self.actor_opt.load_state_dict(state["actor_opt"])
        self.critic_opt.load_state_dict(state["critic_opt"])
        self.num_timesteps, self.iteration = state["num_timesteps"], state["iteration"]
        self.generator.set_state(state["generator"])
        self._obs = state["obs"].numpy()  # the episodes continue where they were
        return self

    def export(self, folder: Path, *, pretrained: bool = False) -> Path:
        """The fine-tuned (or, ``pretrained=True``, the behaviour-cloned) policy as a ``diffusion-mlp`` directory."""
        policy = self.pretrained if pretrained else self.policy
        extra = {**self.config.extra, "ft_denoising_steps": policy.ft_steps}
        config = PolicyConfig(self.config.observation_dim, self.config.action_dim, "diffusion-mlp",
                              self.config.action_chunk, self.config.hidden, extra)  # fmt: skip
        return save_policy(folder, policy, config, self.norm)
