"""TreeGRPO rollouts: a group is a tree that shares prefixes and branches at chosen steps.

TreeGRPO (Ding and Ye, arXiv 2512.08153, ICLR 2026) recasts a group of G images as a search tree: all leaves
start from one noise, steps outside ``branch_steps`` are deterministic (the ODE step, one
denoiser call per node), and at each branch step every node splits into ``branch_factor``
children with distinct SDE noise. A group of ``G = b^|K|`` leaves then costs
``sum_i b^{c(i)}`` denoiser calls (``c(i)``: branch steps before step i) instead of ``G T``.
Only the branching transitions are stochastic, so only they are trained; one forward of the
parent scores all its children (they share its mean).

Step-wise advantages, the zoo's own construction: a node's value is the mean reward of the leaves below
it; a transition parent -> child gets ``(V(child) - V(parent)) / (std of the group's leaf rewards + 1e-4)``.
This is not the authors' estimator. Their code is public (github.com/zh-ding/TreeGRPO, ``train.py``; its
README, read on a stored page, describes a tree window ``tree.w`` slid by ``tree.s`` steps every ``tree.tou``
epochs and ``tree.k`` branches per split, on SD3.5-M with HPS-v2.1), but no snapshot of it could be read here,
so neither their advantage (the paper speaks of leaf advantages backed up the tree and averaged with weights
from the action probabilities) nor their sliding window is reproduced: ``branch_steps`` stay fixed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from zoo.engines.diffusion.sampling import Transitions

if TYPE_CHECKING:
    from zoo.engines.diffusion.setup import Run


def tree_evals(num_steps: int, branch_steps: tuple[int, ...], branch_factor: int) -> int:
    """Denoiser calls per tree: ``sum_i b^{c(i)}`` with ``c(i) = #{k in K : k < i}``."""
    return sum(branch_factor ** sum(k < i for k in branch_steps) for i in range(num_steps))


@torch.no_grad()
def tree_rollout(
    run: Run, cond: tuple[torch.Tensor, torch.Tensor], n_prompts: int
) -> tuple[torch.Tensor, list[dict[str, Any]]]:
    """Grow one tree per prompt. Returns the leaves (P * G, ...) in prompt-major order and the branch records.

    Each record holds the parents (P * m, ...), their children (P * m, b, ...), the children's old
    log-probs (P * m, b), the step index and ``m`` (nodes per tree before the split).
    """
    alg, sampler = run.recipe.algorithm, run.sampler
    b, branch = alg.branch_factor, set(alg.branch_steps)
    nodes = run.initial_noise(n_prompts, 1, same_within_group=False)
    tree_of = torch.arange(n_prompts)
    records = []
    for i in range(alg.num_steps):
        index = torch.full((len(nodes),), i, dtype=torch.long)
        output = sampler.predict(nodes, index, run.select_cond(cond, tree_of)).float()
        if i not in branch:
            nodes = sampler.step(index, nodes, output, 0.0, generator=run.generator).prev_sample_mean
            continue
        rep = lambda x: x.repeat_interleave(b, dim=0)
        out = sampler.step(rep(index), rep(nodes), rep(output), run.settings.noise_level, generator=run.generator)
        records.append({"parents": nodes, "children": out.prev_sample.view(len(nodes), b, *nodes.shape[1:]),
                        "log_prob": out.log_prob.view(len(nodes), b), "index": i, "per_tree": len(nodes) // n_prompts})  # fmt: skip
        nodes, tree_of = out.prev_sample, rep(tree_of)
    return nodes, records


def node_values(rewards: torch.Tensor, nodes_per_tree: int, n_prompts: int) -> torch.Tensor:
    """(P * nodes_per_tree,) mean leaf reward under each node at a level of the trees (NaN leaves ignored).

    Leaves are prompt-major and children follow their parent, so a node's leaves are a contiguous block.
    """
    return torch.nanmean(rewards.view(n_prompts * nodes_per_tree, -1), dim=1)


def tree_advantages(rewards: torch.Tensor, records: list[dict[str, Any]], n_prompts: int, b: int) -> list[torch.Tensor]:
    """(P * m, b) advantages of each record's transitions: ``(V(child) - V(parent)) / (group std + 1e-4)``, the zoo's
    construction (module docstring: the authors' could not be read)."""
    leaves = rewards.view(n_prompts, -1)
    valid = ~torch.isnan(leaves)
    centred = torch.where(valid, leaves - torch.nanmean(leaves, dim=1, keepdim=True), torch.zeros_like(leaves))
    std = (centred.pow(2).sum(1) / (valid.sum(1) - 1).clamp(min=1)).sqrt()  # unbiased, as zoo.rl.grpo
    out = []
    for record in records:
        m = record["per_tree"]
        parent = node_values(rewards, m, n_prompts)
        child = node_values(rewards, m * b, n_prompts).view(-1, b)
        adv = (child - parent.unsqueeze(1)) / (std.repeat_interleave(m).unsqueeze(1) + 1e-4)
        out.append(torch.nan_to_num(adv, nan=0.0))
    return out


def tree_round(run: Run, prompts: list[str]) -> tuple[Transitions, torch.Tensor, dict[str, Any]]:
    """Grow the trees, score the leaves, and return every branching transition with its step-wise advantage."""
    alg = run.recipe.algorithm
    cond = run.encode(prompts)
    with run.sampling():
        leaves, records = tree_rollout(run, cond, len(prompts))
    leaf_prompts = [p for p in prompts for _ in range(alg.group_size)]
    rewards, metrics = run.score(leaves, leaf_prompts)
    advantages = tree_advantages(rewards, records, len(prompts), alg.branch_factor)
    parts = []
    for record, adv in zip(records, advantages, strict=True):
        n = len(record["parents"])
        parts.append(Transitions(latents=record["parents"], next_latents=record["children"],
                                 index=torch.full((n,), record["index"], dtype=torch.long),
                                 cond=torch.arange(len(prompts)).repeat_interleave(record["per_tree"]),
                                 old_log_prob=record["log_prob"], advantages=adv))  # fmt: skip
    run.round_cond = cond
    evals = len(prompts) * tree_evals(alg.num_steps, alg.branch_steps, alg.branch_factor)
    metrics.update({"advantage_abs": float(torch.cat(advantages).abs().mean()), "sample_evals": evals})
    return Transitions.cat(parts), rewards, metrics
