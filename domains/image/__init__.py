"""Image generation and editing: Flow-GRPO, Adv-GRPO, DanceGRPO, OmniGen2 + EditScore (entries, rewards, judge)."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="image",
    summary="text-to-image and image-editing RL (Flow-GRPO, DanceGRPO, Adv-GRPO, EditScore) with preference, "
    "OCR and judge rewards",
    entries="domains.image.entries",
    rewards="domains.image.rewards",
    datasets={"geneval": "domains.image.geneval:load_samples", "gedit-bench": "domains.image.gedit:load_gedit",
              "synthetic-shapes": "domains.image.shapes:load_shapes",
              "prompt-list": "domains.image.prompt_list:load_prompt_list",
              "qwen-image-references": "domains.image.references:load_qwen_image_references"},
    evaluate="domains.image.evaluate:run",
    benchmarks=("geneval", "ocr", "gedit-bench"),
    # `geneval` is not listed: it reads any GenEval-format metadata file, Flow-GRPO's training split included
    # (a path naming a test file is caught by its name); `synthetic-shapes`, `prompt-list` and `qwen-image-references`
    # (Adv-GRPO's reference images) are not benchmarks.
    eval_datasets=("gedit-bench",),
    recipes="recipes",
)
