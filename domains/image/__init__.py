"""Image generation and editing: Flow-GRPO, Adv-GRPO, DanceGRPO, OmniGen2 + EditScore (rewards, judges, benchmarks)."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="image",
    summary="text-to-image and image-editing RL (Flow-GRPO, DanceGRPO, Adv-GRPO, EditScore) with preference, "
    "OCR, compressibility and judge rewards",
    entries="domains.image.entries",
    rewards="domains.image.rewards",
    datasets={
        "geneval-prompts": "domains.image.data:load_geneval",
        "ocr-prompts": "domains.image.data:load_ocr_prompts",
        "gedit-bench": "domains.image.data:load_gedit_bench",
    },
    evaluate="domains.image.evaluate:run",
    benchmarks=("geneval-prompts", "ocr-prompts", "gedit-bench"),
)
