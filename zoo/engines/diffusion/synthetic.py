"""Synthetic captioned images for pre-training tiny models: one coloured square or circle on a dark ground.

Captions are "a <colour> <shape>" over :data:`rewards.prompt_colour.PALETTE`; the pairs in
:data:`HELD_OUT` never appear, so they are held-out compositions of seen words (the evaluation
prompts of the learning benchmark and of the released tiny checkpoint).
"""

from __future__ import annotations

import torch

from rewards.prompt_colour import PALETTE

SHAPES = ("square", "circle")
HELD_OUT = ("a green circle", "a blue square", "a orange circle", "a grey square")
TRAIN_PROMPTS = tuple(f"a {c} {s}" for c in PALETTE for s in SHAPES if f"a {c} {s}" not in HELD_OUT)
BACKGROUND = 0.08


def synthetic_images(n: int, generator: torch.Generator, size: int = 32) -> tuple[torch.Tensor, list[str]]:
    """``n`` images (n, 3, size, size) in [0, 1] of one coloured shape on a dark background, and their captions."""
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    images, captions = torch.zeros(n, 3, size, size), []
    for i in range(n):
        prompt = TRAIN_PROMPTS[int(torch.randint(len(TRAIN_PROMPTS), (1,), generator=generator))]
        _, colour, shape = prompt.split()
        r = float(torch.randint(5, 11, (1,), generator=generator))
        cx, cy = (float(v) for v in torch.randint(10, size - 10, (2,), generator=generator))
        inside = (
            (xx - cx).abs().maximum((yy - cy).abs()) <= r
            if shape == "square"
            else (xx - cx) ** 2 + (yy - cy) ** 2 <= r**2
        )
        images[i] = BACKGROUND
        images[i][:, inside] = torch.tensor(PALETTE[colour]).unsqueeze(1)
        captions.append(prompt)
    return images, captions
