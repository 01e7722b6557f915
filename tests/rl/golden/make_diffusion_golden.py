"""Generate ``diffusion.json``: the numbers ``tests/rl/test_diffusion_*.py`` compare ``zoo.rl`` against.

The numbers come from the authors' own functions, run on fixed inputs drawn here from fixed seeds
(inputs are stored beside the outputs, so the tests use no RNG):

- Flow-GRPO, yifan123/flow_grpo @ ac4c86e8cae021841f1fde853d340e0db67690dd:
  ``flow_grpo/diffusers_patch/sd3_sde_with_logprob.py::sde_step_with_logprob`` and
  ``flow_grpo/stat_tracking.py::PerPromptStatTracker``; its loss and KL (inline in
  ``scripts/train_sd3.py``, lines 881-897) are transcribed below, marked;
- DDPO, kvablack/ddpo-pytorch @ 1958463f020112c9a7bc85768d296daacc2e1b4b:
  ``ddpo_pytorch/diffusers_patch/ddim_with_logprob.py::ddim_step_with_logprob`` and
  ``ddpo_pytorch/stat_tracking.py::PerPromptStatTracker``;
- DanceGRPO, XueZeyue/DanceGRPO @ 15cc71d53cc2e6e18a68ee607d5fb6ba9a99e344:
  ``fastvideo/train_grpo_flux.py::flux_step`` and ``sd3_time_shift``;
- Adv-GRPO, showlab/Adv-GRPO @ 8287f9085a59c4fc48f8e80dbf0528fcf734766e:
  ``adv_grpo/diffusers_patch/sd3_sde_with_logprob.py::sde_step_with_logprob_new`` (Flow-CPS).

The authors' modules import training stacks that are not installed here, so each function's
source is cut out of its file with ``ast`` and executed unchanged in a namespace holding the
names it uses (``torch``, ``math``, ``np``, ``deque``, diffusers' ``randn_tensor`` and schedulers).
Run from the repository root with the project venv (diffusers 0.42.1, torch 2.14.1)::

    git clone https://github.com/yifan123/flow_grpo /tmp/scratch/flow_grpo        # and check out the
    git clone https://github.com/kvablack/ddpo-pytorch /tmp/scratch/ddpo-pytorch  # commits above
    git clone https://github.com/XueZeyue/DanceGRPO /tmp/scratch/DanceGRPO
    git clone https://github.com/showlab/Adv-GRPO /tmp/scratch/Adv-GRPO
    .venv/bin/python tests/rl/golden/make_diffusion_golden.py /tmp/scratch

Deterministic: rerunning writes an identical file.
"""

from __future__ import annotations

import ast
import json
import math
import subprocess
import sys
from collections import deque
from importlib.metadata import version
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import torch
from diffusers import DDIMScheduler, FlowMatchEulerDiscreteScheduler
from diffusers.utils.torch_utils import randn_tensor

SOURCES = {
    "flow_grpo": ("yifan123/flow_grpo", "ac4c86e8cae021841f1fde853d340e0db67690dd"),
    "ddpo-pytorch": ("kvablack/ddpo-pytorch", "1958463f020112c9a7bc85768d296daacc2e1b4b"),
    "DanceGRPO": ("XueZeyue/DanceGRPO", "15cc71d53cc2e6e18a68ee607d5fb6ba9a99e344"),
    "Adv-GRPO": ("showlab/Adv-GRPO", "8287f9085a59c4fc48f8e80dbf0528fcf734766e"),
}
OUT = Path(__file__).with_name("diffusion.json")
SHAPE = (3, 2, 3, 3)  # (B, C, H, W): small enough to store, batched, non-square channel count


def authors(root: Path, repo: str, path: str, *names: str) -> dict[str, Any]:
    """The named top-level functions/classes of ``root/repo/path``, executed from their own source."""
    folder = root / repo
    commit = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()  # fmt: skip
    if commit != SOURCES[repo][1]:
        sys.exit(f"{folder} is at {commit}; check out {SOURCES[repo][1]}")
    source = (folder / path).read_text()
    namespace: dict[str, Any] = {
        "torch": torch, "math": math, "np": np, "deque": deque, "randn_tensor": randn_tensor,
        "Optional": Optional, "Union": Union, "DDIMScheduler": DDIMScheduler,
        "FlowMatchEulerDiscreteScheduler": FlowMatchEulerDiscreteScheduler,
        "DDIMSchedulerOutput": object, "Tuple": tuple,
    }  # fmt: skip
    wanted = set(names) | {"_left_broadcast", "_get_variance"}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in wanted:
            exec(compile(ast.Module([node], []), f"{repo}/{path}", "exec"), namespace)  # noqa: S102
    return {name: namespace[name] for name in names}


def tensor(seed: int, shape: tuple[int, ...] = SHAPE) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def as_list(x: torch.Tensor) -> Any:
    return x.detach().double().tolist() if x.ndim else float(x)


def flow_cases(root: Path) -> list[dict[str, Any]]:
    step = authors(root, "flow_grpo", "flow_grpo/diffusers_patch/sd3_sde_with_logprob.py", "sde_step_with_logprob")
    fn = step["sde_step_with_logprob"]
    cases = []
    for shift, steps, indices, noise_level, draw in [
        (3.0, 10, [0, 0, 0], 0.7, False),  # first step
        (3.0, 10, [9, 9, 9], 0.7, False),  # last step (sigma_prev = 0)
        (3.0, 10, [0, 4, 9], 0.7, False),  # batched, mixed timesteps
        (1.0, 6, [0, 2, 5], 1.0, False),  # no shift: sigma == 1 uses sigmas[1]
        (3.0, 10, [3, 3, 3], 0.0, False),  # noise_level 0: the ODE step (log-prob NaN)
        (3.0, 10, [1, 5, 8], 0.7, True),  # rollout: draw prev_sample with a seeded generator
    ]:
        scheduler = FlowMatchEulerDiscreteScheduler(shift=shift)
        scheduler.set_timesteps(steps)
        timestep = scheduler.timesteps[indices]
        model_output, sample, given = tensor(1), tensor(2), tensor(3)
        generator = torch.Generator().manual_seed(7) if draw else None
        prev, log_prob, mean, std = fn(scheduler, model_output, timestep, sample, noise_level=noise_level,
                                       prev_sample=None if draw else given, generator=generator)  # fmt: skip
        cases.append({
            "shift": shift, "steps": steps, "indices": indices, "noise_level": noise_level, "draw_seed": 7 if draw else None,
            "timestep": as_list(timestep), "sigmas": as_list(scheduler.sigmas), "model_output": as_list(model_output),
            "sample": as_list(sample), "prev_sample_in": None if draw else as_list(given), "prev_sample": as_list(prev),
            "log_prob": as_list(log_prob), "prev_sample_mean": as_list(mean), "std_dev_t": as_list(std),
        })  # fmt: skip
    return cases


def cps_cases(root: Path) -> list[dict[str, Any]]:
    fn = authors(root, "Adv-GRPO", "adv_grpo/diffusers_patch/sd3_sde_with_logprob.py",
                 "sde_step_with_logprob_new")["sde_step_with_logprob_new"]  # fmt: skip
    cases = []
    for indices, noise_level, draw in [([0, 0, 0], 0.8, False), ([9, 9, 9], 0.8, False), ([0, 4, 8], 0.5, False),
                                       ([2, 5, 7], 0.8, True)]:  # fmt: skip
        scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0)
        scheduler.set_timesteps(10)
        timestep = scheduler.timesteps[indices]
        model_output, sample, given = tensor(41), tensor(42), tensor(43)
        generator = torch.Generator().manual_seed(47) if draw else None
        prev, log_prob, mean, std = fn(scheduler, model_output, timestep, sample, noise_level=noise_level,
                                       prev_sample=None if draw else given, generator=generator)  # fmt: skip
        cases.append({
            "indices": indices, "noise_level": noise_level, "draw_seed": 47 if draw else None,
            "sigmas": as_list(scheduler.sigmas), "model_output": as_list(model_output), "sample": as_list(sample),
            "prev_sample_in": None if draw else as_list(given), "prev_sample": as_list(prev),
            "log_prob": as_list(log_prob), "prev_sample_mean": as_list(mean), "std_dev_t": as_list(std),
        })  # fmt: skip
    return cases


def ddim_scheduler(steps: int, **overrides: Any) -> DDIMScheduler:
    config = {"num_train_timesteps": 1000, "beta_schedule": "scaled_linear", "beta_start": 0.00085, "beta_end": 0.012,
                  "clip_sample": False, "set_alpha_to_one": False, "steps_offset": 1}  # fmt: skip
    scheduler = DDIMScheduler(**{**config, **overrides})
    scheduler.set_timesteps(steps)
    return scheduler


def ddim_cases(root: Path) -> list[dict[str, Any]]:
    fn = authors(root, "ddpo-pytorch", "ddpo_pytorch/diffusers_patch/ddim_with_logprob.py",
                 "ddim_step_with_logprob")["ddim_step_with_logprob"]  # fmt: skip
    cases = []
    for steps, indices, eta, overrides, draw in [
        (10, [0, 0, 0], 1.0, {}, False),  # first step
        (10, [9, 9, 9], 1.0, {}, False),  # last step: t_prev < 0 clamped to 0
        (10, [0, 4, 9], 1.0, {}, False),  # batched, mixed timesteps
        (10, [2, 5, 7], 0.5, {}, False),
        (10, [3, 3, 3], 0.0, {}, False),  # eta 0: deterministic DDIM (log-prob NaN)
        (10, 4, 1.0, {}, False),  # a 0-d timestep for the whole batch
        (50, [0, 25, 49], 1.0, {"prediction_type": "v_prediction"}, False),
        (10, [0, 5, 9], 1.0, {"prediction_type": "sample", "clip_sample": True}, False),
        (10, [1, 6, 8], 1.0, {}, True),  # rollout: draw with a seeded generator
        (10, [9, 9, 9], 1.0, {"steps_offset": 0}, False),  # the gotcha: last variance 0, log-prob -inf
    ]:
        scheduler = ddim_scheduler(steps, **overrides)
        timestep = scheduler.timesteps[indices]
        model_output, sample, given = tensor(11), tensor(12), tensor(13)
        generator = torch.Generator().manual_seed(17) if draw else None
        prev, log_prob = fn(scheduler, model_output, timestep, sample, eta=eta,
                            prev_sample=None if draw else given, generator=generator)  # fmt: skip
        cases.append({
            "steps": steps, "indices": indices, "eta": eta, "overrides": overrides, "draw_seed": 17 if draw else None,
            "timestep": as_list(timestep), "model_output": as_list(model_output), "sample": as_list(sample),
            "prev_sample_in": None if draw else as_list(given), "prev_sample": as_list(prev), "log_prob": as_list(log_prob),
        })  # fmt: skip
    return cases


def dance_cases(root: Path) -> list[dict[str, Any]]:
    fns = authors(root, "DanceGRPO", "fastvideo/train_grpo_flux.py", "flux_step", "sd3_time_shift")
    sigmas = fns["sd3_time_shift"](3.0, torch.linspace(1, 0, 16 + 1))
    cases = []
    for index, eta, sde_solver in [(0, 0.3, True), (15, 0.3, True), (7, 0.7, True), (7, 0.3, False)]:
        model_output, latents, given = tensor(21), tensor(22), tensor(23)
        _prev, _, log_prob = fns["flux_step"](model_output, latents, eta, sigmas, index, given, True, sde_solver)
        cases.append({
            "index": index, "eta": eta, "sde_solver": sde_solver, "sigmas": as_list(sigmas),
            "model_output": as_list(model_output), "latents": as_list(latents), "prev_sample_in": as_list(given),
            "log_prob": as_list(log_prob),
        })  # fmt: skip
    return cases


def tracker_cases(root: Path) -> dict[str, list[dict[str, Any]]]:
    ddpo = authors(root, "ddpo-pytorch", "ddpo_pytorch/stat_tracking.py", "PerPromptStatTracker")[
        "PerPromptStatTracker"
    ]
    flow = authors(root, "flow_grpo", "flow_grpo/stat_tracking.py", "PerPromptStatTracker")["PerPromptStatTracker"]
    rng = np.random.default_rng(0)
    batches = [(["a", "b", "a", "c", "b", "a"], rng.normal(size=6).round(4).tolist()),
               (["a", "a", "b", "b"], rng.normal(size=4).round(4).tolist()),
               (["c", "a", "c", "c", "b"], rng.normal(size=5).round(4).tolist())]  # fmt: skip
    integer_batches = [(["a", "b", "a", "c", "b", "a"], [1, 2, 3, 4, 5, 6]), (["a", "b", "b"], [0, 1, 1])]
    out: dict[str, list[dict[str, Any]]] = {"ddpo": [], "flow_grpo": []}
    for buffer_size, min_count in [(4, 3), (16, 16), (2, 1)]:
        for name, seq in [("float", batches), ("int", integer_batches)]:
            tracker, tracker_f = ddpo(buffer_size, min_count), ddpo(buffer_size, min_count)
            steps = [{"prompts": p, "rewards": r, "advantages": tracker.update(p, r).tolist(),
                      "advantages_float_rewards": tracker_f.update(p, np.asarray(r, dtype=np.float64)).tolist()}
                     for p, r in seq]  # fmt: skip
            out["ddpo"].append({"buffer_size": buffer_size, "min_count": min_count, "rewards": name, "updates": steps})
    for global_std in (False, True):
        for name, seq in [("float", batches), ("int", integer_batches)]:
            # the authors' tracker must be cleared after each update (a second update without it raises)
            tracker = flow(global_std=global_std)
            steps = []
            for p, r in seq:
                steps.append({"prompts": p, "rewards": r, "advantages": tracker.update(p, r).tolist()})
                tracker.clear()
            out["flow_grpo"].append({"global_std": global_std, "rewards": name, "updates": steps})
    return out


def loss_cases() -> list[dict[str, Any]]:
    cases = []
    for seed, clip_range, adv_clip_max, beta, spread in [(31, 1e-4, 5.0, 0.0, 1e-4), (32, 1e-4, 5.0, 0.04, 1e-3),
                                                         (33, 0.2, 2.0, 0.01, 0.5), (34, 1e-2, 10.0, 0.0, 3.0)]:  # fmt: skip
        g = torch.Generator().manual_seed(seed)
        old = torch.randn(6, generator=g) - 1.0
        log_prob = old + spread * torch.randn(6, generator=g)
        adv = 4 * torch.randn(6, generator=g)
        mean, mean_ref = torch.randn(6, 2, 3, 3, generator=g), torch.randn(6, 2, 3, 3, generator=g)
        std_dev_t = torch.rand(6, 1, 1, 1, generator=g) + 0.1
        # --- transcribed from flow_grpo scripts/train_sd3.py @ ac4c86e, lines 881-897 (also ddpo-pytorch
        # scripts/train.py lines 539-551 without the KL), with sample["log_probs"][:, j] -> old ---
        advantages = torch.clamp(adv, -adv_clip_max, adv_clip_max)
        ratio = torch.exp(log_prob - old)
        unclipped_loss = -advantages * ratio
        clipped_loss = -advantages * torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range)
        policy_loss = torch.mean(torch.maximum(unclipped_loss, clipped_loss))
        kl_loss = ((mean - mean_ref) ** 2).mean(dim=(1, 2, 3), keepdim=True) / (2 * std_dev_t**2)
        kl_loss = torch.mean(kl_loss)
        loss = policy_loss + beta * kl_loss
        clipfrac = torch.mean((torch.abs(ratio - 1.0) > clip_range).float())
        # --- end of transcription ---
        cases.append({
            "clip_range": clip_range, "adv_clip_max": adv_clip_max, "beta": beta, "log_prob": as_list(log_prob),
            "old_log_prob": as_list(old), "advantages": as_list(adv), "mean": as_list(mean), "mean_ref": as_list(mean_ref),
            "std_dev_t": as_list(std_dev_t), "policy_loss": float(policy_loss), "kl_loss": float(kl_loss),
            "loss": float(loss), "clipfrac": float(clipfrac),
        })  # fmt: skip
    return cases


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/scratch")
    golden = {
        "sources": {k: {"repo": r, "commit": c} for k, (r, c) in SOURCES.items()}
        | {"versions": {"torch": torch.__version__, "diffusers": version("diffusers"), "numpy": np.__version__}},
        "flow_sde": flow_cases(root), "flow_cps": cps_cases(root), "ddim": ddim_cases(root), "dance_sde": dance_cases(root),
        "trackers": tracker_cases(root), "loss": loss_cases(),
    }  # fmt: skip
    OUT.write_text(json.dumps(golden, indent=None, allow_nan=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
