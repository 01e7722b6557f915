"""Synthetic multi-step phone tasks in UI-S1's AndroidControl format, for offline agent training and tests.

AndroidControl's screenshots are not downloadable in CI (and UI-S1's cleaned copy is unreleased,
X-PLUG/MobileAgent issue #218), yet a semi-online rollout needs whole trajectories: a goal, then
one screen per step with the action the expert took there. :func:`episode_samples` draws them
with the same PIL canvas as :mod:`domains.gui.synthetic`, small enough for a tiny CPU model:

* ``click`` — one labelled button on a plain screen; the target is its centre and its box is the
  ``candidate_bbox`` the ``ui-s1`` matcher accepts (enlarged 1.2x, as upstream);
* ``type`` — a focused text field; the target is the word the goal names;
* ``system_button`` — a "Go back" banner; the target is the Back button;
* ``terminate`` — a "Done" screen ending every episode with ``status: success``.

The goal (AndroidControl's high-level instruction) lists the steps in order; each step also
carries its low-level ``step_instruction`` and a short ``thought`` (the expert thought UI-S1's
patch module writes back into the dialogue). Samples have exactly the fields
:func:`domains.gui.data.load_ui_s1_jsonl` produces, and :func:`write_android_control_jsonl`
writes them as that format's ``.jsonl`` plus screenshots, so the real loader reads them back.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from domains.gui.sop import sop_check_options
from domains.gui.synthetic import TINY_COLOURS, TINY_LABELS, _Canvas
from zoo.data import Sample

STEP_KINDS = ("click", "type", "system_button")
NON_CLICK_KINDS = tuple(kind for kind in STEP_KINDS if kind != "click")
WORDS = ("cat", "milk", "rain", "blue", "jazz", "taxi", "lamp", "sofa")
THEMES = ("light", "dark", "ocean", "forest", "sunset")


def _click_screen(rng: random.Random, size: int) -> tuple[Image.Image, dict[str, Any], str]:
    canvas = _Canvas((size, size), "mobile", rng.choice(THEMES), rng)
    bw, bh = rng.randint(size // 5, size * 2 // 5), rng.randint(size // 8, size // 4)
    x, y = rng.randint(2, size - bw - 2), rng.randint(2, size - bh - 2)
    label, font_px = rng.choice(TINY_LABELS), max(6, size // 14)
    canvas.draw.rounded_rectangle((x, y, x + bw, y + bh), radius=max(1, bh // 4), fill=rng.choice(TINY_COLOURS))
    canvas.label((x + font_px // 3, y + (bh - font_px) / 2), label, font_px, "#ffffff")
    action = {"action": "click", "coordinate": [x + bw // 2, y + bh // 2], "bbox": [x, y, x + bw, y + bh]}
    return canvas.image, action, label


def _type_screen(rng: random.Random, size: int, word: str) -> tuple[Image.Image, dict[str, Any], str]:
    canvas = _Canvas((size, size), "mobile", rng.choice(THEMES), rng)
    top = rng.randint(size // 8, size // 2)
    canvas.draw.rounded_rectangle((4, top, size - 4, top + size // 6), radius=3, fill=canvas.surface, outline=canvas.accent)
    canvas.draw.line((8, top + 3, 8, top + size // 6 - 3), fill=canvas.text, width=1)  # the caret: field is focused
    canvas.draw.rectangle((0, size * 3 // 4, size, size), fill=canvas.border)  # the keyboard
    return canvas.image, {"action": "type", "text": word}, word


def _banner_screen(rng: random.Random, size: int, text: str) -> Image.Image:
    canvas = _Canvas((size, size), "mobile", rng.choice(THEMES), rng)
    canvas.draw.rectangle((0, size // 3, size, size * 2 // 3), fill=canvas.accent)
    canvas.label((size // 8, size // 2 - size // 14), text, max(6, size // 9), "#ffffff", bold=True)
    return canvas.image


def _episode(
    rng: random.Random, size: int, min_steps: int, max_steps: int, click_share: float | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """``(goal, steps)``; each step has ``screen``, ``action_content``, ``step_instruction``, ``thought``."""
    steps, phrases = [], []
    for _ in range(rng.randint(min_steps, max_steps) - 1):
        if click_share is None:
            kind = rng.choice(STEP_KINDS)
        else:
            kind = "click" if rng.random() < click_share else rng.choice(NON_CLICK_KINDS)
        if kind == "click":
            screen, action, label = _click_screen(rng, size)
            instruction, phrase = f"tap the {label} button", f"tap {label}"
        elif kind == "type":
            screen, action, word = _type_screen(rng, size, rng.choice(WORDS))
            instruction, phrase = f"type {word}", f"type {word}"
        else:
            screen = _banner_screen(rng, size, "Go back")
            action = {"action": "system_button", "button": "Back"}
            instruction, phrase = "press Back", "go back"
        steps.append({"screen": screen, "action_content": action, "step_instruction": instruction})
        phrases.append(phrase)
    steps.append({"screen": _banner_screen(rng, size, "Done"), "action_content": {"action": "terminate",
                  "status": "success"}, "step_instruction": "finish the task"})  # fmt: skip
    for step in steps:
        step["thought"] = f"Next I should {step['step_instruction']}."
    return ", then ".join(phrases) + ", then finish", steps


def episode_samples(
    n: int = 16, seed: int = 0, size: int = 112, min_steps: int = 2, max_steps: int = 4,
    click_share: float | None = None,
) -> list[Sample]:
    """``n`` synthetic episodes as step samples, in :func:`~domains.gui.data.load_ui_s1_jsonl`'s layout.

    Episode ``i`` depends only on ``(seed, i)``; each step's question is the goal (a recipe's ``model.entry``
    writes the turn, :func:`zoo.engines.vlm.contract.with_turn_contract`). ``click_share`` is the chance that a
    step before the last is a click (the rest split between typing and Back); ``None``, the default and
    the held-out episodes' mix, draws the three kinds alike. A training mix may weight clicks, the one
    kind that needs the screen read to the pixel, without changing what is evaluated.
    """
    if n < 0 or not 1 <= min_steps <= max_steps:
        raise ValueError(f"need n >= 0 and 1 <= min_steps <= max_steps, got n={n}, steps {min_steps}..{max_steps}")
    if click_share is not None and not 0.0 <= click_share <= 1.0:
        raise ValueError(f"click_share is a probability, got {click_share}")
    samples = []
    for i in range(n):
        goal, steps = _episode(random.Random(f"episodes-{seed}-{i}"), size, min_steps, max_steps, click_share)
        history: list[dict[str, Any]] = []
        for s, step in enumerate(steps):
            action = step["action_content"]
            # check_options exactly as the loader builds them (UI-S1 rl_dataset.py fix_line)
            check = {**copy.deepcopy(action), "annotation": "GOOD", "candidate_bbox": list(action.get("bbox", []))}
            samples.append(Sample(
                id=f"episode-{seed}-{i}-{s}", images=(step["screen"],), prompt=goal,
                target={"action": copy.deepcopy(action), "check_options": check, "num_steps": len(steps),
                        "sop_check_options": sop_check_options({"action_content": action}),
                        "image_size": list(step["screen"].size)},
                meta={"platform": "android", "episode_id": f"{seed}-{i}", "step": s, "goal": goal,
                      "history": copy.deepcopy(history), "step_instruction": step["step_instruction"],
                      "thought": step["thought"], "is_successful": True, "rate": 1.0},
            ))  # fmt: skip
            history.append(copy.deepcopy(action))
    return samples


def write_android_control_jsonl(samples: Sequence[Sample], folder: str | Path, name: str = "episodes.jsonl") -> Path:
    """Write step samples as UI-S1's AndroidControl ``.jsonl`` (one trajectory per line) + ``images/``.

    Screenshots are saved as ``images/{episode}_{step}.png``, the authors' naming; read the file back
    with ``load_ui_s1_jsonl(path, image_root=folder / "images")``.
    """
    folder = Path(folder)
    (folder / "images").mkdir(parents=True, exist_ok=True)
    episodes: dict[Any, list[Sample]] = {}
    for sample in samples:
        episodes.setdefault(sample.meta["episode_id"], []).append(sample)
    path = folder / name
    with path.open("w", encoding="utf-8") as f:
        for episode, steps in episodes.items():
            lines = []
            for sample in sorted(steps, key=lambda s: s.meta["step"]):
                image = folder / "images" / f"{episode}_{sample.meta['step']}.png"
                screen = sample.images[0]
                (screen if isinstance(screen, Image.Image) else Image.open(screen)).save(image)
                lines.append({"action_content": sample.target["action"], "screenshot": f"images/{image.name}",
                              "step_instruction": sample.meta.get("step_instruction"),
                              "thought": sample.meta.get("thought")})  # fmt: skip
            goal = steps[0].meta.get("goal", steps[0].prompt)
            record = {"episode_id": episode, "goal": goal, "is_successful": steps[0].meta.get("is_successful"),
                      "steps": lines}  # fmt: skip
            f.write(json.dumps(record) + "\n")
    return path
