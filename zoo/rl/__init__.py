"""RL maths: advantage estimators, policy losses, loss aggregation, KL, batch filtering, UI-S1,
diffusion policy steps and their loss.

Pure tensor functions, each checked number for number against verl 0.9.1, TRL 1.x or the
authors' code (``tests/rl/``). Nothing here looks a name up: :mod:`zoo.algorithms` gives estimators
and losses the names a recipe uses.
"""

from zoo.rl.advantages import (
    grpo,
    masked_whiten,
    outcome_to_token_rewards,
    reinforce_plus_plus,
    reinforce_plus_plus_baseline,
    rloo,
    to_token_level,
)
from zoo.rl.batching import (
    GroupFilter,
    GroupTopUp,
    TopUpExhausted,
    dynamic_sampling_keep,
    failed,
    mask_failed,
    rewards_tensor,
)
from zoo.rl.diffusion_loss import PerPromptStatTracker, mean_kl, step_policy_loss
from zoo.rl.diffusion_steps import (
    StepOutput,
    dance_sde_step,
    ddim_step_with_logprob,
    flow_cps_step,
    flow_sde_step,
    flow_sde_step_scheduler,
    lcm_step_with_logprob,
)
from zoo.rl.losses import (
    AGG_MODES,
    TRL_LOSS_TYPES,
    aggregate,
    clipped_surrogate,
    gspo_loss,
    kl_penalty,
    sequence_log_ratio,
    trl_aggregate,
)
from zoo.rl.semi_online import (
    PatchPlan,
    episode_advantage,
    future_reward_filter,
    patch_plan,
    step_advantage,
    step_discounted_returns,
    ui_s1,
)

__all__ = [
    "AGG_MODES",
    "TRL_LOSS_TYPES",
    "GroupFilter",
    "GroupTopUp",
    "PatchPlan",
    "PerPromptStatTracker",
    "StepOutput",
    "TopUpExhausted",
    "aggregate",
    "clipped_surrogate",
    "dance_sde_step",
    "ddim_step_with_logprob",
    "dynamic_sampling_keep",
    "episode_advantage",
    "failed",
    "flow_cps_step",
    "flow_sde_step",
    "flow_sde_step_scheduler",
    "future_reward_filter",
    "grpo",
    "gspo_loss",
    "kl_penalty",
    "lcm_step_with_logprob",
    "mask_failed",
    "masked_whiten",
    "mean_kl",
    "outcome_to_token_rewards",
    "patch_plan",
    "reinforce_plus_plus",
    "reinforce_plus_plus_baseline",
    "rewards_tensor",
    "rloo",
    "sequence_log_ratio",
    "step_advantage",
    "step_discounted_returns",
    "step_policy_loss",
    "to_token_level",
    "trl_aggregate",
    "ui_s1",
]

