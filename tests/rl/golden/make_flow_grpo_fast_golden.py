"""Generate ``flow_grpo_fast.json``: guidance, zero-advantage filtering and the SDE window, from the authors' code.

- Guided log-prob: yifan123/flow_grpo @ ac4c86e8cae021841f1fde853d340e0db67690dd
  ``scripts/train_sd3.py::compute_log_prob`` (``train.cfg``: one forward on ``[null, prompt]``, the null
  branch detached, ``uncond + w (text - uncond)``) calling ``sd3_sde_with_logprob.py::sde_step_with_logprob``,
  both executed unchanged; the denoiser is :class:`FakeTransformer` (a fixed function with one trained
  scalar, so the gradient is recorded too).
- Zero-std metric: the same file's ``calculate_zero_std_ratio``, executed unchanged; the filter mask
  (inline in its ``main``: ``mask = (samples["advantages"].abs().sum(dim=1) != 0)``) is transcribed below,
  on advantages from the authors' ``flow_grpo/stat_tracking.py::PerPromptStatTracker`` (global std).
- SDE window: the denoising loop of ``flow_grpo/diffusers_patch/sd3_pipeline_with_logprob_fast.py``
  (Flow-GRPO-Fast; read at the fork zhtmike/flow_grpo @ 3d02fd9d65957d45bc7d0b240ad347a9d334fcb9, the
  upstream file not being in the snapshot above) is transcribed in :func:`fast_loop`, with the window
  start given instead of drawn, and a seeded generator passed to the step (upstream uses the global RNG).
  Its start is ``random.randint(lo, hi - size)``: both ends included.

Run from the repository root, with flow_grpo checked out at the commit above in ``ROOT/flow_grpo``::

    .venv/bin/python tests/rl/golden/make_flow_grpo_fast_golden.py /tmp/scratch
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from diffusers import FlowMatchEulerDiscreteScheduler

sys.path.insert(0, str(Path(__file__).parent))
from make_diffusion_golden import as_list, authors, tensor

OUT = Path(__file__).with_name("flow_grpo_fast.json")
SHAPE = (2, 2, 3, 3)  # (B, C, H, W)
GUIDANCE = 4.5


class FakeTransformer(torch.nn.Module):
    """A fixed stand-in for the SD3 transformer: velocity = w * x * (1 + mean(pooled)) + mean(embeds) + t / 1000.

    Conditioning moves the output, so null and prompt branches differ; ``w`` is the one trained weight.
    """

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(0.8))

    def forward(self, hidden_states: torch.Tensor, timestep: torch.Tensor, encoder_hidden_states: torch.Tensor,
                pooled_projections: torch.Tensor, return_dict: bool = False) -> tuple[torch.Tensor]:  # fmt: skip
        shape = (-1, *([1] * (hidden_states.ndim - 1)))
        scale = 1 + pooled_projections.mean(-1).reshape(shape)
        shift = encoder_hidden_states.mean(dim=(1, 2)).reshape(shape) + timestep.float().reshape(shape) / 1000
        return (self.w * hidden_states * scale + shift,)


def conditions(batch: int) -> dict[str, torch.Tensor]:
    """Prompt and null-prompt embeddings (L = 4, D = 5, pooled 6)."""
    g = torch.Generator().manual_seed(11)
    return {"embeds": torch.randn(batch, 4, 5, generator=g), "pooled": torch.randn(batch, 6, generator=g),
            "null_embeds": torch.randn(1, 4, 5, generator=g), "null_pooled": torch.randn(1, 6, generator=g)}  # fmt: skip


def cfg_cases(root: Path) -> list[dict[str, Any]]:
    step = authors(root, "flow_grpo", "flow_grpo/diffusers_patch/sd3_sde_with_logprob.py", "sde_step_with_logprob")
    fn = authors(root, "flow_grpo", "scripts/train_sd3.py", "compute_log_prob")
    fn["compute_log_prob"].__globals__["sde_step_with_logprob"] = step["sde_step_with_logprob"]
    scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0)
    scheduler.set_timesteps(10)
    cond = conditions(SHAPE[0])
    cases = []
    for cfg, j in [(True, 0), (True, 1), (False, 1)]:
        latents = torch.stack([tensor(21, SHAPE), tensor(22, SHAPE)], dim=1)  # (B, T=2, C, H, W)
        next_latents = torch.stack([tensor(23, SHAPE), tensor(24, SHAPE)], dim=1)
        timesteps = scheduler.timesteps[[3, 6]].repeat(SHAPE[0], 1)
        sample = {"latents": latents, "next_latents": next_latents, "timesteps": timesteps}
        config = SimpleNamespace(train=SimpleNamespace(cfg=cfg),
                                 sample=SimpleNamespace(guidance_scale=GUIDANCE, noise_level=0.7))  # fmt: skip
        n = SHAPE[0]
        embeds = torch.cat([cond["null_embeds"].expand(n, -1, -1), cond["embeds"]]) if cfg else cond["embeds"]
        pooled = torch.cat([cond["null_pooled"].expand(n, -1), cond["pooled"]]) if cfg else cond["pooled"]
        model = FakeTransformer()
        _, log_prob, mean, std = fn["compute_log_prob"](model, SimpleNamespace(scheduler=scheduler), sample, j, embeds,
                                                        pooled, config)  # fmt: skip
        (grad,) = torch.autograd.grad(log_prob.sum(), model.w)
        cases.append({"cfg": cfg, "j": j, "step_indices": [3, 6], "latents": as_list(latents),
                      "next_latents": as_list(next_latents), "log_prob": as_list(log_prob),
                      "prev_sample_mean": as_list(mean), "std_dev_t": as_list(std), "grad_w": float(grad)})  # fmt: skip
    return cases


def filter_cases(root: Path) -> list[dict[str, Any]]:
    tracker_cls = authors(root, "flow_grpo", "flow_grpo/stat_tracking.py", "PerPromptStatTracker")["PerPromptStatTracker"]
    ratio = authors(root, "flow_grpo", "scripts/train_sd3.py", "calculate_zero_std_ratio")["calculate_zero_std_ratio"]
    cases = []
    for prompts, rewards in [
        (["a", "a", "b", "b", "c", "c"], [1.0, 1.0, 0.0, 1.0, 0.5, 0.5]),  # two tied groups
        (["a", "b", "a", "b", "a", "b"], [0.0, 0.2, 1.0, 0.2, 0.5, 0.2]),  # 0.5 is a's mean: A = 0 there too
        (["a", "a", "a", "b", "b", "b"], [0.3, 0.3, 0.3, 0.7, 0.7, 0.7]),  # all groups tied
        (["a", "a", "b", "b"], [0.1, 0.1, 0.1, 0.1]),  # tied at a value whose float mean is inexact
    ]:
        tracker = tracker_cls(global_std=True)
        timesteps = 3  # the authors repeat each image's reward over its trained steps
        per_step = np.repeat(np.asarray(rewards, dtype=np.float32)[:, None], timesteps, axis=1)
        advantages = torch.as_tensor(tracker.update(prompts, per_step))
        mask = advantages.abs().sum(dim=1) != 0  # scripts/train_sd3.py, transcribed
        zero_std, _ = ratio(prompts, {"ori_avg": np.asarray(rewards, dtype=np.float32)})
        cases.append({"prompts": prompts, "rewards": rewards, "advantages": as_list(advantages[:, 0]),
                      "mask": mask.tolist(), "zero_std_ratio": float(zero_std)})  # fmt: skip
    return cases


def fast_loop(step_fn: Any, scheduler: Any, model: FakeTransformer, latents: torch.Tensor, cond: dict[str, torch.Tensor],
              window: tuple[int, int], noise_level: float, generator: torch.Generator) -> dict[str, Any]:  # fmt: skip
    """The Flow-GRPO-Fast denoising loop with guidance (transcribed), the window given."""
    n = latents.shape[0]
    embeds = torch.cat([cond["null_embeds"].expand(n, -1, -1), cond["embeds"]])
    pooled = torch.cat([cond["null_pooled"].expand(n, -1), cond["pooled"]])
    all_latents, all_log_probs, all_timesteps = [], [], []
    for i, t in enumerate(scheduler.timesteps):
        if i < window[0]:
            cur_noise_level = 0
        elif i == window[0]:
            cur_noise_level = noise_level
            all_latents.append(latents)
        elif window[0] < i < window[1]:
            cur_noise_level = noise_level
        else:
            cur_noise_level = 0
        noise_pred = model(torch.cat([latents] * 2), t.expand(2 * n), embeds, pooled)[0]
        noise_pred_uncond, noise_pred_text = noise_pred.chunk(2)
        noise_pred = noise_pred_uncond + GUIDANCE * (noise_pred_text - noise_pred_uncond)
        latents, log_prob, _, _ = step_fn(scheduler, noise_pred.float(), t.unsqueeze(0), latents.float(),
                                          noise_level=cur_noise_level, generator=generator)  # fmt: skip
        if window[0] <= i < window[1]:
            all_latents.append(latents)
            all_log_probs.append(log_prob)
            all_timesteps.append(t)
    return {"final": as_list(latents), "latents": as_list(torch.stack(all_latents, 1)),
            "log_probs": as_list(torch.stack(all_log_probs, 1)), "timesteps": as_list(torch.stack(all_timesteps))}  # fmt: skip


def window_cases(root: Path) -> list[dict[str, Any]]:
    step = authors(root, "flow_grpo", "flow_grpo/diffusers_patch/sd3_sde_with_logprob.py", "sde_step_with_logprob")
    cond = conditions(SHAPE[0])
    cases = []
    for steps, window in [(6, (1, 3)), (6, (0, 2)), (8, (2, 5))]:
        scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0)
        scheduler.set_timesteps(steps)
        with torch.no_grad():
            out = fast_loop(step["sde_step_with_logprob"], scheduler, FakeTransformer(), tensor(31, SHAPE), cond, window, 0.7,
                            torch.Generator().manual_seed(5))  # fmt: skip
        cases.append({"steps": steps, "window": list(window), "start": as_list(tensor(31, SHAPE)), "seed": 5, **out})
    return cases


def main() -> None:
    root = Path(sys.argv[1])
    cond = conditions(SHAPE[0])
    golden = {
        "sources": {"flow_grpo": "ac4c86e8cae021841f1fde853d340e0db67690dd",
                    "fast_pipeline": "zhtmike/flow_grpo@3d02fd9d65957d45bc7d0b240ad347a9d334fcb9 (transcribed)",
                    "torch": torch.__version__},
        "guidance_scale": GUIDANCE,
        "conditions": {k: as_list(v) for k, v in cond.items()},
        "cfg": cfg_cases(root),
        "filter": filter_cases(root),
        "window": window_cases(root),
    }
    OUT.write_text(json.dumps(golden, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
