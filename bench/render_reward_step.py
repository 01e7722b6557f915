"""A GRPO step with a chart-render reward: the zoo's warm sandboxed pool against one subprocess per sample.

    OMP_NUM_THREADS=1 python bench/render_reward_step.py --steps 3 --batch 8

Both sides train the same tiny Qwen2.5-VL (same seed) on the same synthetic charts for the same
steps. The zoo side is ``ZooGRPOTrainer`` with a reward that renders through
:class:`rewards.rendering.RenderPool` (workers started before timing, renders spread over them);
the baseline is TRL's ``GRPOTrainer`` with the reward VinciCoder ships (DocTron-hub/VinciCoder
``examples/reward_function/vincicoder.py``): ``subprocess.run([python, file])`` per sample, no
sandbox. A random tiny policy writes no runnable code, so each completion is placed into a fixed
chart program as its title (the same code on both sides); the score is SSIM to the sample's
reference chart on both sides. The zoo runs twice: scoring after generation (as TRL does), and
with ``algorithm.reward_chunks`` (``--chunks``, default 2): the batch generates in chunks of whole
groups and a chunk renders in the pool's workers while the next chunk generates.

Prints median step time of each side and the ratios zoo / baseline (target <= 0.5), with and
without the overlap.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from grpo_step import StepTimer  # bench/, beside this script
from transformers.trainer_callback import PrinterCallback
from trl import GRPOConfig, GRPOTrainer

from rewards.adapters import to_trl
from rewards.base import RewardResult, target_of, text_of
from rewards.code_render import reference_image
from rewards.image_similarity import ssim
from rewards.rendering import RenderPool
from zoo.data import load_dataset
from zoo.engines.vlm.contract import with_contract
from zoo.engines.vlm.recipe import AlgorithmConfig
from zoo.engines.vlm.sft import freeze_vision_tower
from zoo.engines.vlm.trainer import ZooGRPOTrainer
from zoo.engines.vlm.trl_data import to_trl_dataset
from zoo.registry import info
from zoo.tiny import build_tiny_vlm

SIZE = 128
CHART = """import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.bar(['a', 'b', 'c', 'd'], [3, 1, 4, 1], color='#1f77b4')
ax.plot([0, 1, 2, 3], [2, 3, 1, 4], color='#d62728', marker='o')
ax.set_title({title!r})
plt.tight_layout()
"""
# What VinciCoder's reward writes per sample: the code, then a savefig it appends.
SUBPROCESS_SUFFIX = "\nimport matplotlib.pyplot as plt\nplt.gcf().set_size_inches({w} / 100, {h} / 100)\n" \
                    "plt.savefig({path!r}, dpi=100)\n"


def chart_code(completion: str) -> str:
    return CHART.format(title=completion[:40])


class PoolChartReward:
    """Zoo side: all renders of the batch at once through the warm pool."""

    name = "pool-chart-ssim"

    def __init__(self, pool: RenderPool) -> None:
        self.pool = pool

    def __call__(self, predictions, samples):
        results = self.pool.render_many("matplotlib", [chart_code(text_of(p)) for p in predictions], size=(SIZE, SIZE))
        return [RewardResult(ssim(r.image, reference_image(target_of(s)["image"]).resize((SIZE, SIZE))) if r.ok
                             else 0.0) for r, s in zip(results, samples, strict=True)]


class SubprocessChartReward:
    """Baseline: one fresh ``python file.py`` per sample, as VinciCoder's reward runs chart code."""

    name = "subprocess-chart-ssim"

    def __call__(self, predictions, samples):
        from PIL import Image

        out = []
        with tempfile.TemporaryDirectory() as tmp:
            for i, (p, s) in enumerate(zip(predictions, samples, strict=True)):
                png, script = Path(tmp) / f"{i}.png", Path(tmp) / f"{i}.py"
                script.write_text(chart_code(text_of(p)) + SUBPROCESS_SUFFIX.format(w=SIZE, h=SIZE, path=str(png)))
                done = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=60, check=False,
                                      env={"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"})
                if done.returncode or not png.is_file():
                    out.append(RewardResult(0.0))
                    continue
                image = Image.open(io.BytesIO(png.read_bytes())).convert("RGB").resize((SIZE, SIZE))
                out.append(RewardResult(ssim(image, reference_image(target_of(s)["image"]).resize((SIZE, SIZE)))))
        return out


def run(side: str, args, dataset, pool: RenderPool) -> list[float]:
    model, processor = build_tiny_vlm("qwen2_5_vl", seed=0, hidden=64, layers=2)
    freeze_vision_tower(model)
    config = GRPOConfig(
        output_dir=str(Path(args.out) / side), per_device_train_batch_size=args.batch, num_generations=args.group,
        max_completion_length=16, max_steps=args.steps + 1, learning_rate=1e-5, loss_type="grpo", beta=0.0,
        save_strategy="no", report_to=[], use_cpu=True, seed=0, remove_unused_columns=False, disable_tqdm=True,
    )
    zoo = side.startswith("zoo")
    reward = PoolChartReward(pool) if zoo else SubprocessChartReward()
    kwargs = {"model": model, "reward_funcs": [to_trl(reward)], "args": config, "train_dataset": dataset,
              "processing_class": processor}
    chunks = args.chunks if side == "zoo-overlap" else 1
    trainer = (ZooGRPOTrainer(**kwargs, algorithm=AlgorithmConfig(loss_type="grpo", reward_chunks=chunks)) if zoo
               else GRPOTrainer(**kwargs))
    trainer.remove_callback(PrinterCallback)
    timer = StepTimer()
    trainer.add_callback(timer)
    trainer.train()
    return timer.times[1:]  # the first step is warm-up


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="timed steps per side (one more is warm-up)")
    parser.add_argument("--batch", type=int, default=8, help="completions per step")
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunks", type=int, default=2, help="algorithm.reward_chunks of the overlapped zoo run")
    parser.add_argument("--out", default="runs/bench-render-reward-step")
    args = parser.parse_args()
    torch.set_num_threads(1)
    msrl = info("msrl-sft").spec  # the charts' raw questions asked in MSRL's prompt, as a recipe naming it trains
    dataset = to_trl_dataset([with_contract(s, msrl) for s in load_dataset("chart-synthetic", n=16, seed=0, size=64)])
    with RenderPool(args.workers) as pool:
        zoo = statistics.median(run("zoo", args, dataset, pool))
        overlap = statistics.median(run("zoo-overlap", args, dataset, pool))
    baseline = statistics.median(run("subprocess", args, dataset, pool))
    report = {"batch": args.batch, "group": args.group, "workers": args.workers, "timed_steps": args.steps,
              "reward_chunks": args.chunks, "zoo_step_s": round(zoo, 3), "zoo_overlap_step_s": round(overlap, 3),
              "subprocess_step_s": round(baseline, 3), "ratio_zoo_over_subprocess": round(zoo / baseline, 3),
              "ratio_zoo_overlap_over_subprocess": round(overlap / baseline, 3),
              "ratio_overlap_over_no_overlap": round(overlap / zoo, 3)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
