"""``qwen-image-references``: Adv-GRPO's reference images, a prompt -> image files JSON beside a folder of images.

Adv-GRPO sets reference images against its generations (the discriminator's positives). Its authors generate them with
Qwen-Image, 8 per training prompt, and release the PickScore set (``benzweijia/QWen_Image_PickScore``, ``images.tar``).
The format is their generator's output (``showlab/Adv-GRPO@8287f90:reference_imgs_scripts/qwen_generate_multi.py:41-78,
121-136``, README "Reference Image Generation"): PNGs named ``node{n}_rank{r}_{prompt index:05d}_{k}.png`` in one
folder and a JSON object mapping each prompt, as written in the prompt file, to its list of file names
(``prompt2img_node{n}.json``; the training run reads the merged ``config.json_path`` and opens each name under
``config.reference_image_path``, ``scripts/train_sd3_fast_pickscore.py:705-707, 774-778``).

One sample per prompt: its images are the files' paths (decoded when a discriminator step draws them), its prompt
the JSON key, which is what the engine matches against the training prompts. ``prompts_path`` keeps only the prompts
of a prompt file (the training split), since the whole released set is about 60 GB (README).
"""

from __future__ import annotations

import json
from pathlib import Path

from domains.image.prompt_list import MAX_PROMPT_FILE_BYTES, prompt_lines
from zoo.data import Sample, path_under
from zoo.model_files import read_bounded


def read_prompt_images(json_path: Path) -> dict[str, list[str]]:
    """The JSON's ``{prompt: [file name, ...]}``, refused in one sentence when it has another shape."""
    if not json_path.exists():
        raise FileNotFoundError(f"qwen-image-references: {str(json_path)!r} does not exist; give the prompt -> "
                                "images JSON the reference generator wrote (prompt2img_node0.json or a merge of them)")
    try:
        data = json.loads(read_bounded(json_path, MAX_PROMPT_FILE_BYTES, "a reference-set JSON"))
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError
        raise ValueError(f"qwen-image-references: {str(json_path)!r} is not valid JSON ({err})") from None
    well_formed = isinstance(data, dict) and all(
        isinstance(names, list) and names and all(isinstance(name, str) for name in names) for names in data.values()
    )
    if not well_formed or not data:
        raise ValueError(f"qwen-image-references: {str(json_path)!r} must be a non-empty JSON object mapping each "
                         "prompt to a non-empty list of image file names")
    return data


def load_qwen_image_references(json_path: str, image_dir: str | None = None, prompts_path: str | None = None,
                               n: int | None = None) -> list[Sample]:  # fmt: skip
    """One sample per prompt of ``json_path`` (in its order), holding the paths of that prompt's reference images.

    Args:
        json_path: the generator's ``prompt2img`` JSON (the authors' ``config.json_path``).
        image_dir: the folder its file names are relative to (the authors' ``config.reference_image_path``);
            ``None``: the JSON's own folder, where the generator writes both.
        prompts_path: a prompt file (one prompt a line); only its prompts are kept.
        n: keep the first ``n`` prompts (after ``prompts_path``).
    """
    if n is not None and n < 1:
        raise ValueError(f"qwen-image-references: n={n} must be >= 1 (or null for every prompt)")
    source = Path(json_path).expanduser()
    folder = Path(image_dir).expanduser() if image_dir else source.parent
    listed = read_prompt_images(source)
    if prompts_path is not None:
        wanted = {line for _, line in prompt_lines(prompts_path, "qwen-image-references prompts_path")}
        listed = {prompt: names for prompt, names in listed.items() if prompt in wanted}
    prompts = list(listed)[:n] if n is not None else list(listed)
    samples, missing = [], []
    for index, prompt in enumerate(prompts):
        paths = [path_under(folder, name, "qwen-image-references") for name in listed[prompt]]
        missing += [path for path in paths if not path.is_file()]
        samples.append(Sample(id=f"{index:05d}", images=tuple(str(p) for p in paths), prompt=prompt,
                              meta={"files": tuple(listed[prompt])}))  # fmt: skip
    if missing:
        raise FileNotFoundError(f"qwen-image-references: {len(missing)} listed image(s) are not in "
                                f"{str(folder)!r} (e.g. {missing[0].name!r}); extract the reference set there or pass "
                                "image_dir")
    if not samples:
        raise ValueError(f"qwen-image-references: no prompt of {str(source)!r} is left"
                         + (f" after keeping those of {prompts_path!r}" if prompts_path else ""))  # fmt: skip
    return samples
