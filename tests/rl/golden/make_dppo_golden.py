"""Write ``tests/rl/golden/dppo.json``: DPPO's own log-probabilities and PPO loss on fixed inputs.

Run with a checkout of ``irom-princeton/dppo`` (MIT) at commit cc7234a on the path::

    python tests/rl/golden/make_dppo_golden.py /path/to/dppo

The authors' ``VPGDiffusion.get_logprobs_subsample`` and ``PPODiffusion.loss`` are called unbound
on a stand-in object whose ``p_mean_var`` returns stored means and log-variances (the network is
not what is being checked) and whose critic returns stored values; everything else is their code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import torch

CASES = [
    {"B": 40, "Ta": 4, "Da": 3, "ft_steps": 10, "reward_horizon": 4, "gamma_denoise": 0.99, "seed": 0},
    {"B": 30, "Ta": 8, "Da": 2, "ft_steps": 5, "reward_horizon": 3, "gamma_denoise": 0.9, "seed": 1},
    {"B": 25, "Ta": 2, "Da": 7, "ft_steps": 2, "reward_horizon": 2, "gamma_denoise": 0.5, "seed": 2},
]
CLIP = {"clip_ploss_coef": 0.01, "clip_ploss_coef_base": 1e-3, "clip_ploss_coef_rate": 3.0}


def _inputs(case: dict) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(case["seed"])
    b, ta, da = case["B"], case["Ta"], case["Da"]
    mean = torch.randn(b, ta, da, generator=g)
    # DDPM log-variances, one per pair; some below log(0.1^2) so that the std floor binds
    logvar = torch.empty(b, 1, 1).uniform_(-9.0, -1.0, generator=g)
    x_next = mean + 0.3 * torch.randn(b, ta, da, generator=g)
    old_shift = 0.02 * torch.randn(b, ta, da, generator=g)  # rollout log-prob = current + shift (ratios near 1)
    advantages = torch.randn(b, generator=g)
    denoising_index = torch.randint(0, case["ft_steps"], (b,), generator=g)
    return {"mean": mean, "logvar": logvar, "x_next": x_next, "old_shift": old_shift, "advantages": advantages,
            "denoising_index": denoising_index}  # fmt: skip


def main(dppo: Path) -> None:
    sys.path.insert(0, str(dppo))
    from model.diffusion.diffusion_ppo import PPODiffusion
    from model.diffusion.diffusion_vpg import VPGDiffusion

    commit = subprocess.run(["git", "-C", str(dppo), "rev-parse", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    out = {"sources": {"repo": "irom-princeton/dppo", "commit": commit or "cc7234ad7ff39a8f32de3af903606723a16f0648",
                       "files": ["model/diffusion/diffusion_vpg.py::get_logprobs_subsample",
                                 "model/diffusion/diffusion_ppo.py::loss"], "torch": torch.__version__},
           "clip": CLIP, "cases": []}  # fmt: skip
    for case in CASES:
        x = _inputs(case)
        x["mean"].requires_grad_(True)
        model = SimpleNamespace(
            use_ddim=False, ft_denoising_steps=case["ft_steps"], device="cpu", min_logprob_denoising_std=0.1,
            norm_adv=True, clip_advantage_lower_quantile=0, clip_advantage_upper_quantile=1,
            gamma_denoising=case["gamma_denoise"], clip_vloss_coef=None, **CLIP,
            p_mean_var=lambda x_prev, t, cond, index, use_base_policy, x=x: (x["mean"], x["logvar"],
                                                                           torch.ones_like(x["mean"])),
            critic=lambda obs, n=case["B"]: torch.zeros(n),
        )  # fmt: skip
        model.get_logprobs_subsample = partial(VPGDiffusion.get_logprobs_subsample, model)
        obs = {"state": torch.zeros(case["B"], 1, 1)}
        new = VPGDiffusion.get_logprobs_subsample(model, obs, torch.zeros_like(x["mean"]), x["x_next"],
                                                  x["denoising_index"])  # fmt: skip
        x["old_log_prob"] = new.detach() + x.pop("old_shift")
        x["old_log_prob"][0, 0, 0] = -9.0  # below the clamp
        pg_loss, _, _, clipfrac, approx_kl, ratio, _, _ = PPODiffusion.loss(
            model, obs, torch.zeros_like(x["mean"]), x["x_next"], x["denoising_index"], torch.zeros(case["B"]),
            torch.zeros(case["B"]), x["advantages"].clone(), x["old_log_prob"], reward_horizon=case["reward_horizon"])
        pg_loss.backward()  # the gradient reaches the denoising means through the log-probs
        grad = x["mean"].grad
        x["mean"] = x["mean"].detach()
        out["cases"].append({**case, **{k: v.tolist() for k, v in x.items()}, "new_log_prob": new.tolist(), "grad_mean": grad.tolist(),
                             "pg_loss": pg_loss.item(), "clip_fraction": float(clipfrac),
                             "approx_kl": float(approx_kl), "ratio_mean": float(ratio)})  # fmt: skip
    (Path(__file__).parent / "dppo.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
