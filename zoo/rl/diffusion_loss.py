"""Diffusion RL objectives: per-prompt reward normalisation, the per-step clipped loss, KL on the mean.

The step log-probabilities come from :mod:`zoo.rl.diffusion_steps`. Every method the diffusion
engine runs (DDPO, Flow-GRPO, DanceGRPO, RLCM, TreeGRPO, Adv-GRPO) trains each denoising step as
one PPO "token": advantages are per image (or per tree node), the ratio is per step.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Sequence

import numpy as np
import torch

from zoo.rl.losses import clipped_surrogate


class PerPromptStatTracker:
    """Normalises rewards per prompt: ``A = (r - mean_prompt) / (std + eps)`` over that prompt's history.

    One class covers both reference trackers (population std, ``ddof=0``, as numpy):

    * DDPO (kvablack/ddpo-pytorch ``ddpo_pytorch/stat_tracking.py``): ``buffer_size=16, min_count=16,
      eps=1e-6``; a prompt's last ``buffer_size`` rewards form its statistics and, until it has
      ``min_count`` of them, the whole batch's mean and std are used instead.
    * Flow-GRPO (yifan123/flow_grpo ``flow_grpo/stat_tracking.py``): ``buffer_size=None, min_count=0,
      eps=1e-4, global_std=True``; the statistics are everything seen since :meth:`clear` (the trainer
      clears after every epoch, so they are the current group), and with ``global_std`` the std is
      the batch's, not the prompt's.

    Rewards are cast to float64 first. (DDPO's tracker allocates its output with the rewards' dtype,
    so integer rewards there give advantages truncated to integers; this class does not.)
    """

    def __init__(self, buffer_size: int | None = None, min_count: int = 0, *, global_std: bool = False,
                 eps: float = 1e-4) -> None:  # fmt: skip
        if buffer_size is not None and buffer_size < 1:
            raise ValueError(f"buffer_size must be >= 1 or None (unbounded), got {buffer_size}")
        self.buffer_size = buffer_size
        self.min_count = min_count
        self.global_std = global_std
        self.eps = eps
        self.stats: dict[Hashable, deque[float]] = {}

    def update(self, prompts: Sequence[Hashable], rewards: Sequence[float] | np.ndarray | torch.Tensor) -> np.ndarray:
        """Add this batch's rewards to each prompt's history and return their (N,) float64 advantages."""
        rewards = np.asarray(torch.as_tensor(rewards).cpu() if torch.is_tensor(rewards) else rewards, dtype=np.float64)
        if rewards.ndim != 1 or len(prompts) != len(rewards):
            raise ValueError(
                f"need one reward per prompt: got {len(prompts)} prompts and rewards of shape {rewards.shape}"
            )
        keys = np.empty(len(prompts), dtype=object)
        keys[:] = list(prompts)
        advantages = np.zeros_like(rewards)
        for prompt in dict.fromkeys(prompts):
            here = keys == prompt
            history = self.stats.setdefault(prompt, deque(maxlen=self.buffer_size))
            history.extend(rewards[here].tolist())
            if len(history) < self.min_count:
                mean, std = rewards.mean(), rewards.std()
            else:
                mean = np.mean(history)
                std = rewards.std() if self.global_std else np.std(history)
            advantages[here] = (rewards[here] - mean) / (std + self.eps)
        return advantages

    def clear(self) -> None:
        """Forget all history (Flow-GRPO clears after every epoch)."""
        self.stats = {}

    def state_dict(self) -> dict[str, list[float]]:
        """The per-prompt histories (prompt keys as strings), for exact resume."""
        return {str(k): list(v) for k, v in self.stats.items()}

    def load_state_dict(self, state: dict[str, list[float]]) -> None:
        """Restore :meth:`state_dict` (string prompts, as the trainer keys them)."""
        self.stats = {k: deque(v, maxlen=self.buffer_size) for k, v in state.items()}


def step_policy_loss(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    *,
    clip_range: float,
    adv_clip_max: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The per-step PPO loss of DDPO / Flow-GRPO / DanceGRPO: ``mean_b max(-A r, -A clip(r, 1±eps))``.

    ``A = clamp(advantages, ±adv_clip_max)``, ``r = exp(log_prob - old_log_prob)``. Log-probs may be
    (B,) for one step, as the authors call it once per timestep, or (B, T) for T steps, which is the
    mean of the T per-step losses (what gradient accumulation over T steps sums to). It is
    :func:`zoo.rl.losses.clipped_surrogate` with a full mask and ``token-mean``; that function clamps
    ``log r`` to [-20, 20] before ``exp``, which the authors do not (only a ratio beyond e^20 differs).
    References: ddpo-pytorch ``scripts/train.py``, flow_grpo ``scripts/train_sd3.py``, DanceGRPO
    ``fastvideo/train_grpo_flux.py`` (clip ranges 1e-4, ``adv_clip_max`` 5; RLCM 1e-4 and 10).

    Returns:
        ``(loss, stats)``: the authors' metrics ``clipfrac`` (share of steps with ``|r - 1| > eps``) and
        ``approx_kl`` (``mean((log r)^2) / 2``), and the mean ``ratio``.
    """
    if log_prob.shape != old_log_prob.shape:
        raise ValueError(f"log_prob {tuple(log_prob.shape)} and old_log_prob {tuple(old_log_prob.shape)} differ")
    logp = log_prob if log_prob.ndim == 2 else log_prob.reshape(-1, 1)
    old = old_log_prob.reshape(logp.shape)
    adv = torch.clamp(advantages.float(), -adv_clip_max, adv_clip_max).reshape(logp.shape[0], -1).expand_as(logp)
    loss, _ = clipped_surrogate(logp, old, adv, torch.ones_like(logp), clip_low=clip_range,
                                    clip_high=clip_range, agg="token-mean")  # fmt: skip
    log_ratio = (logp - old).detach()
    clipfrac = ((log_ratio.exp() - 1).abs() > clip_range).float().mean()
    return loss, {"clipfrac": clipfrac, "approx_kl": 0.5 * (log_ratio**2).mean(), "ratio": log_ratio.exp().mean()}


def mean_kl(
    prev_sample_mean: torch.Tensor, ref_prev_sample_mean: torch.Tensor, std_dev_t: torch.Tensor
) -> torch.Tensor:
    """Flow-GRPO's KL to the reference policy on one step: ``mean_b(mean_chw((mu - mu_ref)^2) / (2 std_dev_t^2))``.

    The KL of two Gaussians with the same std, averaged over elements like the log-probs. The
    divisor is the ``std_dev_t`` :func:`~zoo.rl.diffusion_steps.flow_sde_step` reports, *without*
    ``sqrt(-dt)``, as in flow_grpo ``scripts/train_sd3.py`` (its issue #22: this up-weights late steps).
    Args: means (B, ...), ``std_dev_t`` (B, 1, ...) or broadcastable. Returns a 0-d tensor.
    """
    dims = tuple(range(1, prev_sample_mean.ndim))
    per_sample = ((prev_sample_mean - ref_prev_sample_mean) ** 2).mean(dim=dims, keepdim=True) / (2 * std_dev_t**2)
    return per_sample.mean()


def nonzero_advantage_mask(advantages: torch.Tensor) -> torch.Tensor:
    """(N,) bool: the samples Flow-GRPO keeps for training, ``sum_t |A[n, t]| != 0``.

    ``advantages`` is (N,) or (N, T) (per trained step). A group whose rewards all tie gets
    ``A = 0`` from the per-prompt tracker and so carries no policy gradient; Flow-GRPO drops those
    samples before the PPO epochs (yifan123/flow_grpo ``scripts/train_sd3.py`` @ ac4c86e, "Filter out
    samples where the entire time dimension of advantages is zero"). The authors then re-admit random
    dropped samples until the count divides their number of micro-batches; the zoo's micro-batches
    may be ragged, so it does not. The test is exact (``!= 0``), as theirs: ties whose float mean is
    not exactly the tied value leave ``|A| ~ 1e-12`` and are kept, as there.
    """
    adv = advantages.reshape(advantages.shape[0], -1)
    return adv.abs().sum(dim=1) != 0


def zero_std_ratio(prompts: Sequence[Hashable], rewards: Sequence[float] | np.ndarray | torch.Tensor) -> float:
    """Share of distinct prompts whose rewards have population std exactly 0 (Flow-GRPO's
    ``calculate_zero_std_ratio`` metric: how many groups carry no signal). NaN rewards are ignored."""
    values = np.asarray(torch.as_tensor(rewards, dtype=torch.float64).cpu(), dtype=np.float64)
    if len(prompts) != len(values):
        raise ValueError(f"need one reward per prompt: got {len(prompts)} prompts and {len(values)} rewards")
    groups: dict[Hashable, list[float]] = {}
    for prompt, value in zip(prompts, values, strict=True):
        if not np.isnan(value):
            groups.setdefault(prompt, []).append(float(value))
    if not groups:
        return 0.0
    return sum(np.std(v) == 0 for v in groups.values()) / len(groups)
