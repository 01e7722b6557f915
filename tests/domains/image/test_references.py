"""``qwen-image-references`` on files written as Adv-GRPO's reference generator writes them.

The layout is ``showlab/Adv-GRPO@8287f90:reference_imgs_scripts/qwen_generate_multi.py:41-78, 121-136``: PNGs named
``node{n}_rank{r}_{i:05d}_{k}.png`` in the output folder and ``prompt2img_node{n}.json`` there, mapping each prompt
to its file names (the README's example). The run opens ``reference_image_path / name`` for the prompt's names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from zoo.data import load_dataset
from zoo.images import load_image

PROMPTS = ["middle-aged man with a beard giving a thumbs up, upper body, green fields in the background",
           "king charles spaniel with planets for eyes, ethereal, midjourney style lighting and shadows"]  # fmt: skip


def write_generator_output(folder: Path, variations: int = 3, rank: int = 3) -> Path:
    """What ``qwen_generate_multi.py`` leaves in ``--output_dir`` for ``PROMPTS`` (tiny images, distinct colours)."""
    folder.mkdir(parents=True, exist_ok=True)
    listing = {}
    for i, prompt in enumerate(PROMPTS):
        names = [f"node0_rank{rank}_{i:05d}_{k}.png" for k in range(variations)]
        for k, name in enumerate(names):
            Image.new("RGB", (8, 8), (40 * i, 60 * k, 200)).save(folder / name)
        listing[prompt] = names
    path = folder / "prompt2img_node0.json"
    path.write_text(json.dumps(listing, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def test_each_prompt_gets_its_own_files_in_the_json_order(tmp_path: Path) -> None:
    path = write_generator_output(tmp_path / "out")
    samples = list(load_dataset("qwen-image-references", json_path=str(path)))
    assert [s.question for s in samples] == PROMPTS
    assert [Path(p).name for p in samples[1].images] == [f"node0_rank3_00001_{k}.png" for k in range(3)]
    assert load_image(samples[1].images[2]).getpixel((0, 0)) == (40, 120, 200)  # prompt 1, variation 2
    assert [s.question for s in load_dataset("qwen-image-references", json_path=str(path), n=1)] == PROMPTS[:1]


def test_images_elsewhere_and_a_training_split_filter(tmp_path: Path) -> None:
    path = write_generator_output(tmp_path / "images")
    moved = tmp_path / "meta" / "prompt2img_merged_pickscore.json"  # the run's config.json_path, apart from the images
    moved.parent.mkdir()
    moved.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    split = tmp_path / "train.txt"
    split.write_text(f"{PROMPTS[1]}\na prompt with no references\n", encoding="utf-8")
    samples = list(load_dataset("qwen-image-references", json_path=str(moved), image_dir=str(tmp_path / "images"),
                                prompts_path=str(split)))  # fmt: skip
    assert [s.question for s in samples] == [PROMPTS[1]] and len(samples[0].images) == 3
    with pytest.raises(FileNotFoundError, match=r"3 listed image\(s\) are not in .*pass image_dir"):
        load_dataset("qwen-image-references", json_path=str(moved), prompts_path=str(split))


@pytest.mark.parametrize("content, message", [
    ("[1, 2]", "must be a non-empty JSON object"),
    ('{"a cat": []}', "must be a non-empty JSON object"),
    ('{"a cat": ["ok.png", 3]}', "must be a non-empty JSON object"),
    ("{not json", "is not valid JSON"),
])  # fmt: skip
def test_malformed_listings_are_named(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "prompt2img_node0.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_dataset("qwen-image-references", json_path=str(path))


def test_names_that_leave_the_folder_and_absent_files_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "prompt2img_node0.json"
    path.write_text(json.dumps({"a cat": ["../secret.png"]}), encoding="utf-8")
    with pytest.raises(ValueError, match="points outside the data folder"):
        load_dataset("qwen-image-references", json_path=str(path))
    with pytest.raises(FileNotFoundError, match="prompt -> images JSON"):
        load_dataset("qwen-image-references", json_path=str(tmp_path / "absent.json"))
    with pytest.raises(ValueError, match="n=0 must be >= 1"):
        load_dataset("qwen-image-references", json_path=str(write_generator_output(tmp_path / "out")), n=0)


def test_the_run_keeps_the_paths_and_decodes_only_what_a_step_draws(tmp_path: Path) -> None:
    """The engine holds the listed files' paths, not their pixels (the authors' full set does not fit in memory
    decoded); a draw decodes each image it picks once, resized bilinearly as the authors' ``transforms.Resize``
    (showlab/Adv-GRPO@8287f90:scripts/train_sd3_fast_pickscore.py:792-795)."""
    import numpy as np
    import torch

    from tests.engines.test_diffusion_engine import ADV, recipe
    from zoo.engines.diffusion.setup import build_run

    folder, noise = tmp_path / "references", np.random.default_rng(0)
    folder.mkdir()
    listing = {"a noisy square": [f"node0_rank0_00000_{k}.png" for k in range(4)], "a noisy circle": ["other.png"]}
    for name in [*listing["a noisy square"], "other.png"]:
        Image.fromarray(noise.integers(0, 256, (20, 20, 3), dtype=np.uint8)).save(folder / name)
    (folder / "prompt2img_node0.json").write_text(json.dumps(listing), encoding="utf-8")
    run = build_run(recipe(*ADV, "algorithm.reference_images.name=qwen-image-references",
                           f"algorithm.reference_images.kwargs={{json_path: {folder / 'prompt2img_node0.json'}}}",
                           "algorithm.discriminator_backbone=tiny:dinov2", 'prompts.train=["a noisy square"]'),
                    tmp_path / "run")  # fmt: skip
    references = run.extra["discriminator"].references
    assert [Path(s).name for s in references.sources] == [*listing["a noisy square"], "other.png"]
    decoded, decode = [], references.decode
    references.decode = lambda source: decoded.append(Path(source).name) or decode(source)
    drawn = references.draw(["a noisy square"] * 6, torch.Generator().manual_seed(0))
    assert len(decoded) == len(set(decoded)) < 6 and set(decoded) <= set(listing["a noisy square"])
    size = drawn.shape[-1]
    theirs = {name: torch.from_numpy(np.array(Image.open(folder / name).convert("RGB").resize(
        (size, size), Image.Resampling.BILINEAR))).permute(2, 0, 1).float() / 255 for name in decoded}  # fmt: skip
    assert size != 20 and all(any(torch.equal(image, t) for t in theirs.values()) for image in drawn)
