"""The prompt-colour reward on synthetic images, and the released tiny checkpoint end to end offline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch
from PIL import Image

from rewards.base import RewardSample, get
from zoo.engines.diffusion.synthetic import BACKGROUND, synthetic_images
from zoo.records import read_record

ROOT = Path(__file__).resolve().parents[3]


def score(images, prompts):
    return get("prompt-colour")(list(images), [RewardSample(target={"prompt": p}) for p in prompts])


def test_reward_follows_the_prompt_not_the_image_alone() -> None:
    images, captions = synthetic_images(8, torch.Generator().manual_seed(0))
    right = score(images, captions)
    assert all(r.score > 0.95 for r in right)
    wrong = score(images, [c.replace(c.split()[1], "grey" if c.split()[1] != "grey" else "red") for c in captions])
    assert all(r.score < 0.05 for r in wrong)


def test_empty_canvas_scores_near_zero_and_a_colourless_prompt_is_unscored() -> None:
    blank = torch.full((1, 3, 32, 32), BACKGROUND)
    assert score(blank, ["a red square"])[0].score < 1e-6
    result = score(blank, ["a square"])[0]
    assert result.score is None and "names none" in result.error


def test_released_checkpoint_draws_offline_with_zoo_run(tmp_path: Path) -> None:
    out = tmp_path / "green.png"
    done = subprocess.run([sys.executable, "-m", "zoo.cli", "run", "flow-grpo-tiny-colour", "--prompt", "a green circle",
                           "--out", str(out), "--device", "cpu", "--json"], cwd=ROOT, capture_output=True, text=True,
                          env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout[done.stdout.index("{") :])
    assert result["source"] == "checkpoints" and result["settings"]["guidance_scale"] == 4.5
    assert Image.open(out).size == (32, 32)


def test_released_record_carries_before_and_after_per_seed() -> None:
    record = read_record(ROOT / "checkpoints" / "flow-grpo-tiny-colour" / "training.json").to_dict()["measurements"]
    held = record["held_out"]
    assert set(held["before"]) == set(held["after"]) == {str(s) for s in held["seeds"]}
    card = (ROOT / "checkpoints" / "flow-grpo-tiny-colour" / "README.md").read_text()
    before = sum(v["reward"] for v in held["before"].values()) / len(held["before"])
    assert f"{before:.3f}" in card
