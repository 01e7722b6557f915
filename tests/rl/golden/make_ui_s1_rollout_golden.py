"""Generate ``tests/rl/golden/ui_s1_rollout.json``: UI-S1's semi-online rollout driven by the authors' code.

Source: X-PLUG/MobileAgent@11cea575561fb7800b5fb6b6cafa56f7a91de11f, folder ``UI-S1/``:

- ``verl/utils/dataset/universal_multiround.py::MultiRoundGenerator.apply_response`` (the patch
  module), cut out with ``ast`` and executed unchanged, decides after every generated turn what
  goes into each copy's dialogue (the model's answer or the ground truth) and which copies stop;
  the turn loop around it is ``dapo_ray_trainer.py::fit`` (every unfinished copy with a step left
  gets a turn; the generated batches are concatenated step by step).
- ``x/qwen/data_format.py::slim_messages`` (cut out the same way) bounds the screenshots of a
  dialogue, with ``num_image_limit=2`` as ``QwenMessages2Inputs`` uses it.
- ``uis1/core_uis1.py`` (via ``make_ui_s1_golden.authors_outputs``) computes the returns and
  advantages of the rows the rollout emitted.

The policy is scripted: per copy and step, whether its answer matches and the reward it gets,
drawn from a seed not used by ``make_ui_s1_golden.py`` (the loop's test never saw these
trajectories before this file existed). Re-run as ``make_ui_s1_golden.py`` says, with this file.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import io
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
OUT = HERE / "ui_s1_rollout.json"


def _base():
    spec = importlib.util.spec_from_file_location("make_ui_s1_golden", HERE / "make_ui_s1_golden.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_slim_messages(root: Path):
    """``slim_messages`` from the authors' ``x/qwen/data_format.py``, compiled on its own."""
    path = root / "x" / "qwen" / "data_format.py"
    tree = ast.parse(path.read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "slim_messages")
    namespace: dict = {"copy": __import__("copy")}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(path), "exec"), namespace)  # noqa: S102
    return namespace["slim_messages"]


def rollout(apply_response, script: list[list[tuple[bool, float]]], uids: list[str], threshold: int) -> dict:
    """``fit()``'s turn loop around the authors' ``apply_response``; rows in emission order."""
    n = len(script)
    this = SimpleNamespace(
        current_response=[None] * n, error_num=[0] * n, finished=[False] * n, patch_threshold=threshold,
        msg_man=SimpleNamespace(tokenizer=SimpleNamespace(decode=lambda ids: "model")),
        fm=SimpleNamespace(format_response=lambda step, extra: "ground-truth"),
    )
    rows, history = [], [[] for _ in range(n)]
    for step in range(max(len(s) for s in script)):
        ptrs = [p for p in range(n) if not this.finished[p] and step < len(script[p])]
        if not ptrs:
            break
        batch = SimpleNamespace(
            non_tensor_batch={
                "ptr": ptrs,
                "extract_match": [script[p][step][0] for p in ptrs],
                "reward_model": [{"ground_truth": {"check_options": {"action": "click"}, "thought": ""}} for _ in ptrs],
                "extra_info": [{} for _ in ptrs],
            },
            batch={"responses": [None for _ in ptrs]},
        )
        with contextlib.redirect_stdout(io.StringIO()):
            apply_response(this, batch)
        for p in ptrs:
            rows.append((uids[p], f"t{p}", step, script[p][step][0], script[p][step][1]))
            history[p].append(this.current_response[p])
    case = dict(zip(("uids", "traj_ids", "step_ids", "matches", "rewards"), map(list, zip(*rows))))
    return {**case, "history": history, "finished": list(this.finished)}


def slim_cases(slim_messages) -> list[dict]:
    """Which screenshots and texts survive at each turn of a 5-step dialogue (limit 2)."""
    out = []
    for turns in range(1, 6):
        messages = [{"role": "system", "content": [{"text": "sys"}]}]
        for t in range(turns):
            messages.append({"role": "user", "content": [{"text": f"u{t}"}, {"image": f"img{t}"}]})
            if t < turns - 1:
                messages.append({"role": "assistant", "content": [{"text": f"a{t}"}]})
        slim = slim_messages(messages, num_image_limit=2)
        out.append({"turns": turns, "kept": [[c.get("text", c.get("image")) for c in m["content"]] for m in slim]})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("uis1_root", type=Path, help="the UI-S1/ folder of X-PLUG/MobileAgent at 11cea575")
    args = parser.parse_args()
    torch.set_num_threads(1)
    base = _base()
    core, apply_response = base.load_core(args.uis1_root), base.load_apply_response(args.uis1_root)
    gen = np.random.default_rng(20260)
    rollouts = []
    for threshold, episode_steps, rollout_n in ((2, [3, 5, 2], 4), (0, [4, 3], 3), (-1, [5, 1, 3], 2), (1, [4], 5)):
        script, uids = [], []
        for g, steps in enumerate(episode_steps):
            for _ in range(rollout_n):
                hits = gen.random(steps) < 0.55
                script.append([(bool(h), float(gen.choice(base.MATCH_SCORES if h else base.MISMATCH_SCORES)))
                               for h in hits])
                uids.append(f"p{g}")
        case = rollout(apply_response, script, uids, threshold)
        outputs = base.authors_outputs(core, case, seed=len(rollouts))
        rollouts.append({"threshold": threshold, "episode_steps": episode_steps, "rollout_n": rollout_n,
                         "script": script, **case, **outputs})
    data = {"sources": {"ui_s1": f"X-PLUG/MobileAgent@{base.COMMIT} UI-S1/", "torch": torch.__version__,
                        "numpy": np.__version__},
            "rollouts": rollouts, "slim": slim_cases(load_slim_messages(args.uis1_root))}
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
