"""Image-generation checkpoints. ``flow-grpo-tiny-colour`` is trained in this repository (``python -m domains.image.release all``)."""

from __future__ import annotations

from zoo.kinds import DiffusionSpec
from zoo.registry import ModelEntry, register

FLOW_GRPO_TINY_COLOUR = register(
    ModelEntry(
        name="flow-grpo-tiny-colour",
        repo_id=None,
        architecture="sd3",
        base_model="none (random init, StableDiffusion3Pipeline architecture, ~0.4M parameters, pre-trained here)",
        domain="image",
        task="text-to-image, 32x32 synthetic coloured shapes ('a <colour> square', 'a <colour> circle')",
        # The recipe's sampler: 6 Euler steps, guidance 4.5 (Flow-GRPO's), 32 px.
        spec=DiffusionSpec(num_inference_steps=6, guidance_scale=4.5, height=32, width=32),
        license="apache-2.0",
        license_source="this repository's licence (pyproject.toml: Apache-2.0); trained here",
        revision_note="shipped in this repository (checkpoints/flow-grpo-tiny-colour), not on the Hub",
        rl_methods=("flow-grpo",),
        paper="2505.05470",
        notes="A teaching/demo checkpoint trained on CPU: Flow-GRPO with the prompt-colour reward on a tiny SD3 "
        "pipeline; it only knows 8 colours and 2 shapes. Card: checkpoints/flow-grpo-tiny-colour/README.md.",
    )
)
