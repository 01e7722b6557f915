"""Loaders for the published GUI grounding and GUI-agent formats, each yielding :class:`zoo.Sample`.

Every grounding sample carries ``target = {"bbox": [x1, y1, x2, y2], "image_size": [w, h]}`` in
**original image pixels** and ``meta`` with ``platform``, ``element_type`` (``text``/``icon``),
``rate`` (GUI-G1's per-sample difficulty coefficient, 1 when the format has none) and the format's
own fields. The formats differ in their box convention, which is the classic source of silent
errors, so each loader names it:

=====================  ==========================================  =========================
format                 files                                        ``bbox`` in the file
=====================  ==========================================  =========================
ScreenSpot (SeeClick)  ``screenspot_{mobile,desktop,web}.json``    ``[x, y, w, h]`` pixels
ScreenSpot-v2          ``screenspot_{mobile,desktop,web}_v2.json`` ``[x, y, w, h]`` pixels
ScreenSpot-Pro         ``annotations/<app>_<platform>.json``       ``[x1, y1, x2, y2]`` pixels
GUI-G1 (GUI-R1-3K)     one ``.json`` list (or ``.jsonl``)          ``solution`` x1,y1,x2,y2
UI-S1 AndroidControl   ``.jsonl``, one trajectory per line         ``bbox`` x1,y1,x2,y2
=====================  ==========================================  =========================

Sources: SeeClick ``pretrain/screenspot_test.py`` (reads ``img_filename``, ``bbox`` as x,y,w,h,
``instruction``, ``data_type``, ``data_source``); OS-Copilot/ScreenSpot-v2 on the Hub (same fields,
``_v2`` file names, images in ``screenspotv2_image/``); likaixin2000/ScreenSpot-Pro-GUI-Grounding
``eval_screenspot_pro.py`` (``bbox`` x1,y1,x2,y2, ``img_size``, ``platform``, ``application``,
``group``, ``ui_type``, ``instruction_cn``); Yuqi-Zhou/GUI-G1 ``data/GUI-R1-3K.json`` and
``grpo_rec.py``; X-PLUG/MobileAgent ``UI-S1/datasets/*.jsonl`` and ``verl/utils/dataset/rl_dataset.py``.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from PIL import Image

from domains.gui.sop import sop_check_options
from zoo.data import Sample, path_under, read_records, record_field

logger = logging.getLogger(__name__)

SCREENSPOT_SPLITS = ("mobile", "desktop", "web")
_SCREENSPOT_IMAGE_DIRS = ("images", "screenspot_imgs", "screenspotv2_image", "screenspot_image", ".")


# --- small file helpers ----------------------------------------------------------------------


def _box(value: Any, convention: str, where: str) -> list[float]:
    """``[x1, y1, x2, y2]`` floats from a 4-number box written as ``xywh`` or ``xyxy``."""
    if not isinstance(value, (list, tuple)) or len(value) != 4:
        raise ValueError(f"{where}: bbox must be 4 numbers ({convention}), got {value!r}")
    x, y, a, b = _finite(value, f"{where}: bbox ({convention})")
    box = [x, y, x + a, y + b] if convention == "xywh" else [x, y, a, b]
    if box[2] < box[0] or box[3] < box[1]:
        raise ValueError(f"{where}: bbox {value!r} read as {convention} has negative width or height")
    return box


def _finite(values: Any, what: str) -> list[float]:
    """``values`` as floats, refusing anything that is not a finite number (JSON allows NaN and Infinity)."""
    try:
        numbers = [float(v) for v in values]
    except (TypeError, ValueError):
        raise ValueError(f"{what} must hold numbers, got {values!r}") from None
    if not all(math.isfinite(v) for v in numbers):
        raise ValueError(f"{what} must hold finite numbers, got {values!r}")
    return numbers


def _image_size(path: Path, where: str) -> list[int]:
    """``[width, height]`` from the image header (the pixels are not decoded)."""
    if not path.is_file():
        raise FileNotFoundError(
            f"{where}: image {str(path)!r} not found; pass image_dir= (or image_root=) pointing at the "
            "folder that holds the dataset's screenshots"
        )
    with Image.open(path) as img:
        return list(img.size)


def _limit(records: list[Any], limit: int | None) -> list[Any]:
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    return records if limit is None else records[:limit]


def _grounding_sample(
    sample_id: str, image: Path, instruction: str, bbox: list[float], size: list[int], meta: dict[str, Any]
) -> Sample:
    meta = {"rate": 1.0, **meta}
    return Sample(
        id=sample_id,
        images=(str(image),),
        prompt=instruction,
        target={"bbox": bbox, "image_size": [int(size[0]), int(size[1])]},
        meta=meta,
    )


# --- ScreenSpot and ScreenSpot-v2 ------------------------------------------------------------


def _screenspot_files(path: Path, split: str, version: str) -> list[tuple[str, Path]]:
    if path.is_file():
        platform = next((s for s in SCREENSPOT_SPLITS if s in path.stem), "unknown")
        return [(platform, path)]
    splits = SCREENSPOT_SPLITS if split == "all" else (split,)
    if any(s not in SCREENSPOT_SPLITS for s in splits):
        raise ValueError(f"split must be 'all' or one of {SCREENSPOT_SPLITS}, got {split!r}")
    suffix = "_v2" if version == "v2" else ""
    files = [(s, path / f"screenspot_{s}{suffix}.json") for s in splits]
    missing = [str(f) for _, f in files if not f.is_file()]
    if len(missing) == len(files):
        raise FileNotFoundError(
            f"no ScreenSpot{'-v2' if version == 'v2' else ''} annotation file in {str(path)!r} "
            f"(looked for {', '.join(Path(m).name for m in missing)})"
        )
    for m in missing:
        logger.warning("ScreenSpot split file %s is missing; skipping it", m)
    return [(s, f) for s, f in files if f.is_file()]


def _find_image_dir(root: Path, first: str, candidates: Iterable[str]) -> Path:
    for name in candidates:
        if (root / name / first).is_file():
            return root / name
    raise FileNotFoundError(
        f"could not find image {first!r} under {str(root)!r} (tried {', '.join(candidates)}); "
        "pass image_dir= pointing at the screenshots folder"
    )


def load_screenspot(
    path: str | Path,
    split: str = "all",
    image_dir: str | Path | None = None,
    version: str = "v1",
    limit: int | None = None,
) -> list[Sample]:
    """ScreenSpot (``version="v1"``) or ScreenSpot-v2 (``"v2"``) as grounding samples.

    ``path`` is the folder with the split files (or one split file); the platform comes from the
    file name because the records do not carry it. ``bbox`` is ``[x, y, w, h]`` in the files.
    """
    if version not in ("v1", "v2"):
        raise ValueError(f"version must be 'v1' or 'v2', got {version!r}")
    path = Path(path)
    root = path if path.is_dir() else path.parent
    samples: list[Sample] = []
    for platform, file in _screenspot_files(path, split, version):
        records = read_records(file)
        if not records:
            continue
        first = str(record_field(records[0], "img_filename", f"{file.name}[0]"))
        images = Path(image_dir) if image_dir is not None else _find_image_dir(root, first, _SCREENSPOT_IMAGE_DIRS)
        for i, rec in enumerate(records):
            where = f"{file.name}[{i}]"
            image = path_under(images, record_field(rec, "img_filename", where), where)
            element_type = str(record_field(rec, "data_type", where))
            meta = {
                "platform": platform,
                "element_type": element_type,
                "ui_type": element_type,
                "data_source": rec.get("data_source"),
                "source_file": file.name,
            }
            samples.append(
                _grounding_sample(
                    f"{file.stem}-{i}",
                    image,
                    str(record_field(rec, "instruction", where)),
                    _box(record_field(rec, "bbox", where), "xywh", where),
                    _image_size(image, where),
                    meta,
                )
            )
    return _limit(samples, limit)


def load_screenspot_v2(
    path: str | Path, split: str = "all", image_dir: str | Path | None = None, limit: int | None = None
) -> list[Sample]:
    """ScreenSpot-v2 (OS-Copilot): ScreenSpot's fields in ``screenspot_<split>_v2.json`` files."""
    return load_screenspot(path, split=split, image_dir=image_dir, version="v2", limit=limit)


# --- ScreenSpot-Pro ---------------------------------------------------------------------------


def load_screenspot_pro(
    path: str | Path, image_dir: str | Path | None = None, language: str = "en", limit: int | None = None
) -> list[Sample]:
    """ScreenSpot-Pro: ``path`` is the dataset root (``annotations/``, ``images/``), the annotations
    folder, or one annotation file. ``bbox`` is ``[x1, y1, x2, y2]``; ``img_size`` is ``[w, h]``.

    ``language="cn"`` uses ``instruction_cn``, as the benchmark's ``--language cn`` does.
    """
    if language not in ("en", "cn"):
        raise ValueError(f"language must be 'en' or 'cn', got {language!r}")
    path = Path(path)
    if path.is_file():
        files, root = [path], path.parent.parent
    else:
        ann = path / "annotations" if (path / "annotations").is_dir() else path
        files, root = sorted(ann.glob("*.json")), ann.parent
        if not files:
            raise FileNotFoundError(f"no ScreenSpot-Pro annotation .json files in {str(ann)!r}")
    images = Path(image_dir) if image_dir is not None else root / "images"
    key = "instruction" if language == "en" else "instruction_cn"
    samples = []
    for file in files:
        for i, rec in enumerate(read_records(file)):
            where = f"{file.name}[{i}]"
            size = record_field(rec, "img_size", where)
            if not isinstance(size, (list, tuple)) or len(size) != 2 or min(_finite(size, f"{where}: img_size")) <= 0:
                raise ValueError(f"{where}: img_size must be [width, height], positive, got {size!r}")
            ui_type = str(record_field(rec, "ui_type", where))
            meta = {
                "platform": record_field(rec, "platform", where),
                "element_type": ui_type,
                "ui_type": ui_type,
                "application": rec.get("application"),
                "group": rec.get("group"),
                "task_filename": file.stem,
            }
            samples.append(
                _grounding_sample(
                    str(rec.get("id", f"{file.stem}-{i}")),
                    path_under(images, record_field(rec, "img_filename", where), where),
                    str(record_field(rec, key, where)),
                    _box(record_field(rec, "bbox", where), "xyxy", where),
                    list(size),
                    meta,
                )
            )
    return _limit(samples, limit)


# --- GUI-G1 training records -------------------------------------------------------------------


def load_gui_g1_json(
    path: str | Path, image_root: str | Path | None = None, limit: int | None = None
) -> list[Sample]:
    """GUI-G1's training records ``{"image", "problem", "solution": [x1, y1, x2, y2], "rate"}``.

    ``image`` is relative to ``image_root`` (the trainer's ``--image_root``; default: the file's
    folder). ``solution`` is in original pixels. ``rate`` scales the sample's loss in GUI-G1's
    trainer; upstream requires it, records without one get 1. The question is ``problem`` as written: a
    recipe's ``model.entry`` (``gui-g1-3b``) wraps it in GUI-G1's template, as ``grpo_rec.py`` does.
    """
    path = Path(path)
    root = Path(image_root) if image_root is not None else path.parent
    samples = []
    for i, rec in enumerate(_limit(read_records(path), limit)):
        where = f"{path.name}[{i}]"
        image = path_under(root, record_field(rec, "image", where), where)
        meta = {"platform": rec.get("platform", "unknown"), "element_type": rec.get("ui_type", "unknown")}
        meta["rate"] = _finite([rec.get("rate", 1.0)], f"{where}: rate")[0]
        samples.append(
            _grounding_sample(
                f"{path.stem}-{i}",
                image,
                str(record_field(rec, "problem", where)),
                _box(record_field(rec, "solution", where), "xyxy", where),
                _image_size(image, where),
                meta,
            )
        )
    return samples


# --- UI-S1 AndroidControl trajectories ---------------------------------------------------------


def _check_options(step: dict[str, Any], where: str) -> dict[str, Any]:
    """``check_options`` as UI-S1 builds them for RL (``rl_dataset.py`` ``fix_line``), unless the
    file already has them (the evaluation file does, with a *list* of candidate boxes)."""
    if "check_options" in step:
        return copy.deepcopy(step["check_options"])
    action = copy.deepcopy(record_field(step, "action_content", where))
    if not isinstance(action, dict) or "action" not in action:
        raise ValueError(f"{where}: action_content must be an object with an 'action' key, got {action!r}")
    action["annotation"] = step.get("annotation", "GOOD")
    action["candidate_bbox"] = copy.deepcopy(action["bbox"]) if "bbox" in action else []
    return action


def _screenshot(path: str, image_root: Path | None) -> Path:
    """The published paths are absolute (``/datasets/AndroidControl/images/0_0.png``);
    ``image_root`` re-roots them by file name."""
    return image_root / Path(path).name if image_root is not None else Path(path)


def load_ui_s1_jsonl(
    path: str | Path,
    image_root: str | Path | None = None,
    limit: int | None = None,
    require_images: bool = True,
    instruction_level: str = "high",
) -> list[Sample]:
    """UI-S1 AndroidControl trajectories, one :class:`Sample` per step.

    ``target`` holds the step's ``action`` (original pixels), ``check_options`` (what the ``ui-s1``
    reward compares against, as the RL dataset builds them), ``sop_check_options`` (what UI-S1's SOP
    evaluation compares against, :func:`domains.gui.sop.sop_check_options`), ``num_steps`` and
    ``image_size``; ``meta`` holds the goal, step index,
    the previous actions, ``step_instruction`` and the expert ``thought`` (or ``motivation``) when the
    file has them. ``require_images=False`` keeps steps whose screenshot is absent (``image_size`` is
    then ``None``; the reward needs it). The prompt is the goal as the file writes it: a recipe's
    ``model.entry`` (``ui-s1-7b``) writes each step's turn as UI-S1 does
    (:func:`zoo.engines.vlm.contract.with_turn_contract`). ``instruction_level="low"`` (AndroidControl-Low)
    marks each step ``meta["instruction_level"] = "low"``: its turn shows ``step_instruction`` too, where the
    entry has a ``step-instruction`` template. ``limit`` counts steps.
    """
    if instruction_level not in ("high", "low"):
        raise ValueError(f"instruction_level must be 'high' or 'low', got {instruction_level!r}")
    path = Path(path)
    root = Path(image_root) if image_root is not None else None
    samples = []
    for t, line in enumerate(read_records(path)):
        goal = str(record_field(line, "goal", f"{path.name}[{t}]"))
        steps = record_field(line, "steps", f"{path.name}[{t}]")
        episode = line.get("episode_id", t)
        history: list[dict[str, Any]] = []
        for s, step in enumerate(steps):
            where = f"{path.name}[{t}].steps[{s}]"
            image = _screenshot(str(record_field(step, "screenshot", where)), root)
            size = _image_size(image, where) if require_images or image.is_file() else None
            action = copy.deepcopy(record_field(step, "action_content", where))
            samples.append(
                Sample(
                    id=f"{episode}-{s}",
                    images=(str(image),),
                    prompt=goal,
                    target={
                        "action": action,
                        "check_options": _check_options(step, where),
                        "sop_check_options": sop_check_options(step),
                        "num_steps": len(steps),
                        "image_size": size,
                    },
                    meta={
                        "platform": "android",
                        "episode_id": episode,
                        "step": s,
                        "history": copy.deepcopy(history),
                        "step_instruction": step.get("step_instruction"),
                        "thought": step.get("thought") or step.get("motivation") or "",
                        "goal": goal,
                        "is_successful": line.get("is_successful"),
                        "rate": 1.0,
                        **({"instruction_level": "low"} if instruction_level == "low" else {}),
                    },
                )
            )
            history.append(action)
    return _limit(samples, limit)


def load_synthetic_episodes(
    n: int = 16, seed: int = 0, size: int = 112, min_steps: int = 2, max_steps: int = 4,
    click_share: float | None = None,
) -> list[Sample]:
    """Seeded synthetic phone episodes (:mod:`domains.gui.episodes`), one sample per step, in
    :func:`load_ui_s1_jsonl`'s layout, the goal as each step's question (a recipe's ``model.entry`` writes the
    turns); ``click_share`` weights clicks in a training mix (:func:`~domains.gui.episodes.episode_samples`)."""
    from domains.gui.episodes import episode_samples

    return episode_samples(n=n, seed=seed, size=size, min_steps=min_steps, max_steps=max_steps,
                           click_share=click_share)  # fmt: skip


# --- synthetic screens --------------------------------------------------------------------------


def load_synthetic(
    n: int = 64,
    seed: int = 0,
    platform: str | None = None,
    task: str = "screens",
    size: int | None = None,
) -> list[Sample]:
    """Seeded synthetic screens (see :mod:`domains.gui.synthetic`); ``task="single"`` is the one-button
    localisation task the tiny checkpoint is trained on. Questions are raw instructions: a recipe's
    ``model.entry`` wraps them in its entry's template, as ``zoo.load`` does."""
    from domains.gui.synthetic import synthetic_samples

    return list(synthetic_samples(n=n, seed=seed, platform=platform, task=task, size=size))

