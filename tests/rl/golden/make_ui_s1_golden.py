"""Generate ``tests/rl/golden/ui_s1.json``: UI-S1's semi-online RL maths run by the authors' code.

Source: X-PLUG/MobileAgent, folder ``UI-S1/``, snapshot commit
11cea575561fb7800b5fb6b6cafa56f7a91de11f (the three files below last changed in 93afb003).

- ``uis1/core_uis1.py`` is executed unchanged (its only project import, ``verl.DataProto``, is a
  type name, so a stand-in module is placed in ``sys.modules``): ``compute_step_discounted_returns``
  and ``compute_uis1_outcome_advantage`` produce the returns and advantages.
- ``verl/utils/dataset/universal_multiround.py``: the method ``MultiRoundGenerator.apply_response``
  (the patch module) is cut out of the file with ``ast`` and executed unchanged on a stand-in
  ``self``; the rest of that file needs the authors' unreleased data stack and is not run.
- ``verl/trainer/ppo/dapo_ray_trainer.py``: the dynamic filter is inline in ``fit()``, not a
  function, so its lines for ``metric == "seq_future_reward"`` are transcribed below (marked).

Re-run (torch + numpy suffice; the project venv has both)::

    git clone https://github.com/X-PLUG/MobileAgent && git -C MobileAgent checkout 11cea575
    .venv/bin/python tests/rl/golden/make_ui_s1_golden.py MobileAgent/UI-S1

Inputs are drawn from fixed seeds and stored beside the outputs; rerunning rewrites an identical file.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import sys
import types
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

OUT = Path(__file__).resolve().parent / "ui_s1.json"
COMMIT = "11cea575561fb7800b5fb6b6cafa56f7a91de11f"
# Reward values UI-S1's rule reward can take: 0.1 * format + 0.9 * action, action in {0, 0.1, 0.5, 1}.
MISMATCH_SCORES = (0.0, 0.09, 0.1, 0.19, 0.45, 0.55)
MATCH_SCORES = (0.9, 1.0)


def load_core(root: Path) -> types.ModuleType:
    """Execute the authors' ``uis1/core_uis1.py`` with a stand-in ``verl`` package."""
    sys.modules.setdefault("verl", types.SimpleNamespace(DataProto=object))  # type: ignore[arg-type]
    module = types.ModuleType("core_uis1")
    source = (root / "uis1" / "core_uis1.py").read_text()
    exec(compile(source, "core_uis1.py", "exec"), module.__dict__)  # noqa: S102 - the authors' code, from a pinned file
    return module


def load_apply_response(root: Path):
    """``MultiRoundGenerator.apply_response`` from the authors' file, compiled on its own."""
    path = root / "verl" / "utils" / "dataset" / "universal_multiround.py"
    tree = ast.parse(path.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MultiRoundGenerator")
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "apply_response")
    namespace: dict = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(path), "exec"), namespace)  # noqa: S102
    return namespace["apply_response"]


def simulate_patch(apply_response, matches: list[list[bool]], threshold: int) -> list[dict]:
    """Drive ``apply_response`` step by step as ``fit()`` does; record who is rolled out and patched."""
    n = len(matches)
    this = SimpleNamespace(
        current_response=[None] * n, error_num=[0] * n, finished=[False] * n, patch_threshold=threshold,
        msg_man=SimpleNamespace(tokenizer=SimpleNamespace(decode=lambda ids: "model")),
        fm=SimpleNamespace(format_response=lambda step, extra: "ground-truth"),
    )
    plans = [{"rolled_out": 0, "patched": []} for _ in range(n)]
    for step in range(max(len(m) for m in matches)):
        # fit(): trajectories that are not finished and still have a ground-truth step get a turn.
        ptrs = [p for p in range(n) if not this.finished[p] and step < len(matches[p])]
        if not ptrs:
            break
        batch = SimpleNamespace(
            non_tensor_batch={
                "ptr": ptrs,
                "extract_match": [matches[p][step] for p in ptrs],
                "reward_model": [{"ground_truth": {"check_options": {"action": "click"}, "thought": ""}}
                                 for _ in ptrs],
                "extra_info": [{} for _ in ptrs],
            },
            batch={"responses": [None for _ in ptrs]},
        )
        with contextlib.redirect_stdout(io.StringIO()):  # the authors' method prints each patch
            apply_response(this, batch)
        for p in ptrs:
            plans[p]["rolled_out"] += 1
            plans[p]["patched"].append(this.current_response[p] == "ground-truth")
    return plans


def dapo_filter_transcribed(future: np.ndarray, uids: list, step_ids: list, threshold: float) -> dict:
    """Transcribed from ``dapo_ray_trainer.py::fit`` (metric ``seq_future_reward``), lines 358-369."""
    # --- transcription starts ---
    prompt_uid2metric_vals = defaultdict(list)
    for uid, metric_val, step_id in zip(uids, future, step_ids):
        if step_id == 0:
            prompt_uid2metric_vals[uid].append(metric_val)
    prompt_uid2metric_std = {}
    for prompt_uid, metric_vals in prompt_uid2metric_vals.items():
        prompt_uid2metric_std[prompt_uid] = np.std(metric_vals)
    kept_prompt_uids = [uid for uid, std in prompt_uid2metric_std.items()
                        if std > threshold or len(prompt_uid2metric_vals[uid]) == 1]
    # --- transcription ends ---
    return {"keep": [uid in kept_prompt_uids for uid in uids],
            "std": {k: float(v) for k, v in prompt_uid2metric_std.items()}}


def random_matches(gen: np.random.Generator, trajectories: int, max_steps: int) -> list[list[bool]]:
    return [[bool(x) for x in gen.random(int(gen.integers(1, max_steps + 1))) < 0.6] for _ in range(trajectories)]


def build_case(gen: np.random.Generator, apply_response, prompts: list[int], max_steps: int) -> dict:
    """Rollouts of ``len(p)`` trajectories per prompt, patched with threshold 2, laid out step-major."""
    matches = [m for count in prompts for m in random_matches(gen, count, max_steps)]
    uids = [f"p{i}" for i, count in enumerate(prompts) for _ in range(count)]
    plans = simulate_patch(apply_response, matches, threshold=2)
    rows = []
    for step in range(max_steps):  # fit() concatenates one generated batch per step
        for traj, plan in enumerate(plans):
            if step < plan["rolled_out"]:
                hit = matches[traj][step]
                score = float(gen.choice(MATCH_SCORES if hit else MISMATCH_SCORES))
                rows.append((uids[traj], f"t{traj}", step, hit, score))
    return dict(zip(("uids", "traj_ids", "step_ids", "matches", "rewards"), map(list, zip(*rows))))


def handmade_cases() -> list[dict]:
    """Small cases with the edge cases spelled out: singleton prompt, equal rewards, mismatch resets."""
    def case(rows):
        return dict(zip(("uids", "traj_ids", "step_ids", "matches", "rewards"), map(list, zip(*rows))))
    return [
        case([  # p0: three trajectories, mixed; p1: one trajectory of one step (singleton prompt group)
            ("p0", "a", 0, True, 1.0), ("p0", "b", 0, False, 0.55), ("p0", "c", 0, True, 0.9),
            ("p1", "d", 0, False, 0.1),
            ("p0", "a", 1, False, 0.19), ("p0", "b", 1, True, 1.0), ("p0", "c", 1, True, 1.0),
            ("p0", "a", 2, True, 1.0), ("p0", "b", 2, False, 0.0),
        ]),
        case([  # equal rewards everywhere: every std is 0
            ("q", "a", 0, True, 1.0), ("q", "b", 0, True, 1.0),
            ("q", "a", 1, True, 1.0), ("q", "b", 1, True, 1.0),
        ]),
    ]


def authors_outputs(core, case: dict, seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    n = len(case["rewards"])
    length = 6
    lengths = torch.randint(1, length + 1, (n,), generator=gen)
    mask = (torch.arange(length)[None, :] < lengths[:, None]).float()
    token_rewards = torch.zeros(n, length)
    token_rewards[torch.arange(n), lengths - 1] = torch.tensor(case["rewards"], dtype=torch.float32)
    out = {"mask": mask.tolist(), "returns": {}, "advantages": [], "filter": []}
    for gamma in (0.5, 0.9):
        batch = SimpleNamespace(
            non_tensor_batch={"rewards": np.array(case["rewards"], dtype=object),
                              "traj_uid": np.array(case["traj_ids"], dtype=object),
                              "extract_match": np.array(case["matches"])},
            batch={"input_ids": torch.zeros(1)},
        )
        returns = core.compute_step_discounted_returns(batch, gamma)
        out["returns"][str(gamma)] = returns.double().tolist()
        if gamma == 0.5:
            for threshold in (0.3, 0.5):
                kept = dapo_filter_transcribed(returns.numpy(), case["uids"], case["step_ids"], threshold)
                out["filter"].append({"threshold": threshold, **kept})
            for mode in ("mean_std_norm", "mean_norm"):
                for w_ep, w_step in ((1.0, 1.0), (0.7, 0.3)):
                    adv, _ = core.compute_uis1_outcome_advantage(
                        token_level_rewards=token_rewards, step_rewards=returns, response_mask=mask,
                        index=np.array(case["uids"], dtype=object), traj_index=np.array(case["traj_ids"], dtype=object),
                        step_index=np.array(case["step_ids"]), step_advantage_w=w_step,
                        episode_advantage_w=w_ep, mode=mode)
                    out["advantages"].append({"mode": mode, "episode_weight": w_ep, "step_weight": w_step,
                                              "values": adv.double().tolist()})
    return out


def patch_cases(apply_response) -> list[dict]:
    matches = [[True, True, True], [False, True, False, True], [False, False, False, True],
               [True, False, False, False, True], [False], []]
    matches = [m for m in matches if m]
    return [{"threshold": thr, "matches": matches, "plans": simulate_patch(apply_response, matches, thr)}
            for thr in (-1, 0, 1, 2, 3)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("uis1_root", type=Path, help="the UI-S1/ folder of X-PLUG/MobileAgent at " + COMMIT[:8])
    args = parser.parse_args()
    torch.set_num_threads(1)
    core = load_core(args.uis1_root)
    apply_response = load_apply_response(args.uis1_root)
    gen = np.random.default_rng(0)
    cases = handmade_cases() + [build_case(gen, apply_response, [4, 4, 1, 3], max_steps=5) for _ in range(2)]
    data = {
        "sources": {"ui_s1": f"X-PLUG/MobileAgent@{COMMIT} UI-S1/", "torch": torch.__version__,
                    "numpy": np.__version__},
        "cases": [{**c, **authors_outputs(core, c, seed)} for seed, c in enumerate(cases)],
        "patch": patch_cases(apply_response),
    }
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
