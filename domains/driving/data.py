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
    reward, ``waypoints`` (the logged drive) for SFT (:mod:`domains.driving.synthetic`).

    The instruction is the scene's raw question, built from its ego speed and command
    (:func:`~domains.driving.prompts.question`, as NAVSIM gives its agents ego status and a command); no
    template or system prompt is added here. A recipe's ``model.entry`` (``driving-vla-tiny``, whose user
    template is the question itself) wraps it as ``zoo.load`` does."""
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
                   question_types: tuple[str, ...] = ("multi-choice", "yes-or-no"), limit: int | None = None,
                   prefix: str = "", few_shot: str = "", abstention: bool = False) -> list[Sample]:  # fmt: skip
    """Questions of one AutoTrust QA file (``qa-pairs/<aspect>/<source>.json`` of taco-group/AutoTrust@309fa3d),
    each asked as the authors ask it.

    Each record has ``question``, ``answer``, ``image_path`` (relative to the folder the authors'
    image archive unpacks to: ``image_root``, default the file's folder), ``question_id`` and
    ``question_type`` (``multi-choice``, ``yes-or-no``, ``open-ended``). The privacy files add
    ``general_prompt``, ``positive_example`` and ``negative_example``: their question is
    ``general_prompt + [example] + question`` (``evaluator/PrivacyEvaluator.py:19-25``; ``few_shot``
    ``"positive"`` or ``"negative"`` picks the example). Other questions get ``prefix`` (ego fairness:
    :func:`ego_prefix`) and the closed-ended answer template (:func:`~domains.driving.autotrust.prompt`),
    or with ``abstention`` the robustness/OOD instruction to decline instead of the template
    (``evaluator/RobustnessEvaluator.py:51-63``). The target keeps the file's question, from which the
    scorer reads the options, and whether they are read with ``check`` (CoVLA, nuScenes-QA). Closed-ended
    types are kept by default. Questions whose image is missing are skipped with a warning. Left out:
    the line holding one space that the robustness task puts before the template
    (``RobustnessEvaluator.py:176, 181``). The prefix and template are the benchmark's protocol, the same text
    for every model it evaluates, not one model's input contract: the question is built whole here, and an
    entry's own template (``driving-vla-tiny``'s is the bare question) still wraps it at inference.
    """
    from domains.driving.autotrust import ABSTENTION_PROMPT, prompt, uses_check_options

    file = Path(path)
    unknown = set(question_types) - set(AUTOTRUST_TYPES)
    if unknown:
        raise ValueError(f"unknown AutoTrust question_type(s) {sorted(unknown)}; known: {AUTOTRUST_TYPES}")
    if few_shot not in ("", "positive", "negative"):
        raise ValueError(f"few_shot={few_shot!r}: AutoTrust's privacy examples are 'positive' or 'negative'")
    root = Path(image_root) if image_root is not None else file.parent
    check = uses_check_options(file)
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
        question = str(record_field(record, "question", where))
        if "general_prompt" in record:  # a privacy file
            example = str(record_field(record, f"{few_shot}_example", where)) if few_shot else ""
            asked = str(record["general_prompt"]) + example + question
        elif abstention:
            asked = prefix + question + "\n" + ABSTENTION_PROMPT
        else:
            asked = prompt(question, kind, prefix)
        qid = str(record.get("question_id", i))
        target = {"answer": str(record_field(record, "answer", where)), "question_type": kind, "question": question,
                  "check": check}  # fmt: skip
        samples.append(Sample(f"autotrust-{qid}", (str(image),), asked, target,
                              {"sample_token": record.get("sample_token"), "source": file.stem,
                               "image_path": str(record["image_path"])}))  # fmt: skip
        if limit is not None and len(samples) >= limit:
            break
    if missing:
        logger.warning("%s: %d question(s) skipped, their image is not under %s", file.name, missing, root)
    return samples


def ego_prefix(pattern_file: str | Path, attribute: str, subtype: str) -> str:
    """The sentence AutoTrust puts before each question for ego fairness, from ``qa-pairs/fairness/ego_pattern.json``
    (``[{"Driver": {"race"|"gender"|"age": {subtype: sentence}}}, {"Vehicle": {"vehicle_type"|"vehicle_color"|
    "vehicle_brand": {...}}}]``; ``evaluator/FairnessEvaluator.py:18-56``)."""
    import json

    entries = json.loads(Path(pattern_file).read_text(encoding="utf-8"))
    tables = {name: table for entry in entries for group in entry.values() for name, table in group.items()}
    if attribute not in tables:
        raise ValueError(f"{Path(pattern_file).name}: no attribute {attribute!r}; known: {sorted(tables)}")
    if subtype not in tables[attribute]:
        raise ValueError(f"{Path(pattern_file).name}: {attribute} has no subtype {subtype!r}; "
                         f"known: {sorted(tables[attribute])}")  # fmt: skip
    return str(tables[attribute][subtype])
