"""Patho-CLIP's evaluations as its authors run them: zero-shot accuracy and image-text retrieval Recall@K.

Source of every rule: Wenchuan-Zhang/Patho-R1@3494816, ``clip/val/zero_shot_evaluation.py`` and
``clip/val/retrieval_evaluation.py``. ``zoo eval patho-clip-b --data clip-zero-shot --path FOLDER
--option prompt=PROMPT.json`` and ``zoo eval patho-clip-b --data clip-retrieval --path captions.json``
reach them through :func:`domains.medical.evaluate.evaluate`.

* ``clip-zero-shot``: ``--path`` is an image folder laid out for torchvision's ``ImageFolder`` (one
  sub-folder per class; classes in sorted folder order, zero_shot_evaluation.py:218-221); the prompt
  file is the authors' ``{"0": {"classnames": {folder: [names]}, "templates": [...]}}``
  (zero_shot_evaluation.py:225-231) with ``CLASSNAME`` where the name goes. Each class embedding is
  the normalised mean over its names x templates (:meth:`~zoo.pipelines.clip.ClipPipeline.class_embeddings`);
  the prediction is the argmax of ``logit_scale`` x cosine similarity; the metric is accuracy.
* ``clip-retrieval``: ``--path`` is the authors' captions JSON ``{"0": {"uuid", "caption"}, ...}``
  (read in numeric key order), images named ``<uuid>.<ext>`` in ``images_dir`` (default: the JSON's
  folder); entries without an image, or whose image does not verify, are left out
  (retrieval_evaluation.py:122-183). Recall@K (K = 1, 5, 10, 20 by default, line 78) is the share, in
  percent, of items whose own pair is among the K most similar. The authors' script computes it image
  -> text when it runs on a GPU with fewer than 10,000 pairs and text -> image otherwise (lines 250-282,
  although it prints "Text-to-Image"): both directions are reported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image

BENCHMARKS = ("clip-zero-shot", "clip-retrieval")
#: ``--recall-k`` default of the authors' script (retrieval_evaluation.py:78).
RECALL_K = (1, 5, 10, 20)
#: Image files the authors' retrieval loader pairs with captions (retrieval_evaluation.py:149).
RETRIEVAL_EXTENSIONS = {".jpg", ".jpeg", ".png", ".bmp", ".tiff", ".webp"}
#: The authors' batch sizes: 64 images (zero_shot_evaluation.py:156, retrieval_evaluation.py:52).
IMAGE_BATCH = 64
_OPTIONS = {"clip-zero-shot": {"prompt"}, "clip-retrieval": {"images_dir", "recall_k"}}

Row = dict[str, Any]


def _names(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, str) for item in value)


def read_prompt_file(path: str | Path) -> tuple[dict[str, list[str]], list[str]]:
    """Class folder -> its names, and the templates, from the authors' prompt JSON
    (zero_shot_evaluation.py:225-228: ``json.load(f)['0']``, ``classnames``, ``templates``)."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"prompt file not found: {file}")
    shape = '{"0": {"classnames": {class folder: [names]}, "templates": ["... CLASSNAME ..."]}}'
    try:
        entry = json.loads(file.read_text(encoding="utf-8"))["0"]
        names, templates = entry["classnames"], entry["templates"]
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{file} must be {shape}, as the Patho-CLIP authors' prompt files are ({err!r})") from err
    if not (isinstance(names, dict) and all(_names(v) for v in names.values()) and _names(templates)):
        raise ValueError(f"{file} must be {shape}: lists of strings for each class and for the templates")
    return names, templates


def image_folder(root: str | Path) -> tuple[list[str], list[tuple[str, int]]]:
    """Class names and (image path, class index) pairs as torchvision's ``ImageFolder`` lists them
    (zero_shot_evaluation.py:218): classes are the sorted sub-folders, files in sorted walk order."""
    from torchvision.datasets import ImageFolder

    try:
        folder = ImageFolder(str(root))
    except (FileNotFoundError, NotADirectoryError) as err:
        raise ValueError(f"{root}: an image folder with one sub-folder of images per class is needed ({err})") from err
    return folder.classes, folder.samples


def _require_clip(pipe: Any, name: str) -> None:
    from zoo.pipelines.clip import ClipPipeline

    if not isinstance(pipe, ClipPipeline):
        raise ValueError(  # noqa: TRY004 - `zoo eval` reports a ValueError as one line
            f"{name} scores a CLIP model's embeddings (e.g. zoo.load('patho-clip-b')); got {type(pipe).__name__}"
        )


def zero_shot(
    pipe: Any, root: str | Path, prompt: str | Path, limit: int | None = None
) -> tuple[dict[str, Any], list[Row]]:
    """Zero-shot accuracy of ``pipe`` on an image folder with the authors' prompt file."""
    classes, samples = image_folder(root)
    names, templates = read_prompt_file(prompt)
    missing = [c for c in classes if c not in names]
    if missing:  # the authors' classnames_dict[...] raises KeyError here (zero_shot_evaluation.py:231)
        raise ValueError(f"{prompt} names no class for the folder(s) {missing}; its classnames cover {sorted(names)}")
    samples = samples[:limit] if limit else samples
    weights = pipe.class_embeddings([names[c] for c in classes], templates)
    images = pipe.embed_images([p for p, _ in samples], batch_size=IMAGE_BATCH)
    predictions = pipe.logits(images, weights).argmax(dim=-1).tolist()
    rows = [{"image": p, "truth": classes[y], "prediction": classes[k], "correct": k == y}
            for (p, y), k in zip(samples, predictions)]  # fmt: skip
    acc = sum(r["correct"] for r in rows) / len(rows) if rows else None
    return {"acc": acc, "n": len(rows), "classes": len(classes), "templates": len(templates)}, rows


def read_captions(
    captions_json: str | Path, images_dir: str | Path, limit: int | None = None
) -> tuple[list[str], list[Path], int]:
    """Captions and their images, and how many entries had no (valid) image, as the authors' loader pairs
    them (retrieval_evaluation.py:122-183): entries in numeric key order, those without ``uuid`` or
    ``caption`` skipped, images found by file stem, unreadable ones left out."""
    file, folder = Path(captions_json), Path(images_dir)
    if not file.is_file() or not folder.is_dir():
        raise FileNotFoundError(f"captions JSON {file} and images folder {folder} must both exist")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        entries = sorted(data.items(), key=lambda item: int(item[0]))
    except (ValueError, AttributeError) as err:
        raise ValueError(f'{file} must map numeric keys to {{"uuid", "caption"}} entries ({err})') from err
    pairs = [(e["uuid"], e["caption"]) for _, e in entries if isinstance(e, dict) and "uuid" in e and "caption" in e]
    by_stem = {p.stem: p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in RETRIEVAL_EXTENSIONS}
    captions, paths, missing = [], [], 0
    for uid, caption in pairs:
        try:
            with Image.open(by_stem[uid]) as image:
                image.verify()
        except (KeyError, OSError, SyntaxError):  # no such image, or PIL could not verify it
            missing += 1
        else:
            captions.append(caption)
            paths.append(by_stem[uid])
        if limit and len(paths) >= limit:
            break
    if not paths:
        raise ValueError(f"no caption of {file} has a readable image in {folder}")
    return captions, paths, missing


def recall_at_k(similarity: torch.Tensor, ks: Sequence[int]) -> dict[str, float]:
    """Percent of rows ``i`` whose column ``i`` is among the row's top K, for each K
    (retrieval_evaluation.py:263-267 and 278-282, then line 285)."""
    n = similarity.shape[0]
    top = similarity.topk(max(ks), dim=1, largest=True).indices
    hits = top == torch.arange(n, device=top.device).unsqueeze(1)
    return {f"R@{k}": int(hits[:, :k].any(dim=1).sum()) / n * 100 for k in ks}


def retrieval(
    pipe: Any, captions_json: str | Path, images_dir: str | Path | None = None, limit: int | None = None,
    recall_k: Sequence[int] = RECALL_K,
) -> tuple[dict[str, Any], list[Row]]:  # fmt: skip
    """Image -> text and text -> image Recall@K of ``pipe`` on the authors' captions JSON."""
    ks = [int(k) for k in recall_k]
    if not ks or min(ks) < 1:
        raise ValueError(f"recall_k={list(recall_k)}: give positive K values, e.g. [1, 5, 10, 20]")
    captions, paths, missing = read_captions(captions_json, images_dir or Path(captions_json).parent, limit)
    if max(ks) > len(paths):
        raise ValueError(f"Recall@{max(ks)} needs at least {max(ks)} image-caption pairs, found {len(paths)}; "
                         "pass --option recall_k=[...] with smaller K")  # fmt: skip
    texts = pipe.embed_texts(captions)
    images = pipe.embed_images(paths, batch_size=IMAGE_BATCH)
    metrics = {"image_to_text": recall_at_k(images @ texts.T, ks), "text_to_image": recall_at_k(texts @ images.T, ks),
               "n": len(paths), "left_out": missing}  # fmt: skip
    rows = [{"image": str(p), "caption": c} for p, c in zip(paths, captions)]
    return metrics, rows


def evaluate(
    name: str, pipe: Any, path: str | None, limit: int | None, options: Mapping[str, Any]
) -> tuple[dict[str, Any], list[Row]]:
    """Run the CLIP benchmark ``name`` with ``zoo eval``'s ``--option`` values."""
    _require_clip(pipe, name)
    unknown = sorted(set(options) - _OPTIONS[name])
    if unknown:
        raise ValueError(f"{name} takes the options {sorted(_OPTIONS[name])}, not {unknown}")
    if not path:
        what = "the image folder" if name == "clip-zero-shot" else "the captions JSON (or its folder)"
        raise ValueError(f"{name} needs --path: {what}")
    if name == "clip-zero-shot":
        if not options.get("prompt"):
            raise ValueError("clip-zero-shot needs --option prompt=PROMPT.json (the authors' prompt file format)")
        return zero_shot(pipe, path, options["prompt"], limit)
    captions = Path(path) / "captions.json" if Path(path).is_dir() else Path(path)
    return retrieval(pipe, captions, options.get("images_dir"), limit, options.get("recall_k", RECALL_K))
