"""The maths of DiWA, RL-100 and SERL where they differ from DPPO's, against the authors' functions ported here.

Sources (each port names its lines): DiWA ``acl21/diwa`` (``diwa/wm/wrapper/visionwm_cls.py`` at 1a721cd,
``diwa/agent/finetune/train_mb_ppo_diffusion_agent_visionwm.py`` at 4cd50d5); RL-100 ``Lei-Kun/RL-100``
(``RL-100/rl_100/unidpg/uni_ppo.py`` at 34204a7); SERL ``rail-berkeley/serl`` (``serl_launcher/serl_launcher/
agents/continuous/sac.py`` and ``networks/lagrange.py`` at cd5f7e7, JAX, ported to NumPy).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from domains.robot import diwa, rl100, serl
from zoo.rl.dppo import dppo_policy_loss

# --- DiWA -------------------------------------------------------------------------------------------------------


def authors_diwa_chunk(logits: torch.Tensor, wm_step_counter: np.ndarray, act_steps: int, max_episode_steps: int):
    """``VisionWMWrapper.multi_step`` (reward) and the rollout loop of ``TrainMBPPODiffusionAgent.run``."""
    reward = logits.argmax(dim=1)  # multi_step: reward = self.rewcls(latent); reward = reward.argmax(dim=1)
    reward_venv = reward.cpu().numpy()
    wm_step_counter = wm_step_counter.copy()
    wm_step_counter += act_steps
    truncated_venv = wm_step_counter >= max_episode_steps
    terminated = np.zeros_like(reward_venv)  # get_terminated_from_reward
    terminated[reward_venv > 0] = 1
    terminated_venv = terminated.astype(bool)
    done_venv = terminated_venv | truncated_venv
    if sum(done_venv) > 0:
        wm_step_counter[done_venv.astype(bool)] = 0
    return reward_venv, terminated_venv, truncated_venv, wm_step_counter


def test_diwa_reward_termination_and_time_limit_match_the_authors():
    generator = torch.Generator().manual_seed(0)
    ours_counter = theirs_counter = np.zeros(6, dtype=int)
    ended = 0
    for _ in range(12):  # chunks of 4 steps against a 20-step limit: every way an imagined episode ends
        logits = torch.randn(6, 2, generator=generator) + torch.tensor([1.2, 0.0])
        ours = diwa.imagined_chunk_step(logits, ours_counter, act_steps=4, max_episode_steps=20)
        theirs = authors_diwa_chunk(logits, theirs_counter, act_steps=4, max_episode_steps=20)
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(a, b)
        ours_counter, theirs_counter = ours[3], theirs[3]
        ended += int(ours[1].sum() + ours[2].sum())
        assert set(ours[0].tolist()) <= {0, 1}
    assert ended > 0 and (ours_counter < 20).all()


# --- RL-100 -----------------------------------------------------------------------------------------------------


def authors_compute_gae_per_env(rewards, dones, dws, vs, vs_, gamma, lamda, n_action_steps=1):
    """``uni_ppo.py: compute_gae_per_env``, verbatim."""
    steps, env_num = rewards.shape[0], rewards.shape[1]
    gamma_eff = gamma**n_action_steps
    deltas = rewards + gamma_eff * (1.0 - dws) * vs_ - vs
    adv = torch.zeros_like(rewards)
    gae = torch.zeros(env_num, 1, device=rewards.device)
    for t in reversed(range(steps)):
        gae = deltas[t] + gamma_eff * lamda * gae * (1.0 - dones[t])
        adv[t] = gae
    v_target = adv + vs
    return adv.reshape(-1, 1), v_target.reshape(-1, 1)


def authors_rl100_chunk_loss(a_logprob_now, a_logprob_old_i, adv, index, epsilon, action_start, action_end):
    """``uni_ppo.py: dp_align_update_no_share``, the ``chunk_as_single_action`` branch for one denoising step."""
    logprob_now_chunk = a_logprob_now[:, action_start:action_end]
    logprob_old_chunk = a_logprob_old_i[:, action_start:action_end]
    logprob_now_scalar = logprob_now_chunk.reshape(logprob_now_chunk.shape[0], -1).sum(dim=1)
    logprob_old_scalar = logprob_old_chunk.reshape(logprob_old_chunk.shape[0], -1).sum(dim=1)
    ratios = torch.exp(logprob_now_scalar - logprob_old_scalar)
    adv_chunk = adv[index].reshape(-1)
    surr1 = ratios * adv_chunk
    surr2 = torch.clamp(ratios, 1 - epsilon, 1 + epsilon) * adv_chunk
    actor_loss = -torch.min(surr1, surr2)
    return actor_loss.mean()


def test_rl100_gae_matches_the_authors_and_cuts_bootstrap_and_recursion_separately():
    generator = torch.Generator().manual_seed(1)
    shape = (9, 3, 1)
    rewards, values, next_values = (torch.randn(shape, generator=generator) for _ in range(3))
    terminations = (torch.rand(shape, generator=generator) < 0.15).float()
    dones = torch.maximum(terminations, (torch.rand(shape, generator=generator) < 0.15).float())  # + time limits
    assert (dones > terminations).any(), "a truncation must bootstrap but stop the recursion"
    ours = rl100.chunk_gae(rewards, dones, terminations, values, next_values, 0.99, 0.95, n_action_steps=4)
    theirs = authors_compute_gae_per_env(rewards, dones, terminations, values, next_values, 0.99, 0.95, 4)
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b)


def test_rl100_chunk_loss_matches_the_authors_and_is_not_dppos():
    generator = torch.Generator().manual_seed(2)
    batch, horizon, dim = 16, 4, 3
    old = torch.randn(batch, horizon, dim, generator=generator) - 1
    new = old + 0.05 * torch.randn(batch, horizon, dim, generator=generator)  # ratios of the sum straddle the clip
    raw = torch.randn(batch, 1, generator=generator)
    adv = rl100.normalize_advantages(raw)  # the authors': ((adv - adv.mean()) / (adv.std() + 1e-5)), once per rollout
    torch.testing.assert_close(adv, (raw - raw.mean()) / (raw.std() + 1e-5))
    index = torch.arange(batch)
    ours = rl100.chunk_ratio_loss(new, old, adv[index].reshape(-1), epsilon=0.2)
    theirs = authors_rl100_chunk_loss(new, old, adv, index, 0.2, 0, horizon)
    torch.testing.assert_close(ours, theirs)
    ratio = (new.flatten(1).sum(1) - old.flatten(1).sum(1)).exp()
    assert ((ratio - 1).abs() > 0.2).any() and ((ratio - 1).abs() < 0.2).any(), "the case must clip some ratios"
    dppo, _ = dppo_policy_loss(new, old, adv.reshape(-1), torch.full((batch,), 9), ft_steps=10, reward_horizon=horizon)
    assert not torch.isclose(ours, dppo)


# --- SERL -------------------------------------------------------------------------------------------------------


def authors_serl_losses(rewards, masks, target_next_qs, next_actions_log_probs, predicted_qs, policy_qs, log_probs,
                        lagrange, *, discount, temperature, backup_entropy, subsample_idcs, target_entropy):  # fmt: skip
    """``sac.py: critic_loss_fn`` (lines 134-191), ``policy_loss_fn`` (193-221), ``temperature_loss_fn``
    (223-234) and ``lagrange.py: LagrangeMultiplier`` (``geq``, softplus; 9-79), in NumPy."""
    critic_ensemble_size = predicted_qs.shape[0]
    if subsample_idcs is not None:
        target_next_qs = target_next_qs[subsample_idcs]
    target_next_min_q = target_next_qs.min(axis=0)
    target_q = rewards + discount * masks * target_next_min_q
    if backup_entropy:
        target_q = target_q - temperature * next_actions_log_probs
    target_qs = np.repeat(target_q[None], critic_ensemble_size, axis=0)
    critic = np.mean((predicted_qs - target_qs) ** 2)
    actor_objective = policy_qs.mean(axis=0) - temperature * log_probs
    actor = -np.mean(actor_objective)
    entropy = -next_actions_log_probs.mean()
    multiplier = np.logaddexp(0.0, lagrange)  # nn.softplus
    temperature_loss = multiplier * (entropy - target_entropy)
    return critic, actor, temperature_loss


@pytest.mark.parametrize("backup_entropy", [False, True])
def test_serl_losses_match_the_authors(backup_entropy):
    rng = np.random.default_rng(3)
    k, batch = 10, 32
    rewards, masks = rng.normal(size=batch), (rng.random(batch) > 0.2).astype(np.float64)
    target_next_qs, predicted_qs, policy_qs = (rng.normal(size=(k, batch)) for _ in range(3))
    next_log_probs, log_probs = rng.normal(size=batch), rng.normal(size=batch)
    subsample, lagrange, temperature = np.array([3, 7]), 0.3, 0.01
    target_entropy = serl.default_target_entropy(7)
    assert target_entropy == -3.5
    theirs = authors_serl_losses(rewards, masks, target_next_qs, next_log_probs, predicted_qs, policy_qs, log_probs,
                                 lagrange, discount=0.96, temperature=temperature, backup_entropy=backup_entropy,
                                 subsample_idcs=subsample, target_entropy=target_entropy)  # fmt: skip
    t = torch.from_numpy
    target = serl.critic_target(t(rewards), t(masks), t(target_next_qs), t(next_log_probs), discount=0.96,
                                temperature=temperature, backup_entropy=backup_entropy, subsample=t(subsample))  # fmt: skip
    ours = (serl.critic_loss(t(predicted_qs), target), serl.actor_loss(t(policy_qs), t(log_probs), temperature),
            serl.temperature_loss(torch.tensor(lagrange, dtype=torch.float64), t(next_log_probs), target_entropy))  # fmt: skip
    for a, b in zip(ours, theirs, strict=True):
        assert a.item() == pytest.approx(b, rel=1e-12)
    # the entropy backup is subtracted outside the discount and the mask: a masked (terminal) sample keeps it
    terminal = int(np.flatnonzero(masks == 0)[0])
    expected = rewards[terminal] - (temperature * next_log_probs[terminal] if backup_entropy else 0.0)
    assert target[terminal].item() == pytest.approx(expected)
