"""The settings of the driving domain's policy method ``carl-ppo``: the ``algorithm`` block it reads, registered
under its name.

They sit apart from the method's training code (:mod:`domains.driving.carl`) so that reading a recipe imports this
module alone (``Domain.methods`` names it): a dataclass that checks its own numbers, and no torch, gymnasium or
highway-env.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from zoo.engines.policy.recipe import PolicyAlgorithmConfig, SB3PPOConfig
from zoo.recipe import RecipeError


@PolicyAlgorithmConfig.register("carl-ppo")
@dataclass(frozen=True)
class CarlPPOConfig(SB3PPOConfig):
    """``carl-ppo``: the PPO settings it shares with ``resip-ppo``, the two in which CaRL's CARLA run and its nuPlan
    configuration differ beyond batch and epochs, and the value clip both use; the terms both share are fixed in
    :func:`~domains.driving.carl_policy.carl_ppo`."""

    method: str = "carl-ppo"
    ent_coef: float = 0.01
    """Entropy bonus weight (CaRL's CARLA run 0.01, ``train_carl_py.sh:17``; its nuPlan configuration 0.0,
    ``default_gym.yaml:52``)."""
    clip_vloss: bool = True
    """Clip the value loss as both CaRL runs do (``--clip_vloss 1``, ``train_carl_py.sh:17``; ``clip_vloss: True``,
    ``default_gym.yaml:51``; :func:`~domains.driving.carl_policy.carl_ppo_loss`); ``false`` trains it unclipped."""
    lr_schedule: Literal["constant", "linear"] = "constant"
    """``linear``: ``training.lr`` decays linearly over ``training.steps`` iterations, as both CaRL runs do
    (:class:`~domains.driving.carl_policy.IterationLinearDecay`); ``constant`` keeps it."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ent_coef < 0:
            raise RecipeError(f"algorithm.ent_coef={self.ent_coef} must be >= 0")
