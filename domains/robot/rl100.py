"""RL-100 (Lei et al. 2025, arXiv 2510.14830, ``Lei-Kun/RL-100``): online PPO over a diffusion policy's denoising steps.

Where its maths differ from DPPO's (:mod:`zoo.rl.dppo`), as in ``RL-100/rl_100/unidpg/uni_ppo.py``
(commit 34204a7; ``compute_gae_per_env`` and ``dp_align_update_no_share``) with the configs'
``gamma 0.99``, ``ppo.lamda 0.95``, ``ppo.epsilon 0.2``, ``ppo.use_adv_norm true``
(``RL-100/rl_100/config/rl100_2d_flow.yaml``, commit 38513b2):

* **advantages** per environment over chunk steps, discounted by ``gamma ** n_action_steps`` per
  chunk; the bootstrap is cut only by a true termination (``dws``), the recursion by any episode
  end (``dones``, truncations included) (:func:`chunk_gae`); then normalised once over the whole
  rollout with ``std + 1e-5`` (DPPO: per minibatch, ``1e-8``);
* **policy loss** per denoising step ``i``: with ``chunk_as_single_action``, one ratio per sample,
  ``exp`` of the *sum* over the executed actions and dimensions of ``log p_new - log p_old``
  (DPPO: the clamped per-element log-probs *averaged*), clipped at one ``epsilon`` for every
  denoising step (DPPO: interpolated from 1e-3), with no denoising discount (:func:`chunk_ratio_loss`).
  The authors take one optimiser step per denoising step of each minibatch.

Only these functions run here (checked against the authors' code in
``tests/domains/robot/test_seed_maths.py``); RL-100's policies (point-cloud and image diffusion
with consistency distillation), its offline stage (IQL critics, the OPE gate) and its real-robot
environments do not.
"""

from __future__ import annotations

import torch

ADVANTAGE_EPS = 1e-5  # uni_ppo.py, dp_align_update_no_share: (adv - mean) / (std + 1e-5)


def chunk_gae(rewards: torch.Tensor, dones: torch.Tensor, terminations: torch.Tensor, values: torch.Tensor,
              next_values: torch.Tensor, gamma: float, lam: float,
              n_action_steps: int = 1) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """GAE per environment over chunk steps: advantages and value targets, each ``(steps * n_envs, 1)``.

    Args:
        rewards, dones, terminations, values, next_values: ``(steps, n_envs, 1)``; ``dones`` any end
            of an episode, ``terminations`` only true ones (not time limits); ``next_values`` V(s').
        gamma: discount per environment step; a chunk step discounts by ``gamma ** n_action_steps``.
        lam: GAE lambda.
    """
    discount = gamma**n_action_steps
    deltas = rewards + discount * (1.0 - terminations) * next_values - values
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        running = deltas[t] + discount * lam * running * (1.0 - dones[t])
        advantages[t] = running
    return advantages.reshape(-1, 1), (advantages + values).reshape(-1, 1)


def normalize_advantages(advantages: torch.Tensor) -> torch.Tensor:
    """Once over the whole rollout, before the epochs (``use_adv_norm``)."""
    return (advantages - advantages.mean()) / (advantages.std() + ADVANTAGE_EPS)


def chunk_ratio_loss(new_log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor,
                     epsilon: float = 0.2) -> torch.Tensor:  # fmt: skip
    """RL-100's clipped loss for one denoising step, one ratio per chunk.

    Args:
        new_log_prob, old_log_prob: per-element log-probs ``(B, Ta, Da)`` of the executed actions.
        advantages: ``(B,)``, already normalised (:func:`normalize_advantages`).
        epsilon: the PPO clip (``ppo.epsilon``).
    """
    ratio = (new_log_prob.flatten(1).sum(dim=1) - old_log_prob.flatten(1).sum(dim=1)).exp()
    return -torch.min(ratio * advantages, ratio.clamp(1 - epsilon, 1 + epsilon) * advantages).mean()
