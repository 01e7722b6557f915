"""DiWA (Chandra et al. 2025, ``acl21/diwa``): DPPO fine-tuning inside a frozen world model.

DiWA's policy update is DPPO's: its ``diwa/model/diffusion/diffusion_ppo.py`` (commit 080a4a5) is
DPPO's ``PPODiffusion.loss`` line for line (clamped log-probs averaged over the executed steps,
denoising discount, clip interpolated from ``clip_ploss_coef_base``), which :mod:`zoo.rl.dppo` holds
and ``tests/rl/test_dppo.py`` checks against DPPO's numbers. What DiWA changes is where a step's
reward, end and time limit come from, since the rollout happens in the world model's latent space
(``diwa/agent/finetune/train_mb_ppo_diffusion_agent_visionwm.py`` at commit 4cd50d5, ``run`` and
``get_terminated_from_reward``; ``diwa/wm/wrapper/visionwm_cls.py`` at commit 1a721cd, ``multi_step``):

* the world model steps through the ``act_steps`` executed actions of a chunk, then a learned
  success classifier reads the final latent: the reward is the classifier's **argmax class**
  (0 or 1), given once per chunk;
* a reward above 0 **terminates** the imagined episode;
* a step counter grows by ``act_steps`` per chunk and **truncates** the episode at the
  environment's ``max_episode_steps``; an ended episode restarts from a reset observation with
  its counter at 0.

Only this bookkeeping runs here (:func:`imagined_chunk_step`, checked against the authors' code in
``tests/domains/robot/test_seed_maths.py``); the world model (LUMOS), the reward classifier and
CALVIN/LIBERO do not.
"""

from __future__ import annotations

import numpy as np
import torch


def imagined_chunk_step(classifier_logits: torch.Tensor, step_counter: np.ndarray, act_steps: int,
                        max_episode_steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """DiWA's reward, termination and time limit for one imagined chunk of ``act_steps`` actions.

    Args:
        classifier_logits: ``(n_envs, n_classes)`` of the reward classifier on the chunk's final latent.
        step_counter: ``(n_envs,)`` imagined environment steps of each episode so far.
        act_steps: actions executed per chunk.
        max_episode_steps: the environment's time limit.

    Returns:
        ``reward`` (argmax class), ``terminated`` (reward > 0), ``truncated`` (counter reached the
        limit) and the counters after the chunk, reset to 0 where the episode ended.
    """
    reward = classifier_logits.argmax(dim=1).cpu().numpy()
    counter = np.asarray(step_counter) + act_steps
    terminated = reward > 0
    truncated = counter >= max_episode_steps
    counter = np.where(terminated | truncated, 0, counter)
    return reward, terminated, truncated, counter
