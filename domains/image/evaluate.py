"""``zoo eval`` for image generation and editing: GenEval, OCR and GEdit-Bench, scored with the zoo's rewards.

* ``--data geneval``: GenEval's prompts (``--path`` its ``evaluation_metadata.jsonl``; without it a seeded
  GenEval-style set of ``per_tag`` prompts per tag, :func:`domains.image.geneval.prompt_set`), judged by the
  ``geneval`` reward (detector + colour classifier, GenEval's rules; ``detector`` option: GenEval's own
  mmdetection ``.pth``, else a Hub checkpoint of another training). Metrics: GenEval's overall score (mean
  of per-tag accuracies), each tag's accuracy and ``detector``, which detector scored. Images land as GenEval's
  own scorer reads them (``images/<index>/metadata.jsonl`` + ``samples/<n>.png``), so its official script can be
  run on them too.
* ``--data ocr``: text-rendering prompts (``--path`` a text file, one prompt per line, as Flow-GRPO's
  ``dataset/ocr/test.txt``, or a jsonl of ``{"prompt": ...}``; without it the zoo's small built-in set),
  scored by the ``ocr`` reward (Flow-GRPO's normalised edit distance). Metrics: mean OCR score
  (``ocr_accuracy``, what Flow-GRPO reports) and the share rendered exactly (``exact``).
* ``--data gedit-bench``: edits of GEdit-Bench's source images (``--path`` the dataset folder), judged by
  the ``editscore`` reward (``judge`` option: an entry name) as GEdit's scorer shows them: against ``input_image``,
  the edit resized to it (:mod:`domains.image.gedit`). Metrics: SC, PQ, O (0-10) as GEdit-Bench states them (the
  mean of all 11 task groups' means; ``None`` with ``missing_groups`` and a sentence when a group has no score),
  the intersection subset's, the means over samples (``sample_mean``) and each task type's. Edits and sources are
  written in GEdit-Bench's own layout (``images/fullset/<task>/<lang>/<key>.png`` and ``<key>_SRCIMG.png``).

Every run writes ``metrics.json``, ``predictions.jsonl`` and ``grid.png`` (:mod:`zoo.eval_results`).
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from domains.image import gedit, geneval
from domains.image.prompt_list import prompt_lines
from zoo.data import Sample
from zoo.eval_results import write_results

logger = logging.getLogger(__name__)

BENCHMARKS = ("geneval", "ocr", "gedit-bench")
#: The zoo's built-in OCR prompts (its own choice, for a run without ``--path``): scenes x texts.
OCR_SCENES = ('a storefront sign that says "{t}"', 'a chalkboard with the words "{t}" written on it',
              'a coffee mug printed with "{t}"', 'a neon sign reading "{t}" on a brick wall')  # fmt: skip
OCR_TEXTS = ("OPEN", "Hello World", "Fresh Bread", "No Parking", "Welcome Home", "Sale 50%", "Zoo", "Good Morning")


def ocr_prompts(n: int = 8, seed: int = 0) -> list[str]:
    """``n`` seeded built-in text-rendering prompts (the target is the quoted text)."""
    rng = random.Random(seed)
    return [rng.choice(OCR_SCENES).format(t=rng.choice(OCR_TEXTS)) for _ in range(n)]


def load_ocr_prompts(path: str | Path, limit: int | None = None) -> list[str]:
    """Prompts from a text file (one a line) or a jsonl of ``{"prompt": ...}`` rows (read by :func:`prompt_lines`)."""
    lines = prompt_lines(path, "--data ocr --path")
    if Path(path).suffix != ".jsonl":
        prompts = [line for _, line in lines]
        return prompts[:limit] if limit is not None else prompts
    prompts = []
    for number, line in lines[:limit]:
        row = json.loads(line)
        if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
            raise ValueError(f"{path}:{number}: a jsonl prompt row is an object with a \"prompt\" string")
        prompts.append(row["prompt"])
    return prompts


def _generate(pipe: Any, prompts: Sequence[str], per_prompt: int, seed: int, batch_size: int,
              sampling: dict[str, Any]) -> list[list[Any]]:  # fmt: skip
    """``per_prompt`` images per prompt, seeded per batch (``seed + first index``) so a run is repeatable."""
    out: list[list[Any]] = []
    for start in tqdm(range(0, len(prompts), batch_size), desc="generate", disable=None, leave=False):
        batch = list(prompts[start : start + batch_size])
        images = pipe(batch, seed=seed + start, num_images_per_prompt=per_prompt, **sampling).images
        out += [images[i * per_prompt : (i + 1) * per_prompt] for i in range(len(batch))]
    return out


def _score(reward: Any, images: Sequence[Any], targets: Sequence[dict[str, Any]]) -> list[Any]:
    from rewards.base import RewardSample

    return reward(list(images), [RewardSample(target=t) for t in targets])


def _reward(name_or_reward: Any) -> Any:
    if not isinstance(name_or_reward, str):
        return name_or_reward
    import rewards

    return rewards.get(name_or_reward)


def _labelled_grid(images: Sequence[Any], labels: Sequence[str], path: Path, columns: int = 4) -> Path:
    from zoo.visualize import draw_prediction, grid

    drawn = [draw_prediction(im.convert("RGB").resize((256, 256)), label=text) for im, text in zip(images, labels)]
    grid(drawn, columns=min(columns, len(drawn)), cell=256).save(path)
    return path


def run_geneval(pipe: Any, rows: Sequence[dict[str, Any]], out_dir: Path, *, reward: Any, images_per_prompt: int,
                seed: int, batch_size: int, sampling: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:  # fmt: skip
    images = _generate(pipe, [r["prompt"] for r in rows], images_per_prompt, seed, batch_size, sampling)
    flat = [(i, n, im) for i, ims in enumerate(images) for n, im in enumerate(ims)]
    results = _score(reward, [im for _, _, im in flat], [rows[i] for i, _, _ in flat])
    out_rows = []
    for (i, n, image), result in zip(flat, results):
        folder = out_dir / "images" / f"{i:05d}"
        (folder / "samples").mkdir(parents=True, exist_ok=True)
        geneval.write_metadata([rows[i]], folder / "metadata.jsonl")
        image.save(folder / "samples" / f"{n:04d}.png")
        out_rows.append({"id": f"{i:05d}/{n:04d}", "tag": rows[i]["tag"], "prompt": rows[i]["prompt"],
                         "correct": bool(result.score), "reason": result.error or ""})  # fmt: skip
    labels = [f"{'OK' if r['correct'] else 'NO'} {r['prompt'].removeprefix('a photo of ')}" for r in out_rows]
    _labelled_grid([im for _, _, im in flat][:16], labels[:16], out_dir / "grid.png")
    return geneval.summarise(out_rows), out_rows


def run_ocr(pipe: Any, prompts: Sequence[str], out_dir: Path, *, reward: Any, seed: int, batch_size: int,
            sampling: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:  # fmt: skip
    images = [ims[0] for ims in _generate(pipe, prompts, 1, seed, batch_size, sampling)]
    results = _score(reward, images, [{"prompt": p} for p in prompts])
    rows = [{"id": str(i), "prompt": p, "score": r.score, "error": r.error} for i, (p, r) in enumerate(zip(prompts, results))]
    scored = [r["score"] for r in rows if r["score"] is not None]
    metrics = {"n": len(rows), "scored": len(scored),
               "ocr_accuracy": sum(scored) / len(scored) if scored else None,
               "exact": sum(s == 1.0 for s in scored) / len(scored) if scored else None}  # fmt: skip
    labels = [f"{r['score'] if r['score'] is None else round(r['score'], 2)} {_ocr_caption(r['prompt'])}" for r in rows]
    _labelled_grid(images[:16], labels[:16], out_dir / "grid.png")
    return metrics, rows


def _ocr_caption(prompt: str) -> str:
    """The quoted target of an OCR prompt for a grid caption (the whole prompt when none)."""
    from domains.image.ocr import quoted_target

    return quoted_target(prompt) or prompt


def run_gedit(pipe: Any, samples: Sequence[Sample], out_dir: Path, *, reward: Any, seed: int,
              sampling: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:  # fmt: skip
    """Edit ``images[-1]`` of each sample and judge the edit, resized to ``images[0]`` (``input_image``), against it.

    Edits are written as produced to ``images/fullset/<task>/<lang>/<key>.png`` beside the source as
    ``<key>_SRCIMG.png``: GEdit's layout (generate_image_example.py:48-54), so their scorer reads the folder too.
    """
    from zoo.images import load_image

    if "image" not in getattr(pipe, "call_parameters", {"image"}):  # a zoo pipeline says; another is trusted
        raise ValueError(f"{getattr(pipe, 'entry', pipe)} takes no input image: GEdit-Bench needs an editing pipeline "
                         "(FluxKontextPipeline, QwenImageEditPipeline, ...)")  # fmt: skip
    sources, judged = [], []
    for sample in tqdm(samples, desc="edit", disable=None, leave=False):
        source = load_image(sample.images[0])
        image = pipe(sample.target["instruction"], image=load_image(sample.images[-1]), seed=seed, **sampling).images[0]
        folder = out_dir / "images" / "fullset" / sample.meta["task_type"] / sample.meta["language"]
        folder.mkdir(parents=True, exist_ok=True)
        image.save(folder / f"{sample.meta['key']}.png")
        (folder / f"{sample.meta['key']}_SRCIMG.png").write_bytes(sample.images[0])
        sources.append(source)
        judged.append(gedit.judged_edit(image, source))
    results = _score(reward, judged, [{"instruction": s.target["instruction"], "image": src} for s, src in zip(samples, sources)])
    rows = []
    for sample, result in zip(samples, results):
        c = result.components
        rows.append({"id": sample.id, "task_type": sample.meta["task_type"], "language": sample.meta["language"],
                     "instruction": sample.target["instruction"], "intersection": sample.meta["intersection"],
                     "sc": c.get("sc"), "pq": c.get("pq"), "overall": c.get("overall") if result.ok else None,
                     "error": result.error})  # fmt: skip
    n = min(8, len(samples))
    from zoo.visualize import grid

    grid(sources[:n] + judged[:n], columns=n, cell=256).save(out_dir / "grid.png")
    return gedit.summarise(rows), rows


def run(pipe: Any, data: str, path: str | None, out_dir: str | Path, limit: int | None = None, *, seed: int = 0,
        reward: str | None = None, images_per_prompt: int = 4, per_tag: int = 4, batch_size: int = 4,
        judge: str = "editscore-7b", num_pass: int = 1, language: str = "en", intersection_only: bool = False,
        edit_source: str = gedit.SOURCE, detector: str | None = None, **sampling: Any) -> dict[str, Any]:  # fmt: skip
    """Evaluate a text-to-image or editing pipeline; options come as ``--option key=value``.

    Args:
        seed: first generation seed. reward: registry name replacing the benchmark's reward.
        images_per_prompt: GenEval images per prompt (their protocol: 4). per_tag: built-in GenEval prompts per tag.
        detector: GenEval's detector weights: the path of GenEval's mmdetection ``.pth`` (their detector, converted
            on load), or a transformers repository; default ``facebook/mask2former-swin-small-coco-instance``, which
            is not GenEval's checkpoint. ``metrics.json`` records which detector scored.
        judge, num_pass: the EditScore judge entry and its passes (GEdit-Bench). language, intersection_only:
            the GEdit-Bench subset (``en``/``cn``/``all``; the intersection subset alone). edit_source: the image
            the editor edits, ``input_image`` (EditScore's runs) or ``input_image_raw`` (GEdit's example); the judge
            always compares against ``input_image``.
        **sampling: the pipeline's sampling settings over the entry's (``num_inference_steps=28``).
    """
    if path and data in ("geneval", "ocr") and not Path(path).is_file():
        # a FIFO would block the read forever and /dev/zero would fill memory: only regular files are read
        raise ValueError(f"--data {data} --path {path}: not a regular file (give the prompt file itself)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if data == "geneval":
        rows = [s.target for s in geneval.load_samples(path, limit, per_tag, seed)]
        scorer = _reward(reward or "geneval")
        if detector:
            if not callable(getattr(scorer, "with_options", None)):
                raise ValueError(f"--option detector sets the geneval rewards' detector; {reward!r} takes none")
            scorer = scorer.with_options(detector=detector)
        metrics, out_rows = run_geneval(pipe, rows, out, reward=scorer, images_per_prompt=images_per_prompt, seed=seed,
                                        batch_size=batch_size, sampling=sampling)  # fmt: skip
        metrics["detector"] = getattr(scorer, "detector_source", f"{type(scorer).__name__} (a reward passed in)")
    elif data == "ocr":
        prompts = load_ocr_prompts(path, limit) if path else ocr_prompts(limit or 8, seed)
        metrics, out_rows = run_ocr(pipe, prompts, out, reward=_reward(reward or "ocr"), seed=seed,
                                     batch_size=batch_size, sampling=sampling)  # fmt: skip
    elif data == "gedit-bench":
        if not path:
            raise ValueError("--data gedit-bench needs --path: the stepfun-ai/GEdit-Bench dataset folder")
        samples = gedit.load_gedit(path, limit, language=language, intersection_only=intersection_only,
                                   edit_source=edit_source)
        if not samples:
            raise ValueError(f"no GEdit-Bench rows in {path} for language {language!r}")
        if reward:
            editscore = _reward(reward)
        else:
            from domains.image.editscore_reward import EditScoreReward

            editscore = EditScoreReward(judge, num_pass=num_pass)
        metrics, out_rows = run_gedit(pipe, samples, out, reward=editscore, seed=seed, sampling=sampling)
    else:
        raise ValueError(f"unknown --data {data!r} for image models; choose {', '.join(BENCHMARKS)}")
    metrics = {"model": getattr(getattr(pipe, "entry", None), "name", None), "data": data, "seed": seed, **metrics}
    write_results(out, metrics, out_rows)
    logger.info("%s on %s -> %s", metrics["model"], data, out)
    return metrics
