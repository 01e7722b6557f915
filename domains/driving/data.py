"""Dataset loaders of the driving domain: synthetic bird's-eye scenes and AutoTrust QA files."""

from __future__ import annotations

import logging
from pathlib import Path

from domains.driving.prompts import question
from zoo.data import Sample, path_under, read_records, record_field

logger = logging.getLogger(__name__)

#: Held-out scenes (``zoo eval --data synthetic``) draw seeds from here; training loaders stay below it.
EVAL_SEED = 7_000_000
AUTOTRUST_TYPES = ("multi-choice", "yes-or-no", "open-ended")


def synthetic_driving(
    n: int = 64, seed: int = 0, size: int = 112, kinds: tuple[str, ...] | None = None
) -> list[Sample]:
    """``n`` seeded scenes (seeds ``seed .. seed + n - 1``): the bird's-eye image, the instruction, and
    the target: ``scene`` and ``reference`` (the planner proposal EP is normalised against) for the
    reward, ``waypoints`` (the logged drive) for SFT (:mod:`domains.driving.synthetic`)."""
    from domains.driving.synthetic import KINDS, make_scene, render

    kinds = tuple(kinds or KINDS)
    samples = []
    for i in range(n):
        scene_seed = seed + i
        scene, logged, planner = make_scene(scene_seed, kinds[scene_seed % len(kinds)])
        target = {"scene": scene.to_dict(), "reference": planner.round(3).tolist(), "waypoints": logged.round(3).tolist()}
        samples.append(Sample(f"driving-{scene_seed}", (render(scene, size),), question(scene.ego_speed, scene.command),
                              target, {"kind": kinds[scene_seed % len(kinds)], "seed": scene_seed}))  # fmt: skip
    return samples


def load_autotrust(path: str | Path, image_root: str | Path | None = None,
                   question_types: tuple[str, ...] = ("multi-choice", "yes-or-no"),
                   limit: int | None = None) -> list[Sample]:  # fmt: skip
    """Questions of one AutoTrust QA file (``qa-pairs/<aspect>/<source>.json`` of taco-group/AutoTrust).

    Each record has ``question``, ``answer``, ``image_path`` (relative to the folder the authors'
    image archive unpacks to: ``image_root``, default the file's folder), ``question_id`` and
    ``question_type`` (``multi-choice``, ``yes-or-no``, ``open-ended``). Closed-ended types are kept
    by default, the ones AutoTrust's accuracy script scores. Questions whose image is missing are
    skipped with a warning.
    """
    file = Path(path)
    unknown = set(question_types) - set(AUTOTRUST_TYPES)
    if unknown:
        raise ValueError(f"unknown AutoTrust question_type(s) {sorted(unknown)}; known: {AUTOTRUST_TYPES}")
    root = Path(image_root) if image_root is not None else file.parent
    samples, missing = [], 0
    for i, record in enumerate(read_records(file)):
        where = f"{file.name}[{i}]"
        kind = record_field(record, "question_type", where)
        if kind not in AUTOTRUST_TYPES:
            raise ValueError(f"{where}: question_type {kind!r} is not one of {AUTOTRUST_TYPES}")
        if kind not in question_types:
            continue
        image = path_under(root, record_field(record, "image_path", where), where)
        if not image.is_file():
            missing += 1
            continue
        qid = str(record.get("question_id", i))
        target = {"answer": str(record_field(record, "answer", where)), "question_type": kind}
        samples.append(Sample(f"autotrust-{qid}", (str(image),), str(record_field(record, "question", where)),
                              target, {"sample_token": record.get("sample_token"), "source": file.stem}))  # fmt: skip
        if limit is not None and len(samples) >= limit:
            break
    if missing:
        logger.warning("%s: %d question(s) skipped, their image is not under %s", file.name, missing, root)
    return samples
