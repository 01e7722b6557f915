"""Image generation: text-to-image RL on diffusion and flow models (the ``diffusion`` engine's recipes)."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="image",
    summary="text-to-image RL of diffusion/flow models: Flow-GRPO, DanceGRPO, DDPO recipes and a tiny released checkpoint",
    entries="domains.image.entries",
)
