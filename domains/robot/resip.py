"""ResiP's residual PPO as its authors train it, on stable-baselines3.

Reproduced from ``ankile/robust-rearrangement`` (MIT, commit 41c99a0):

* **networks** (``src/models/residual.py: build_mlp, layer_init``; ``src/config/actor/residual_diffusion.yaml``):
  hidden layers Kaiming-normal (fan-in, ReLU) with zero bias; the actor's output layer zero and
  without bias; the critic's output layer orthogonal with gain 0.25 and bias 0.25. The Gaussian
  has a fixed log-std of -1 (``learn_std false``).
* **rewards** (``src/gym/env_rl_wrapper.py: RunningMeanStdClip``, ``normalize_reward true``,
  ``clip_reward 5``): each step's rewards, across all environments, update a running mean and
  variance (prior: mean 0, variance 1, count 1e-4); the reward is divided by the running std,
  *not* centred, and clipped to ``±clip``.
* **GAE** (``src/train/residual_ppo.py: calculate_advantage``, ``truncation_as_done true``): a time
  limit ends the episode like a termination, no bootstrap from the value of the last state.
* **optimisers** (``residual_ppo.py``): AdamW (eps 1e-5, weight decay 1e-6), actor and critic with
  their own learning rates (3e-4 and 5e-3), one gradient-norm clip (1.0) over both; the loss is
  ``policy + vf_coef * 0.5 * MSE`` with ``vf_coef`` 1.
* **episodes per iteration** (``src/config/base_residual_rl.yaml: reset_every_iteration true``,
  ``residual_ppo.py:340-343``): every iteration starts all environments (and the base's chunk
  queues) afresh; ``algorithm.reset_every_iteration`` does the same, off by default here (below).

Not reproduced: the cosine learning-rate schedule with 5 warm-up iterations (the zoo's engine
calls ``learn`` once per iteration, so stable-baselines3's progress-based schedules do not span
the run), 50 epochs of one minibatch over 1024 x 700 steps, the KL early stop *after* the
step that crossed it (stable-baselines3 stops before the step, at ``1.5 * target_kl``), and the
evaluation iterations (every 5th, ``eval_interval: 5``, ``eval_first: true``: the mean action, no
update, its steps not counted, ``residual_ppo.py:337-350``; the script saves the weights of the
best evaluation, ``actor_chkpt_best_success_rate.pt``, ``residual_ppo.py:424-449``; the zoo exports
the last iteration's). The zoo's default for ``reset_every_iteration`` is off: ResiP's iteration is one 700-step episode per
environment (``num_env_steps`` 700 is both the rollout and the time limit), so a reset there
cuts nothing, while the zoo's 256-step iterations over 50-step episodes would cut the episode
under way in every environment.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from torch import nn

from zoo.engines.policy.state import silence_logger
from zoo.model_files import read_json

RESIP_LOG_STD = -1.0
RESIP_TARGET_KL = 0.1
RESIP_VF_COEF = 1.0
CRITIC_HEAD_GAIN = 0.25
CRITIC_HEAD_BIAS = 0.25
REWARD_STATS_FILE = "reward_normalizer.json"
NetworkInit = Literal["resip", "sb3"]


def resip_initialize(policy: Any) -> None:
    """ResiP's initialisation of a stable-baselines3 ``ActorCriticPolicy`` (see the module docstring)."""
    with torch.no_grad():
        for net in (policy.mlp_extractor.policy_net, policy.mlp_extractor.value_net):
            for layer in net:
                if isinstance(layer, nn.Linear):
                    nn.init.kaiming_normal_(layer.weight, mode="fan_in", nonlinearity="relu")
                    layer.bias.zero_()
        nn.init.orthogonal_(policy.value_net.weight, CRITIC_HEAD_GAIN)
        policy.value_net.bias.fill_(CRITIC_HEAD_BIAS)


class ResipRewards(VecEnvWrapper):
    """ResiP's reward path: running-std reward scaling with a clip, and time limits treated as ends.

    Args:
        venv: the vectorised residual environments.
        normalize: divide rewards by the running std of all rewards seen (ResiP: on).
        clip: after scaling, clip to ``[-clip, clip]`` (ResiP: 5).
        truncation_as_done: clear stable-baselines3's ``TimeLimit.truncated`` flag so PPO does not
            bootstrap a truncated episode from its last state's value (ResiP: on).
    """

    def __init__(
        self, venv: VecEnv, *, normalize: bool = True, clip: float = 5.0, truncation_as_done: bool = True
    ) -> None:
        super().__init__(venv)
        if clip <= 0:
            raise ValueError(f"clip={clip} must be > 0")
        self.normalize, self.clip, self.truncation_as_done = normalize, float(clip), truncation_as_done
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def update(self, rewards: np.ndarray) -> None:
        """Merge one batch into the running mean and (population) variance (Chan et al.'s parallel update)."""
        batch_mean, batch_var, n = float(rewards.mean()), float(rewards.var()), len(rewards)
        delta, total = batch_mean - self.mean, self.count + n
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
        self.mean += delta * n / total
        self.var, self.count = m2 / total, total

    def scale(self, rewards: np.ndarray) -> np.ndarray:
        """Update with ``rewards``, then divide them by the running std (no centring) and clip."""
        self.update(rewards)
        return np.clip(rewards / math.sqrt(self.var + 1e-8), -self.clip, self.clip).astype(np.float32)

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        if self.normalize:
            rewards = self.scale(np.asarray(rewards, dtype=np.float64))
        if self.truncation_as_done:
            for info in infos:
                info["TimeLimit.truncated"] = False
        return obs, rewards, dones, infos

    def save(self, folder: Path) -> None:
        """The running statistics as JSON (``repr`` of a float reads back the same float)."""
        (folder / REWARD_STATS_FILE).write_text(json.dumps({"mean": self.mean, "var": self.var, "count": self.count}))

    def load(self, folder: Path) -> None:
        """The statistics :meth:`save` wrote (required: without them a resumed run scales rewards differently)."""
        stats = read_json(folder / REWARD_STATS_FILE)  # a regular file of bounded size, as algorithm.json
        self.mean, self.var, self.count = stats["mean"], stats["var"], stats["count"]


class ResipPPOAlgorithm(PPO):
    """Stable-baselines3 PPO with ResiP's optimisers: AdamW, the critic at its own learning rate.

    ``critic_lr`` (None: the actor's) sets the second parameter group (critic MLP and value head);
    the first holds the actor's trainable parameters. stable-baselines3's value loss is the plain
    MSE, so ResiP's ``0.5 * MSE * vf_coef`` is ``vf_coef / 2`` here (:func:`resip_ppo` passes it).
    ``reset_every_iteration`` resets every environment before each rollout, as ResiP does.
    """

    def __init__(self, *args: Any, critic_lr: float | None = None, reset_every_iteration: bool = False,
                 **kwargs: Any) -> None:  # fmt: skip
        self.critic_lr = critic_lr
        self.reset_every_iteration = reset_every_iteration
        super().__init__(*args, **kwargs)

    def collect_rollouts(self, env: VecEnv, *args: Any, **kwargs: Any) -> bool:
        """One rollout; with ``reset_every_iteration`` from fresh episodes (``residual_ppo.py:340-343``)."""
        if self.reset_every_iteration:
            self._last_obs = env.reset()
            self._last_episode_starts = np.ones((env.num_envs,), dtype=bool)
        return super().collect_rollouts(env, *args, **kwargs)

    def _setup_model(self) -> None:
        super()._setup_model()
        policy = self.policy
        critic = [*policy.mlp_extractor.value_net.parameters(), *policy.value_net.parameters()]
        critic_ids = {id(p) for p in critic}
        actor = [p for p in policy.parameters() if id(p) not in critic_ids]  # frozen ones get no gradient
        lr = self.lr_schedule(1)
        policy.optimizer = torch.optim.AdamW([{"params": actor, "lr": lr},
                                              {"params": critic, "lr": self.critic_lr or lr}],
                                             eps=1e-5, weight_decay=1e-6)  # fmt: skip

    def _update_learning_rate(self, optimizers: Any) -> None:
        lr = self.lr_schedule(self._current_progress_remaining)
        self.logger.record("train/learning_rate", lr)
        actor, critic = self.policy.optimizer.param_groups
        actor["lr"], critic["lr"] = lr, self.critic_lr or lr


def resip_ppo(env: VecEnv, *, hidden: tuple[int, ...] = (256, 256), network_init: NetworkInit = "resip",
              critic_lr: float | None = 5e-3, **ppo_kwargs: Any) -> ResipPPOAlgorithm:  # fmt: skip
    """PPO set up as ResiP's residual actor and critic on ``env`` (wrap it in :class:`ResipRewards` first).

    Actor and critic MLPs with ReLU, a Gaussian with fixed log-std -1, the mean's output layer zero
    with its bias held at zero (ResiP's has none), so the initial policy is the base exactly.
    ``network_init="resip"`` initialises the rest as the authors do; ``"sb3"`` keeps
    stable-baselines3's orthogonal initialisation (value head gain 1, bias 0). ``ppo_kwargs`` go to
    :class:`~stable_baselines3.PPO` (ResiP: clip 0.2, ent 0, vf_coef 1, max_grad_norm 1, gae_lambda
    0.95, target_kl 0.1).
    """
    if network_init not in ("resip", "sb3"):
        raise ValueError(f"network_init={network_init!r}: choose 'resip' (the authors') or 'sb3'")
    policy_kwargs = {"net_arch": {"pi": list(hidden), "vf": list(hidden)}, "activation_fn": nn.ReLU,
                     "log_std_init": RESIP_LOG_STD}  # fmt: skip
    policy_kwargs.update(ppo_kwargs.pop("policy_kwargs", {}))
    target_kl = ppo_kwargs.pop("target_kl", RESIP_TARGET_KL)
    vf_coef = ppo_kwargs.pop("vf_coef", RESIP_VF_COEF)
    defaults = {"clip_range": 0.2, "ent_coef": 0.0, "max_grad_norm": 1.0, "gae_lambda": 0.95,
                "target_kl": target_kl / 1.5 if target_kl else None, "vf_coef": vf_coef / 2}  # fmt: skip
    model = ResipPPOAlgorithm("MlpPolicy", env, policy_kwargs=policy_kwargs, critic_lr=critic_lr,
                              **{**defaults, **ppo_kwargs})  # fmt: skip
    if network_init == "resip":
        resip_initialize(model.policy)
    with torch.no_grad():
        model.policy.action_net.weight.zero_()
        model.policy.action_net.bias.zero_()
    model.policy.action_net.bias.requires_grad_(False)
    model.policy.log_std.requires_grad_(False)
    return silence_logger(model)
