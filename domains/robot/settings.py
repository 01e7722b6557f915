"""The settings of the robot domain's policy methods (``resip-ppo``, ``resfit-td3``, ``dppo``): the ``algorithm`` block
each reads, registered under the method's name.

They sit apart from the methods' training code (:mod:`domains.robot.algorithms`) so that reading a recipe imports this
module alone (``Domain.methods`` names it): dataclasses that check their own numbers, and no torch, gymnasium or
environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from zoo.engines.policy.dppo_settings import DPPOSettings, DPPOTuning
from zoo.engines.policy.recipe import PolicyAlgorithmConfig, PPOConfig, SB3PPOConfig
from zoo.recipe import RecipeError


@dataclass(frozen=True)
class ResidualConfig(PolicyAlgorithmConfig):
    """Methods that correct the frozen base with a scaled residual (``resip-ppo``, ``resfit-td3``)."""

    residual_scale: float = 0.1
    """Scale of the residual added to the base action (ResiP 0.1; ResFiT 0.1-0.2)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.residual_scale <= 0:
            raise RecipeError(f"algorithm.residual_scale={self.residual_scale} must be > 0")


@PolicyAlgorithmConfig.register("resip-ppo")
@dataclass(frozen=True)
class ResipPPOConfig(ResidualConfig, SB3PPOConfig):
    """``resip-ppo``: residual PPO (defaults: the CPU settings measured on FetchPush, ResiP's terms otherwise)."""

    method: str = "resip-ppo"
    critic_lr: float = 5e-3
    """The critic's own learning rate (ResiP 5e-3; 0: ``training.lr``)."""
    network_init: str = "resip"
    """``resip`` (Kaiming hidden layers, value head gain 0.25 and bias 0.25, as the authors) or ``sb3``."""
    normalize_reward: bool = True
    """Divide rewards by their running std, uncentred (ResiP's ``normalize_reward``)."""
    clip_reward: float = 5.0
    """Clip the scaled rewards to ``±clip_reward`` (ResiP 5)."""
    reset_every_iteration: bool = False
    """Reset every environment before each iteration's rollout (ResiP: on; see ``domains/robot/resip.py``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.critic_lr < 0 or self.clip_reward <= 0:
            raise RecipeError(f"algorithm.critic_lr={self.critic_lr} must be >= 0 "
                              f"and clip_reward={self.clip_reward} > 0")  # fmt: skip
        if self.network_init not in ("resip", "sb3"):
            raise RecipeError(f"algorithm.network_init={self.network_init!r}: choose 'resip' (the authors') or 'sb3'")


@PolicyAlgorithmConfig.register("resfit-td3")
@dataclass(frozen=True)
class ResfitTD3Config(ResidualConfig):
    """``resfit-td3``: residual TD3; the terms not set here are ResFiT's own, as
    :func:`~domains.robot.residual.resfit_td3` defaults them."""

    method: str = "resfit-td3"
    learning_starts: int = 2000
    """Environment steps of exploration before the first update."""
    critic_warmup: int = 0
    """Gradient steps that update the critic only."""
    offline_episodes: int = field(kw_only=True)
    """Scripted demonstration episodes: the offline half of each batch, and the range that scales the actions."""
    n_critics: int = 10
    """Critic heads (ResFiT's ``num_q``, ``config/rlpd.py:48``); the TD target takes the minimum of 2 random ones."""
    actor_layer_norm: bool = True
    """LayerNorm after each hidden Linear of the actor (ResFiT's ``ActorConfig.use_layer_norm``, ``config/rlpd.py:93``)."""
    critic_layer_norm: bool = True
    """LayerNorm after each hidden Linear of the critics (ResFiT's ``CriticConfig.use_layer_norm``, ``config/rlpd.py:56``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.offline_episodes < 1:
            raise RecipeError("resfit-td3 scales actions by the demonstrations' range (ResFiT's ActionScaler): "
                              "set algorithm.offline_episodes >= 1")  # fmt: skip


@PolicyAlgorithmConfig.register("dppo")
@dataclass(frozen=True)
class DPPOConfig(DPPOTuning, PPOConfig):
    """``dppo``: PPO over the denoising steps of a diffusion policy behaviour-cloned first (DPPO's own terms from
    :class:`~zoo.engines.policy.dppo_settings.DPPOTuning`)."""

    method: str = "dppo"
    critic_lr: float = 1e-3
    """The critic's own learning rate (DPPO's ``critic_lr``, irom-princeton/dppo@cc7234a:
    cfg/robomimic/finetune/can/ft_ppo_diffusion_mlp.yaml:61; 0: ``training.lr``)."""
    critic_warmup: int = 2
    """Iterations that update the critic only (DPPO's ``n_critic_warmup_itr``, ft_ppo_diffusion_mlp.yaml:52)."""
    offline_episodes: int = field(kw_only=True)
    """Scripted demonstration episodes the diffusion policy is behaviour-cloned on before RL."""
    denoising_steps: int = 20
    """DDPM steps K of the chain."""
    ft_denoising_steps: int = 10
    """The last K' steps that are fine-tuned (DPPO: 10 of 20)."""
    action_chunk: int = 4
    """Actions per chunk, all executed (DPPO's horizon_steps = act_steps)."""
    bc_steps: int = 3000
    """Behaviour-cloning steps on ``offline_episodes`` demonstrations before RL."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.critic_lr < 0:
            raise RecipeError(f"algorithm.critic_lr={self.critic_lr} must be >= 0")
        if not 1 <= self.ft_denoising_steps <= self.denoising_steps or self.action_chunk < 1 or self.bc_steps < 0:
            raise RecipeError(f"algorithm: need 1 <= ft_denoising_steps ({self.ft_denoising_steps}) <= denoising_steps "
                              f"({self.denoising_steps}), action_chunk >= 1 and bc_steps >= 0")  # fmt: skip
        if self.offline_episodes < 1:
            raise RecipeError("dppo behaviour-clones scripted demonstrations first: "
                              "set algorithm.offline_episodes >= 1")  # fmt: skip

    def settings(self, lr: float) -> DPPOSettings:
        """The trainer's settings: DPPO's own terms as set here, the shared ones under the trainer's names."""
        own = {f.name: getattr(self, f.name) for f in fields(DPPOTuning)}
        return DPPOSettings(ft_steps=self.ft_denoising_steps, n_steps=self.rollout_steps, gamma=self.gamma,
                            epochs=self.epochs, batch_size=self.batch_size, actor_lr=lr, critic_lr=self.critic_lr or lr,
                            **own)  # fmt: skip
