"""``synthetic-shapes``: captioned images of one coloured square or circle, drawn from a seed (no files).

The pictures the tiny text-to-image models are pre-trained on (:mod:`zoo.engines.diffusion.synthetic`), as a
dataset: Adv-GRPO's reference images in CPU recipes (``algorithm.reference_images``), or captions as prompts.
"""

from __future__ import annotations

import torch

from zoo.data import Sample


def load_shapes(n: int = 16, seed: int = 0, size: int = 32) -> list[Sample]:
    """``n`` samples, each one ``size`` px RGB image and its caption ("a red square") as the prompt."""
    from PIL import Image

    from zoo.engines.diffusion.synthetic import synthetic_images

    if n < 1 or size < 21:
        raise ValueError(f"synthetic-shapes needs n >= 1 and size >= 21 (a shape sits 10 px from the edge), got n={n}, "
                         f"size={size}")  # fmt: skip
    images, captions = synthetic_images(n, torch.Generator().manual_seed(seed), size)
    pixels = (images * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    return [Sample(id=f"{i:05d}", images=(Image.fromarray(p, "RGB"),), prompt=caption)
            for i, (p, caption) in enumerate(zip(pixels, captions, strict=True))]  # fmt: skip
