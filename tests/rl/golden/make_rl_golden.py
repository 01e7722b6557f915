"""Generate the golden numbers that ``tests/rl/`` compare ``zoo.rl`` against.

The numbers come from the reference libraries' own functions, run on fixed inputs:

- verl 0.9.1, ``verl/trainer/ppo/core_algos.py``: ``compute_grpo_outcome_advantage``,
  ``compute_rloo_outcome_advantage``, ``compute_reinforce_plus_plus_outcome_advantage``,
  ``compute_reinforce_plus_plus_baseline_outcome_advantage``, ``agg_loss``,
  ``compute_policy_loss_vanilla``, ``compute_policy_loss_gspo``, ``kl_penalty``;
- TRL (version recorded in the output), ``GRPOTrainer._compute_loss`` called unbound on a
  stand-in ``self`` whose ``_get_per_token_logps_and_entropies`` returns fixed log-probs,
  and ``trl.trainer.utils.nanstd`` for TRL's group advantage (the five lines of
  ``_generate_and_score_completions`` around it are transcribed below, marked);
- GUI-G1 (Yuqi-Zhou/GUI-G1 ``src/open-r1-multimodal/src/open_r1/trainer/grpo_trainer.py``,
  ``compute_loss``), which is not installable: its loss line is transcribed below, marked.

Inputs are drawn here from fixed seeds and stored next to the outputs, so the tests do
not depend on any RNG. Regenerate (verl is not a project dependency; use a scratch venv
that borrows torch/TRL from the project venv)::

    # from the repository root, with the project venv in .venv (torch 2.14.1, TRL 1.16.0)
    .venv/bin/python -m venv /tmp/verlvenv
    echo "$PWD/.venv/lib/python3.11/site-packages" > /tmp/verlvenv/lib/python3.11/site-packages/main.pth
    /tmp/verlvenv/bin/pip install --no-deps verl==0.9.1
    /tmp/verlvenv/bin/pip install codetiming hydra-core omegaconf pylatexenc ray tensordict orjson
    /tmp/verlvenv/bin/python tests/rl/golden/make_rl_golden.py

verl's pip metadata pins transformers<5.11 and tensordict<=0.10; ``core_algos`` imports and
runs fine with the project's newer versions (the functions used here are plain torch).
The output is deterministic: rerunning rewrites identical files.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import trl
from trl.trainer.grpo_trainer import GRPOTrainer
from trl.trainer.utils import nanstd
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo import core_algos
from verl.workers.config import ActorConfig

OUT = Path(__file__).resolve().parent
SEEDS = (0, 1, 2)


def _list(t: torch.Tensor) -> list:
    return t.detach().to(torch.float64).tolist()


def _ragged_mask(gen: torch.Generator, batch: int, length: int, holes: bool) -> torch.Tensor:
    """Right-padded masks of random lengths (>= 1); with ``holes``, also masked tool spans."""
    lengths = torch.randint(1, length + 1, (batch,), generator=gen)
    mask = (torch.arange(length)[None, :] < lengths[:, None]).float()
    if holes:
        mask = mask * (torch.rand(batch, length, generator=gen) > 0.2).float()
        mask[:, 0] = 1.0
    return mask


def _group_rewards(gen: torch.Generator) -> tuple[list[float], list]:
    """Rewards with every degenerate group shape: size 1, all-equal, mixed sign, binary."""
    groups = [
        torch.randn(4, generator=gen) * 2,  # mixed sign
        torch.tensor([0.5]),  # size 1
        torch.full((3,), 0.1),  # equal, non-dyadic
        torch.randint(0, 2, (5,), generator=gen).float(),  # binary
        torch.full((2,), 1.0),  # equal
        torch.randn(2, generator=gen) - 3,  # all negative
        torch.tensor([-1.5]),  # size 1, negative
    ]
    rewards, uids = [], []
    for g, values in enumerate(groups):
        rewards += values.tolist()
        uids += [f"uid-{g}"] * len(values)
    order = torch.randperm(len(rewards), generator=gen).tolist()  # groups interleaved in the batch
    return [rewards[i] for i in order], [uids[i] for i in order]


def advantage_cases() -> list[dict]:
    cases = []
    for seed in SEEDS:
        gen = torch.Generator().manual_seed(seed)
        rewards, uids = _group_rewards(gen)
        batch, length = len(rewards), 7
        mask = _ragged_mask(gen, batch, length, holes=seed == 2)
        index = np.array(uids, dtype=object)
        scores = torch.tensor(rewards, dtype=torch.float32)
        positions = torch.arange(length)
        last = (positions * (mask > 0)).argmax(-1)
        token_rewards = torch.zeros(batch, length)
        token_rewards[torch.arange(batch), last] = scores  # verl's reward manager: score on last token
        out = {
            "seed": seed,
            "rewards": rewards,
            "uids": uids,
            "mask": _list(mask),
            "token_rewards": _list(token_rewards),
        }
        for norm in (True, False):
            adv, _ = core_algos.compute_grpo_outcome_advantage(
                token_rewards.clone(), mask, index, epsilon=1e-6, norm_adv_by_std_in_grpo=norm
            )
            out[f"grpo_std_{norm}"] = _list(adv)
        out["rloo"] = _list(core_algos.compute_rloo_outcome_advantage(token_rewards.clone(), mask, index)[0])
        out["rpp_baseline"] = _list(
            core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage(token_rewards.clone(), mask, index)[0]
        )
        for gamma in (1.0, 0.9):
            adv, _ = core_algos.compute_reinforce_plus_plus_outcome_advantage(
                token_rewards.clone(), mask, config=AlgoConfig(gamma=gamma)
            )
            out[f"rpp_gamma_{gamma}"] = _list(adv)
        cases.append(out)
    return cases


def trl_advantage_cases() -> list[dict]:
    """TRL 1.x group advantage (scale_rewards='group'), with unscorable (None -> NaN) rows."""
    cases = []
    for seed in SEEDS:
        gen = torch.Generator().manual_seed(100 + seed)
        num_generations, num_prompts = 4, 3
        rewards = torch.randint(0, 3, (num_prompts * num_generations,), generator=gen).float() / 2
        failures = [0, 1, 2, 7] if seed == 0 else torch.randperm(rewards.numel(), generator=gen)[:2].tolist()
        rewards[failures] = torch.nan  # infra failures; seed 0 leaves group 0 with one scored sample
        # --- transcribed from TRL GRPOTrainer._generate_and_score_completions (sum_then_normalize) ---
        mean_grouped = torch.nanmean(rewards.view(-1, num_generations), dim=1).repeat_interleave(num_generations)
        std_grouped = nanstd(rewards.view(-1, num_generations), dim=1).repeat_interleave(num_generations)
        advantages = torch.nan_to_num((rewards - mean_grouped) / (std_grouped + 1e-4), nan=0.0)
        # --- end of transcription ---
        cases.append(
            {
                "seed": seed,
                "rewards": [None if math.isnan(r) else r for r in rewards.tolist()],
                "uids": [i // num_generations for i in range(rewards.numel())],
                "advantages": _list(advantages),
            }
        )
    return cases


def _policy_inputs(seed: int, batch: int = 6, length: int = 8) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    mask = _ragged_mask(gen, batch, length, holes=seed % 2 == 1)
    old = -torch.rand(batch, length, generator=gen) * 3
    delta = torch.randn(batch, length, generator=gen) * 0.4
    delta[0, :3] = torch.tensor([25.0, -25.0, 12.0])  # extreme log-ratios: hit verl's +-20 and GSPO's 10 clamps
    adv = torch.randn(batch, generator=gen)
    adv[1] = 0.0  # zero advantage row
    return {"old_logp": old, "logp": old + delta, "mask": mask, "advantages": adv}


def _actor_config(clip_low: float, clip_high: float, dual_clip: float | None) -> ActorConfig:
    return ActorConfig(
        strategy="fsdp",
        clip_ratio=clip_low,
        clip_ratio_low=clip_low,
        clip_ratio_high=clip_high,
        clip_ratio_c=math.inf if dual_clip is None else dual_clip,
        ppo_micro_batch_size_per_gpu=1,
        rollout_n=1,
    )


def _verl_loss(fn, inputs: dict, config: ActorConfig, agg: str, weights: torch.Tensor | None = None) -> dict:
    logp = inputs["logp"].clone().requires_grad_(True)
    adv_tokens = inputs["advantages"].unsqueeze(-1) * inputs["mask"]
    rollout_w = None if weights is None else weights.unsqueeze(-1).expand_as(logp)
    loss, metrics = fn(inputs["old_logp"], logp, adv_tokens, inputs["mask"], agg, config, rollout_w)
    loss.backward()
    return {
        "loss": loss.item(),
        "grad": _list(logp.grad),
        "clipfrac": metrics["actor/pg_clipfrac"],
        "clipfrac_lower": metrics["actor/pg_clipfrac_lower"],
        "ppo_kl": metrics["actor/ppo_kl"],
    }


def policy_loss_cases() -> list[dict]:
    cases = []
    clip_settings = [(0.2, 0.2, None), (0.2, 0.28, None), (0.2, 0.2, 3.0), (0.1, 0.3, 1.5)]
    for seed in SEEDS:
        inputs = _policy_inputs(seed)
        weights = torch.rand(inputs["mask"].shape[0], generator=torch.Generator().manual_seed(seed)) + 0.5
        for clip_low, clip_high, dual in clip_settings:
            for agg in core_algos_modes():
                res = _verl_loss(
                    core_algos.compute_policy_loss_vanilla, inputs, _actor_config(clip_low, clip_high, dual), agg
                )
                cases.append(
                    {
                        "kind": "vanilla",
                        "seed": seed,
                        "clip_low": clip_low,
                        "clip_high": clip_high,
                        "dual_clip": dual,
                        "agg": agg,
                        **res,
                    }
                )
        config = _actor_config(0.2, 0.28, 3.0)
        res = _verl_loss(core_algos.compute_policy_loss_vanilla, inputs, config, "token-mean", weights)
        cases.append(
            {
                "kind": "vanilla",
                "seed": seed,
                "clip_low": 0.2,
                "clip_high": 0.28,
                "dual_clip": 3.0,
                "agg": "token-mean",
                "weights": _list(weights),
                **res,
            }
        )
        for clip_low, clip_high in ((3e-4, 4e-4), (0.2, 0.28)):
            for agg in ("seq-mean-token-mean", "token-mean"):
                res = _verl_loss(
                    core_algos.compute_policy_loss_gspo, inputs, _actor_config(clip_low, clip_high, None), agg
                )
                cases.append(
                    {"kind": "gspo", "seed": seed, "clip_low": clip_low, "clip_high": clip_high, "agg": agg, **res}
                )
    return cases


def core_algos_modes() -> tuple[str, ...]:
    return ("token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")


def seed_inputs() -> dict[str, dict]:
    """The policy-loss inputs of every seed, stored once (cases refer to them by seed)."""
    return {str(seed): {k: _list(v) for k, v in _policy_inputs(seed).items()} for seed in SEEDS}


def agg_cases() -> list[dict]:
    cases = []
    for seed in SEEDS:
        gen = torch.Generator().manual_seed(200 + seed)
        mask = _ragged_mask(gen, 5, 6, holes=True)
        mask[3] = 0.0  # a fully masked row: verl's seq-mean modes skip it
        loss_mat = torch.randn(5, 6, generator=gen)
        for mode in core_algos_modes():
            for factor in (None, 64):
                if factor is not None and mode != "seq-mean-token-sum-norm":
                    continue
                value = core_algos.agg_loss(loss_mat, mask, mode, loss_scale_factor=factor)
                cases.append(
                    {
                        "seed": seed,
                        "mode": mode,
                        "loss_scale_factor": factor,
                        "loss_mat": _list(loss_mat),
                        "mask": _list(mask),
                        "value": value.item(),
                    }
                )
    return cases


def kl_cases() -> list[dict]:
    cases = []
    for seed in SEEDS:
        gen = torch.Generator().manual_seed(300 + seed)
        ref = -torch.rand(4, 5, generator=gen) * 4
        logp = ref + torch.randn(4, 5, generator=gen)
        logp[0, :4] = ref[0, :4] + torch.tensor([30.0, -30.0, 8.0, -15.0])  # hit the +-20 and +-10 clamps
        for name in ("kl", "k1", "mse", "k2", "low_var_kl", "k3", "abs", "k1+", "k3+", "low_var_kl+"):
            x = logp.clone().requires_grad_(True)
            value = core_algos.kl_penalty(x, ref, name)
            value.sum().backward()
            cases.append(
                {
                    "seed": seed,
                    "estimator": name,
                    "logp": _list(logp),
                    "ref_logp": _list(ref),
                    "value": _list(value),
                    "grad": _list(x.grad),
                }
            )
    return cases


def _trl_self(
    loss_type: str,
    logps: torch.Tensor,
    *,
    beta: float,
    level: str,
    eps_low: float,
    eps_high: float,
    max_completion_length: int,
):
    """A stand-in ``self`` carrying exactly the attributes ``GRPOTrainer._compute_loss`` reads."""
    accelerator = SimpleNamespace(
        num_processes=1,
        gather=lambda x: x,
        gather_for_metrics=lambda x: x,
        reduce=lambda x, reduction="sum": x,
    )
    args = SimpleNamespace(delta=None, use_bias_correction_kl=False, steps_per_generation=1)
    return SimpleNamespace(
        _get_per_token_logps_and_entropies=lambda *a, **k: (logps, torch.zeros_like(logps), None),
        aux_loss_enabled=False,
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        importance_sampling_level=level,
        beta=beta,
        loss_type=loss_type,
        epsilon_low=eps_low,
        epsilon_high=eps_high,
        args=args,
        use_vllm=False,
        model=SimpleNamespace(training=True),
        current_gradient_accumulation_steps=1,
        max_completion_length=max_completion_length,
        accelerator=accelerator,
        _entropy_bonus_enabled=False,
        _metrics={"train": defaultdict(list)},
    )


def trl_loss_cases() -> list[dict]:
    cases = []
    for seed in SEEDS:
        inputs = _policy_inputs(seed)
        inputs["logp"][0, :3] = inputs["old_logp"][0, :3] + torch.tensor([2.0, -2.0, 1.0])  # TRL has no clamp
        ref = (
            inputs["old_logp"]
            + torch.randn(inputs["old_logp"].shape, generator=torch.Generator().manual_seed(seed)) * 0.3
        )
        batch, length = inputs["mask"].shape
        settings = [(lt, 0.0, "token") for lt in ("grpo", "bnpo", "dr_grpo", "dapo")]
        settings += [("grpo", 0.04, "token"), ("grpo", 0.0, "sequence"), ("dapo", 0.0, "sequence")]
        for loss_type, beta, level in settings:
            logp = inputs["logp"].clone().requires_grad_(True)
            fake = _trl_self(
                loss_type, logp, beta=beta, level=level, eps_low=0.2, eps_high=0.28, max_completion_length=length + 4
            )
            trl_inputs = {
                "prompt_ids": torch.zeros(batch, 2, dtype=torch.long),
                "prompt_mask": torch.ones(batch, 2),
                "completion_ids": torch.zeros(batch, length, dtype=torch.long),
                "completion_mask": inputs["mask"],
                "advantages": inputs["advantages"],
                "old_per_token_logps": inputs["old_logp"],
                "ref_per_token_logps": ref,
                "num_items_in_batch": inputs["mask"].sum(),
            }
            loss = GRPOTrainer._compute_loss(fake, None, trl_inputs)
            loss.backward()
            cases.append(
                {
                    "seed": seed,
                    "loss_type": loss_type,
                    "beta": beta,
                    "level": level,
                    "eps_low": 0.2,
                    "eps_high": 0.28,
                    "max_completion_length": length + 4,
                    "ref_logp": _list(ref),
                    "inputs": {k: _list(v) for k, v in inputs.items()},
                    "loss": loss.item(),
                    "grad": _list(logp.grad),
                }
            )
    return cases


def gui_g1_cases() -> list[dict]:
    cases = []
    for seed in SEEDS:
        inputs = _policy_inputs(seed)
        inputs["logp"][0, :3] = inputs["old_logp"][0, :3] + torch.tensor([2.0, -2.0, 1.0])
        rates = (
            torch.randint(1, 4, (inputs["mask"].shape[0],), generator=torch.Generator().manual_seed(seed))
        ).tolist()
        epsilon = 0.2
        # --- transcribed from GUI-G1 grpo_trainer.py compute_loss (beta = 0, the paper's setting) ---
        coef_1 = torch.exp(inputs["logp"] - inputs["old_logp"])
        coef_2 = torch.clamp(coef_1, 1 - epsilon, 1 + epsilon)
        per_token_loss1 = coef_1 * inputs["advantages"].unsqueeze(1)
        per_token_loss2 = coef_2 * inputs["advantages"].unsqueeze(1)
        per_token_loss = -torch.min(per_token_loss1, per_token_loss2)
        loss = ((per_token_loss * inputs["mask"]).sum(dim=1) * torch.tensor(rates) / 64).mean()
        # --- end of transcription ---
        cases.append(
            {
                "seed": seed,
                "rates": rates,
                "epsilon": epsilon,
                "loss": loss.item(),
                "inputs": {k: _list(v) for k, v in inputs.items()},
            }
        )
    return cases


def main() -> None:
    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True)
    sources = {
        "verl": version("verl"),
        "trl": trl.__version__,
        "torch": torch.__version__.split("+")[0],
        "gui_g1": "Yuqi-Zhou/GUI-G1@bb4e586 (transcribed)",
    }
    payloads = {
        "advantages.json": {"verl": advantage_cases(), "trl": trl_advantage_cases()},
        "policy_losses.json": {"inputs": seed_inputs(), "verl": policy_loss_cases()},
        "aggregation.json": {"verl": agg_cases()},
        "kl.json": {"verl": kl_cases()},
        "trl_losses.json": {"trl": trl_loss_cases(), "gui_g1": gui_g1_cases()},
    }
    for name, payload in payloads.items():
        (OUT / name).write_text(json.dumps({"sources": sources, **payload}, indent=None, separators=(",", ":")))
        print(f"wrote {OUT / name}")


if __name__ == "__main__":
    main()
