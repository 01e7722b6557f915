"""The method table of the diffusion engine: one row per paper, no if/elif over method names elsewhere.

A row says which sampler family the method needs (flow matching, DDIM, LCM), which policy step
(:mod:`zoo.rl.diffusion_steps`) its stochastic steps use, how rewards become advantages, whether
rollouts are flat groups or trees, and the paper's values of the sampling and loss knobs
(:class:`StepSettings`) that a ``null`` recipe field takes. A row knows nothing of the recipe; the recipe reads
its row (:mod:`zoo.engines.diffusion.recipe`: the defaults in ``DiffusionAlgorithmConfig.settings``, the model
family in its checks), and each method's own fields and their checks are its config class there:

=============  ======  ================  =====  ====  ======  ========  ==========  =====================  ===  ======
method         family  step              noise  clip  A clip  fraction  shuffle     advantage              CFG  A = 0
=============  ======  ================  =====  ====  ======  ========  ==========  =====================  ===  ======
flow_grpo      flow    flow_sde_step     0.7    1e-4  5       0.99      first T'    per prompt, batch std  4.5  drop
dance_grpo     flow    dance_sde_step    0.3    1e-4  5       0.6       random T'   per group (unbiased)   1    keep
ddpo           ddim    ddim_step (eta)   1.0    1e-4  5       1.0       random      per prompt, buffer 16  5.0  keep
rlcm           lcm     lcm_step          -      1e-4  10      1.0       random      per prompt, buffer 32  1    keep
tree_grpo      flow    flow_sde_step     0.7    1e-4  5       1.0       branch      node values (zoo's)    4.5  keep
adv_grpo       flow    flow_cps_step     0.8    1e-5  5       0.99      first T'    per prompt, batch std  4.5  drop
=============  ======  ================  =====  ====  ======  ========  ==========  =====================  ===  ======

CFG is the guidance scale used in sampling and in the trained step (``guidance_scale``); with
guidance, Flow-GRPO's ``compute_log_prob`` detaches the null-prompt branch (flow_grpo
``scripts/train_sd3.py`` @ ac4c86e), so only the prompt branch is trained; DDPO's does not (ddpo-pytorch
``scripts/train.py``); DanceGRPO trains FLUX, whose guidance is distilled (no CFG: the transformer takes
the value as an input, ``model.embedded_guidance``, 3.5), and samples and trains on the authors' own
shifted schedule (:func:`~zoo.engines.diffusion.sampling.dance_schedule`), not the base scheduler's; RLCM's LCM
likewise has no CFG; RLCM feeds its LCM the distilled guidance (``model.embedded_guidance``, 8) instead.
TreeGRPO (its code not read here) and Adv-GRPO (a Flow-GRPO derivative) take Flow-GRPO's 4.5: the zoo's choice. "A = 0: drop" is Flow-GRPO's filter of images whose advantage is exactly zero
(``filter_zero_advantage``; :func:`zoo.rl.diffusion_loss.nonzero_advantage_mask`).

Sources: flow_grpo ``config/grpo.py`` and ``config/base.py``; DanceGRPO
``scripts/finetune/finetune_flux_grpo_8gpus.sh``; ddpo-pytorch ``config/base.py``; RLCM
(Owen-Oertell/rlcm ``lcm_rl_pytorch/conf/config.yaml``); Adv-GRPO ``config/grpo.py`` (its
``dino_cotrain_sd3_patch_fast`` preset; its fast SDE window is ``AdvGRPOConfig``'s default). TreeGRPO (arXiv 2512.08153): its code
(github.com/zh-ding/TreeGRPO) could not be read here; the tree advantage of :mod:`zoo.engines.diffusion.tree` is
the zoo's own construction, and its sliding tree window is not implemented.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch

from zoo.rl.advantages import grpo
from zoo.rl.diffusion_loss import PerPromptStatTracker
from zoo_common.registry import Registry


@dataclass(frozen=True)
class StepSettings:
    """What a round's sampling and loss read, resolved: a method's paper values (:attr:`Method.defaults`) with
    the recipe's non-null fields of the same names over them (``DiffusionAlgorithmConfig.settings``). A knob a
    method's config class lacks keeps the row's value, which that method's step or rollout does not read (RLCM's
    ``noise_level``, a tree's ``shuffle_timesteps``)."""

    noise_level: float
    clip_range: float
    adv_clip_max: float
    timestep_fraction: float
    shuffle_timesteps: bool
    init_same_noise: bool
    guidance_scale: float
    filter_zero_advantage: bool
    detach_uncond: bool
    """Guidance's null-prompt branch carries no gradient in the trained step (Flow-GRPO's ``compute_log_prob``;
    DDPO's keeps it); no recipe field, the method's own choice."""


@dataclass(frozen=True)
class Method:
    """One diffusion RL method.

    Attributes:
        name: the recipe's ``algorithm.method``.
        family: the sampler it needs: ``flow`` (flow-matching transformer), ``ddim`` or ``lcm`` (UNet).
        step: the policy step's name in :mod:`zoo.engines.diffusion.sampling` (``flow``, ``cps``, ``dance``,
            ``ddim``, ``lcm``).
        defaults: paper values for the recipe fields left ``null``.
        tracker: ``() -> PerPromptStatTracker`` (per-prompt advantages), or ``None`` for per-group GRPO.
        clear_tracker: forget the tracker's history every round (Flow-GRPO) or keep a buffer (DDPO).
        rollout: ``flat`` groups, or ``tree`` (shared prefixes, branching steps).
        adversarial: the reward is an online discriminator's score (Adv-GRPO).
        paper: arXiv id.
    """

    name: str
    family: str
    step: str
    defaults: StepSettings
    tracker: Callable[[], PerPromptStatTracker] | None = None
    clear_tracker: bool = True
    rollout: str = "flat"
    adversarial: bool = False
    paper: str = ""

    def advantages(self, tracker: PerPromptStatTracker | None, prompts: list[str], group_ids: torch.Tensor,
                   rewards: torch.Tensor) -> torch.Tensor:  # fmt: skip
        """(N,) float32 advantages from (N,) rewards; NaN rewards (unscored) get 0 and stay out of the statistics."""
        valid = ~torch.isnan(rewards)
        out = torch.zeros_like(rewards)
        if valid.sum() == 0:
            return out
        if tracker is None:
            out[valid] = grpo(rewards[valid], group_ids[valid], eps=1e-8)
        else:
            kept = [p for p, v in zip(prompts, valid.tolist(), strict=True) if v]
            out[valid] = torch.as_tensor(
                tracker.update(kept, rewards[valid].numpy().astype(np.float64)), dtype=torch.float32
            )
            if self.clear_tracker:
                tracker.clear()
        return out


METHODS: Registry[Method] = Registry("diffusion method")
_FLOW = StepSettings(noise_level=0.7, clip_range=1e-4, adv_clip_max=5.0, timestep_fraction=0.99, shuffle_timesteps=False,
                     init_same_noise=False, guidance_scale=4.5, filter_zero_advantage=True, detach_uncond=True)  # fmt: skip
for _method in (
    Method("flow_grpo", "flow", "flow", _FLOW, lambda: PerPromptStatTracker(global_std=True, eps=1e-4),
           paper="2505.05470"),
    Method("dance_grpo", "flow", "dance", replace(_FLOW, filter_zero_advantage=False, noise_level=0.3,
           timestep_fraction=0.6, shuffle_timesteps=True, init_same_noise=True, guidance_scale=1.0), None,
           paper="2505.07818"),
    Method("ddpo", "ddim", "ddim", replace(_FLOW, filter_zero_advantage=False, noise_level=1.0, timestep_fraction=1.0,
           shuffle_timesteps=True, guidance_scale=5.0, detach_uncond=False),
           lambda: PerPromptStatTracker(16, 16, eps=1e-6), clear_tracker=False, paper="2305.13301"),
    Method("rlcm", "lcm", "lcm", replace(_FLOW, filter_zero_advantage=False, noise_level=0.0, adv_clip_max=10.0,
           timestep_fraction=1.0, shuffle_timesteps=True, guidance_scale=1.0),
           lambda: PerPromptStatTracker(32, 16, eps=1e-6), clear_tracker=False, paper="2404.03673"),
    Method("tree_grpo", "flow", "flow", replace(_FLOW, filter_zero_advantage=False, timestep_fraction=1.0,
           init_same_noise=True), None, rollout="tree", paper="2512.08153"),
    Method("adv_grpo", "flow", "cps", replace(_FLOW, noise_level=0.8, clip_range=1e-5),
           lambda: PerPromptStatTracker(global_std=True, eps=1e-4), adversarial=True, paper="2511.20256"),
):  # fmt: skip
    METHODS.register(_method.name, _method)
