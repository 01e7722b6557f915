"""One denoising step as a Gaussian policy: the next latent, its log-probability, mean and std.

Diffusion RL (DDPO, Flow-GRPO, DanceGRPO, RLCM) treats each sampler step ``x_t -> x_{t-1}`` as
an action drawn from ``N(mean_theta(x_t, t), std_t^2 I)``; the PPO ratio of a step is
``exp(log_prob_new - log_prob_old)`` of the *stored* next latent under the current model.
Every function here returns a :class:`StepOutput` and follows its authors' reduction: the
per-element Gaussian log-density is **averaged** (not summed) over all non-batch dims (C, H, W).

Shapes: ``sample``, ``model_output``, ``prev_sample`` are (B, C, H, W) (any trailing dims);
per-sample scalars (``sigma``, ``timestep``) are (B,) or 0-d and broadcast over the rest.
Computation is in float32 (the authors cast first: bf16 overflows the mean in Flow-GRPO).

Passing ``prev_sample`` scores a stored step (training); leaving it ``None`` draws one with
``generator`` (rollout). A zero std (``noise_level=0``, ``eta=0``: the deterministic ODE / DDIM
step) gives the exact mean as ``prev_sample`` and an undefined (NaN) log-probability, as in the
authors' code; such steps are only for evaluation.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import torch

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


class StepOutput(NamedTuple):
    """What a policy step returns (the authors' return order, plus the std they use for KL).

    Attributes:
        prev_sample: (B, ...) the next latent (drawn, or the one passed in).
        log_prob: (B,) mean over non-batch dims of the Gaussian log-density of ``prev_sample``.
        prev_sample_mean: (B, ...) the policy mean (differentiable; the KL to a reference uses it).
        std_dev_t: (B, 1, ...) the std the method reports: Flow-GRPO's ``std_dev_t`` *without*
            the ``sqrt(-dt)`` factor (the divisor of its KL term); the sampling std elsewhere.
    """

    prev_sample: torch.Tensor
    log_prob: torch.Tensor
    prev_sample_mean: torch.Tensor
    std_dev_t: torch.Tensor


def gaussian_log_prob(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """``log N(x; mean, std^2)`` per element, averaged over all non-batch dims -> (B,).

    ``x`` is detached: the ratio's gradient flows through the mean only, as in every reference.
    """
    log_prob = -((x.detach() - mean) ** 2) / (2 * std**2) - torch.log(std) - _LOG_SQRT_2PI
    return log_prob.mean(dim=tuple(range(1, log_prob.ndim)))


def _per_sample(value: torch.Tensor | float, like: torch.Tensor) -> torch.Tensor:
    """A (B,) or 0-d per-sample scalar as float32 shaped (B or 1, 1, ..., 1) to broadcast on ``like``."""
    value = torch.as_tensor(value, dtype=torch.float32, device=like.device)
    if value.ndim > 1:
        raise ValueError(f"a per-sample scalar must be 0-d or (B,), got shape {tuple(value.shape)}")
    return value.reshape(-1, *([1] * (like.ndim - 1)))


def _draw(mean: torch.Tensor, std: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """``mean + std * eps``; eps is drawn on the generator's device and moved (diffusers' ``randn_tensor`` rule)."""
    device = generator.device if generator is not None else mean.device
    noise = torch.randn(mean.shape, generator=generator, device=device, dtype=mean.dtype).to(mean.device)
    return mean + std * noise


def flow_sde_step(
    model_output: torch.Tensor,
    sample: torch.Tensor,
    sigma: torch.Tensor | float,
    sigma_prev: torch.Tensor | float,
    *,
    sigma_max: float,
    noise_level: float = 0.7,
    prev_sample: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> StepOutput:
    """Flow-GRPO's reverse-SDE step of a rectified-flow model (Liu et al., arXiv 2505.05470, eq. 9).

    With velocity ``v``, ``dt = sigma_prev - sigma`` (< 0) and ``a = noise_level``::

        std_dev_t = a * sqrt(sigma / (1 - sigma'))        sigma' = sigma_max where sigma == 1
        mean      = x (1 + std_dev_t^2 dt / (2 sigma)) + v (1 + std_dev_t^2 (1 - sigma) / (2 sigma)) dt
        x_prev   ~ N(mean, (std_dev_t sqrt(-dt))^2)

    ``sigma_max`` replaces ``sigma`` in the denominator at ``sigma == 1`` (the first step of a
    schedule without shift) so the std stays finite; the authors pass ``scheduler.sigmas[1]``.
    Reference: yifan123/flow_grpo ``flow_grpo/diffusers_patch/sd3_sde_with_logprob.py::sde_step_with_logprob``;
    :func:`flow_sde_step_scheduler` is the same call on a diffusers scheduler and timesteps.

    Args:
        model_output, sample: (B, ...) velocity and current latent ``x`` at ``sigma``.
        sigma, sigma_prev: (B,) or 0-d noise levels of this step and the next (``sigma_prev < sigma``).
        sigma_max: the scheduler's second sigma (see above).
        noise_level: ``a``; 0 is the deterministic ODE step (evaluation only).
    """
    model_output, sample = model_output.float(), sample.float()
    sigma, sigma_prev = _per_sample(sigma, sample), _per_sample(sigma_prev, sample)
    dt = sigma_prev - sigma
    std_dev_t = torch.sqrt(sigma / (1 - torch.where(sigma == 1, torch.as_tensor(sigma_max), sigma))) * noise_level
    mean = (
        sample * (1 + std_dev_t**2 / (2 * sigma) * dt)
        + model_output * (1 + std_dev_t**2 * (1 - sigma) / (2 * sigma)) * dt
    )
    std = std_dev_t * torch.sqrt(-dt)
    prev_sample = _draw(mean, std, generator) if prev_sample is None else prev_sample.float()
    return StepOutput(prev_sample, gaussian_log_prob(prev_sample, mean, std), mean, std_dev_t)


def flow_cps_step(
    model_output: torch.Tensor,
    sample: torch.Tensor,
    sigma: torch.Tensor | float,
    sigma_prev: torch.Tensor | float,
    *,
    noise_level: float = 0.8,
    prev_sample: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> StepOutput:
    """Flow-CPS, the coefficient-preserving variant of the flow SDE step that Adv-GRPO samples with.

    With ``x0_hat = x - sigma v`` and ``x1_hat = x + (1 - sigma) v`` (predicted data and noise)::

        std  = sigma_prev * sin(a pi / 2)
        mean = (1 - sigma_prev) x0_hat + sqrt(sigma_prev^2 - std^2) x1_hat
        x_prev ~ N(mean, std^2)

    The noise and the kept ``x1_hat`` share ``sigma_prev`` in variance, so the next latent has the
    marginal scale of the schedule. Its ``log_prob`` is the authors' simplified one,
    ``-mean_chw((x_prev - mean)^2)``: every constant *and the 1/(2 std^2) factor* dropped, so it is
    not a normalised density (ratios of it are what the clipped loss uses).
    Reference: showlab/Adv-GRPO ``adv_grpo/diffusers_patch/sd3_sde_with_logprob.py::sde_step_with_logprob_new``.
    """
    model_output, sample = model_output.float(), sample.float()
    sigma, sigma_prev = _per_sample(sigma, sample), _per_sample(sigma_prev, sample)
    std = sigma_prev * math.sin(noise_level * math.pi / 2)
    x0_hat, x1_hat = sample - sigma * model_output, sample + model_output * (1 - sigma)
    mean = x0_hat * (1 - sigma_prev) + x1_hat * torch.sqrt(sigma_prev**2 - std**2)
    prev_sample = _draw(mean, std, generator) if prev_sample is None else prev_sample.float()
    log_prob = -((prev_sample.detach() - mean) ** 2)
    return StepOutput(prev_sample, log_prob.mean(dim=tuple(range(1, log_prob.ndim))), mean, std)


def flow_sde_step_scheduler(
    scheduler: Any,
    model_output: torch.Tensor,
    timestep: torch.Tensor,
    sample: torch.Tensor,
    noise_level: float = 0.7,
    prev_sample: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> StepOutput:
    """:func:`flow_sde_step` with the authors' signature: a ``FlowMatchEulerDiscreteScheduler``
    (after ``set_timesteps``) and its (B,) or 0-d ``timestep`` values instead of sigmas."""
    timesteps = torch.as_tensor(timestep).reshape(-1)
    index = torch.tensor([scheduler.index_for_timestep(t) for t in timesteps])
    sigmas = scheduler.sigmas.float()
    return flow_sde_step(model_output, sample, sigmas[index], sigmas[index + 1], sigma_max=sigmas[1].item(),
                         noise_level=noise_level, prev_sample=prev_sample, generator=generator)  # fmt: skip


def dance_sde_step(
    model_output: torch.Tensor,
    latents: torch.Tensor,
    eta: float,
    sigma: torch.Tensor | float,
    sigma_next: torch.Tensor | float,
    *,
    sde_solver: bool = True,
    prev_sample: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> StepOutput:
    """DanceGRPO's eta-SDE step (Xue et al., arXiv 2505.07818): noise ``eta * sqrt(sigma - sigma_next)``.

    With ``dsigma = sigma_next - sigma`` and ``x0_hat = x - sigma v``::

        mean = x + dsigma v  [+ dsigma * (-eta^2 / 2) * score],   score = -(x - x0_hat (1 - sigma)) / sigma^2
        x_next ~ N(mean, eta^2 (sigma - sigma_next))

    The bracketed score correction is applied when ``sde_solver`` (the authors' training default).
    Unlike Flow-GRPO the noise does not depend on sigma, only on the step size.
    Reference: XueZeyue/DanceGRPO ``fastvideo/train_grpo_flux.py::flux_step`` (``grpo=True``).
    """
    model_output, latents = model_output.float(), latents.float()
    sigma, sigma_next = _per_sample(sigma, latents), _per_sample(sigma_next, latents)
    dsigma = sigma_next - sigma
    mean = latents + dsigma * model_output
    if sde_solver:
        x0_hat = latents - sigma * model_output
        score = -(latents - x0_hat * (1 - sigma)) / sigma**2
        mean = mean + (-0.5 * eta**2 * score) * dsigma
    std = eta * torch.sqrt(sigma - sigma_next)
    prev_sample = _draw(mean, std, generator) if prev_sample is None else prev_sample.float()
    return StepOutput(prev_sample, gaussian_log_prob(prev_sample, mean, std), mean, std)


def _gather_alphas(table: torch.Tensor, index: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
    """``table[index]`` where ``index >= 0``, else ``fallback`` (the scheduler's final alpha)."""
    safe = index.clamp(min=0)
    return torch.where(index >= 0, table[safe], fallback.to(table.dtype))


def ddim_step_with_logprob(
    scheduler: Any,
    model_output: torch.Tensor,
    timestep: torch.Tensor | int,
    sample: torch.Tensor,
    eta: float = 0.0,
    prev_sample: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> StepOutput:
    """DDPO's DDIM step as a Gaussian policy (Black et al., arXiv 2305.13301; DDIM, Song et al. eq. 12, 16).

    For a ``DDIMScheduler`` after ``set_timesteps(T)``, ``t_prev = t - num_train_timesteps // T`` is
    **clamped into [0, num_train_timesteps - 1]** (the authors' guard against out-of-range gathers),
    so the last step uses ``alphas_cumprod[0]``; with ``steps_offset=0`` the last timestep is 0 and its
    variance is exactly 0 (log-prob not finite): configure ``steps_offset=1``, as SD's scheduler does.
    ``x0_hat`` follows ``prediction_type`` (epsilon / sample / v_prediction) and ``clip_sample``::

        var  = (1 - a_prev) / (1 - a_t) * (1 - a_t / a_prev);   std = eta * sqrt(var)
        mean = sqrt(a_prev) x0_hat + sqrt(1 - a_prev - std^2) eps_hat

    ``eta = 1`` is the DDPM posterior. Reference: kvablack/ddpo-pytorch
    ``ddpo_pytorch/diffusers_patch/ddim_with_logprob.py::ddim_step_with_logprob`` (without its
    ``thresholding`` and ``use_clipped_model_output`` options, which DDPO does not use).

    Args:
        timestep: (B,) or 0-d integer timesteps (``scheduler.timesteps`` values).
    """
    config = scheduler.config
    if scheduler.num_inference_steps is None:
        raise ValueError("the DDIM scheduler has no timesteps yet; call scheduler.set_timesteps(T) first")
    dtype = sample.dtype  # the authors return the next latent in the input's dtype (log-prob in float32)
    model_output, sample = model_output.float(), sample.float()
    t = torch.as_tensor(timestep, device="cpu").long().reshape(-1)
    t_prev = (t - config.num_train_timesteps // scheduler.num_inference_steps).clamp(0, config.num_train_timesteps - 1)
    alphas = scheduler.alphas_cumprod.float()
    a_t = _per_sample(alphas[t], sample)
    a_prev = _per_sample(_gather_alphas(alphas, t_prev, torch.as_tensor(scheduler.final_alpha_cumprod)), sample)
    x0_hat, eps_hat = _ddim_predictions(config.prediction_type, model_output, sample, a_t)
    if config.clip_sample:
        x0_hat = x0_hat.clamp(-config.clip_sample_range, config.clip_sample_range)
    variance = (1 - a_prev) / (1 - a_t) * (1 - a_t / a_prev)
    std = eta * variance**0.5
    mean = a_prev**0.5 * x0_hat + (1 - a_prev - std**2) ** 0.5 * eps_hat
    prev_sample = _draw(mean, std, generator) if prev_sample is None else prev_sample.float()
    return StepOutput(prev_sample.to(dtype), gaussian_log_prob(prev_sample, mean, std), mean, std)


def _ddim_predictions(
    prediction_type: str, model_output: torch.Tensor, sample: torch.Tensor, a_t: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x0_hat, eps_hat)`` from the model output, for each diffusers ``prediction_type``."""
    if prediction_type == "epsilon":
        return (sample - (1 - a_t) ** 0.5 * model_output) / a_t**0.5, model_output
    if prediction_type == "sample":
        return model_output, (sample - a_t**0.5 * model_output) / (1 - a_t) ** 0.5
    if prediction_type == "v_prediction":
        return a_t**0.5 * sample - (1 - a_t) ** 0.5 * model_output, a_t**0.5 * model_output + (1 - a_t) ** 0.5 * sample
    raise ValueError(f"prediction_type={prediction_type!r}: expected 'epsilon', 'sample' or 'v_prediction'")


def lcm_step_with_logprob(
    scheduler: Any,
    model_output: torch.Tensor,
    timestep: torch.Tensor | int,
    sample: torch.Tensor,
    prev_timestep: torch.Tensor | int,
    prev_sample: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> StepOutput:
    """RLCM's policy: one multistep consistency-model step (Oertell et al., arXiv 2404.03673).

    The consistency function ``f = c_skip x + c_out x0_hat`` (LCM's boundary scalings at ``t``,
    epsilon prediction) is re-noised to ``t_prev``; that re-noising is the stochastic action::

        x_prev ~ N(sqrt(a_prev) f, (1 - a_prev) I)

    so the policy's std is fixed by the schedule (no eta). The mean and noise scale are those of diffusers'
    ``LCMScheduler.step`` (the tests check a draw against it) and of RLCM's patched one, whose log-prob this is
    (Owen-Oertell/rlcm@b8330ed:lcm_rl_pytorch/diffusers_patch/lcm_scheduler.py:475-501). RLCM's last step
    re-noises too, to its own timestep (``prev_timestep = timestep``, L438-441), and is trained; the sampler
    passes that timestep (:meth:`zoo.engines.diffusion.sampling.Sampler.step`).

    Args:
        timestep, prev_timestep: (B,) or 0-d integer timesteps of this step and the next.
    """
    model_output, sample = model_output.float(), sample.float()
    t = torch.as_tensor(timestep, device="cpu").long().reshape(-1)
    t_prev = torch.as_tensor(prev_timestep, device="cpu").long().reshape(-1)
    alphas = scheduler.alphas_cumprod.float()
    a_t, a_prev = _per_sample(alphas[t], sample), _per_sample(alphas[t_prev], sample)
    c_skip, c_out = scheduler.get_scalings_for_boundary_condition_discrete(t)
    x0_hat = (sample - (1 - a_t) ** 0.5 * model_output) / a_t**0.5
    denoised = _per_sample(c_out.float(), sample) * x0_hat + _per_sample(c_skip.float(), sample) * sample
    mean = a_prev**0.5 * denoised
    std = (1 - a_prev) ** 0.5
    prev_sample = _draw(mean, std, generator) if prev_sample is None else prev_sample.float()
    return StepOutput(prev_sample, gaussian_log_prob(prev_sample, mean, std), mean, std.expand_as(a_t))


def classifier_free_guidance(
    uncond: torch.Tensor, cond: torch.Tensor, scale: float, *, detach_uncond: bool = False
) -> torch.Tensor:
    """``uncond + scale * (cond - uncond)``: the guided denoiser output whose step is the policy (Ho and
    Salimans, arXiv 2207.12598), used in sampling and in the re-scored step of training alike.

    ``detach_uncond`` stops the gradient through the null-prompt branch, so only the prompt branch is
    trained: flow_grpo ``scripts/train_sd3.py::compute_log_prob`` @ ac4c86e does this, ddpo-pytorch
    ``scripts/train.py`` does not. Shapes: (B, ...) both.
    """
    if uncond.shape != cond.shape:
        raise ValueError(f"guidance needs equal shapes, got {tuple(uncond.shape)} and {tuple(cond.shape)}")
    if detach_uncond:
        uncond = uncond.detach()
    return uncond + scale * (cond - uncond)
