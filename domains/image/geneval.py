"""GenEval: compositional text-to-image prompts, and the rules that judge an image from its detected objects.

GenEval (Ghosh et al., arXiv 2310.11513; github djghosh13/geneval, ``evaluation/evaluate_images.py`` at
commit 16f1681) describes every prompt by one JSON line of ``prompts/evaluation_metadata.jsonl``::

    {"tag": "position", "prompt": "a photo of a cow right of a laptop",
     "include": [{"class": "laptop", "count": 1}, {"class": "cow", "count": 1, "position": ["right of", 0]}]}

Tags: ``single_object``, ``two_object``, ``counting`` (with an ``exclude`` of ``count + 1``), ``colors``,
``position``, ``color_attr``. :func:`prompt_set` writes prompts of those six kinds in that format, from the
80 COCO classes under GenEval's names; :func:`load_metadata` reads the published file.

Judging (:func:`judge`, the evaluation metric) is their ``evaluate``: ``include`` clauses must all hold (at least ``count`` objects
of the class, the ``count`` most confident of them of the asked colour, each of them in the asked relation to
every object of the clause it refers to); any ``exclude`` clause that holds fails the image. Detections are
kept as in their ``evaluate_image``: score above 0.3 (0.9 for ``counting``), most confident first, at most 16
per class, greedy non-maximum suppression off by default (``max_overlap=1``). The relation of two boxes is
their ``relative_position`` with ``POSITION_THRESHOLD = 0.1``.

Their detector is mmdetection's Mask2Former Swin-S (COCO) checkpoint and their colour classifier is CLIP ViT-L/14
zero-shot over ten colours with three templates, on the object cut out by its mask on grey ``#999`` and
cropped to its box. Flow-GRPO does not train on that 1/0 verdict but on the partial-credit score of its
reward server (:func:`partial_credit`). Here both models are callables (:class:`Detection` lists, ``crops -> colours``), so a
detector of the reader's choice plugs in: :mod:`domains.image.geneval_models` builds the transformers
Mask2Former (GenEval's own checkpoint when given its ``.pth``, else a Hub checkpoint of another training) and the
CLIP colour classifier.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: GenEval's object names: COCO's 80 classes, with its renames (``computer mouse``, ``tv remote`` ...).
CLASSES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
    "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
    "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "computer mouse", "tv remote",
    "computer keyboard", "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock",
    "vase", "scissors", "teddy bear", "hair drier", "toothbrush",
)  # fmt: skip
#: COCO names a detector trained on COCO uses where GenEval's differ.
COCO_TO_GENEVAL = {"mouse": "computer mouse", "remote": "tv remote", "keyboard": "computer keyboard"}
COLORS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white")
RELATIONS = ("left of", "right of", "above", "below")
TAGS = ("single_object", "two_object", "counting", "colors", "position", "color_attr")
NUMBERS = {2: "two", 3: "three", 4: "four"}

#: GenEval's defaults (djghosh13/geneval@af4902f:evaluation/evaluate_images.py:286-290). The 0.3 and 0.9 confidence
#: cuts were set for its detector, mmdetection's Mask2Former Swin-S checkpoint (download_models.sh:8): another
#: detector's confidences are calibrated differently, so the same cuts keep other objects (the default transformers
#: checkpoint is such another detector: :mod:`domains.image.geneval_models`).
THRESHOLD, COUNTING_THRESHOLD, MAX_OBJECTS, MAX_OVERLAP, POSITION_THRESHOLD = 0.3, 0.9, 16, 1.0, 0.1


@dataclass(frozen=True)
class Detection:
    """One detected object: GenEval class name, confidence, ``(x0, y0, x1, y1)`` pixel box, optional bool mask."""

    label: str
    score: float
    box: tuple[float, float, float, float]
    mask: np.ndarray | None = None


Detector = Callable[[Any], list[Detection]]
#: ``(image, [Detection], class name) -> one colour name per detection``.
ColourClassifier = Callable[[Any, Sequence[Detection], str], list[str]]


# --- prompts ------------------------------------------------------------------------------------------------
def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


def _one(rng: random.Random, tag: str) -> dict[str, Any]:
    a, b = rng.sample(CLASSES, 2)
    c1, c2 = rng.sample(COLORS, 2)
    if tag == "single_object":
        return {"tag": tag, "include": [{"class": a, "count": 1}], "prompt": f"a photo of {_a(a)}"}
    if tag == "two_object":
        return {"tag": tag, "include": [{"class": a, "count": 1}, {"class": b, "count": 1}],
                "prompt": f"a photo of {_a(a)} and {_a(b)}"}  # fmt: skip
    if tag == "counting":
        n = rng.choice(sorted(NUMBERS))
        return {"tag": tag, "include": [{"class": a, "count": n}], "exclude": [{"class": a, "count": n + 1}],
                "prompt": f"a photo of {NUMBERS[n]} {a}s"}  # their naive plural ("benchs")
    if tag == "colors":
        return {"tag": tag, "include": [{"class": a, "count": 1, "color": c1}], "prompt": f"a photo of {_a(f'{c1} {a}')}"}
    if tag == "position":
        rel = rng.choice(RELATIONS)
        return {"tag": tag, "include": [{"class": b, "count": 1}, {"class": a, "count": 1, "position": [rel, 0]}],
                "prompt": f"a photo of {_a(a)} {rel} {_a(b)}"}  # fmt: skip
    if tag == "color_attr":
        return {"tag": tag, "include": [{"class": a, "count": 1, "color": c1}, {"class": b, "count": 1, "color": c2}],
                "prompt": f"a photo of {_a(f'{c1} {a}')} and {_a(f'{c2} {b}')}"}  # fmt: skip
    raise ValueError(f"unknown GenEval tag {tag!r}; choose from {', '.join(TAGS)}")


def prompt_set(per_tag: int = 4, seed: int = 0, tags: Sequence[str] = TAGS) -> list[dict[str, Any]]:
    """``per_tag`` seeded prompts of each tag, as GenEval metadata rows (their templates and class names)."""
    rng = random.Random(seed)
    return [_one(rng, tag) for tag in tags for _ in range(per_tag)]


def load_metadata(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Rows of an ``evaluation_metadata.jsonl``; a row without ``tag``/``prompt``/``include`` is a named error."""
    from domains.image.prompt_list import prompt_lines

    rows = []
    for number, line in prompt_lines(path, "--data geneval --path"):
        row = json.loads(line)
        missing = [k for k in ("tag", "prompt", "include") if k not in row] if isinstance(row, dict) else ["an object"]
        if missing:
            raise ValueError(f"{path}:{number}: a GenEval metadata row needs {', '.join(missing)}")
        unknown = [r["class"] for r in [*row["include"], *row.get("exclude", [])] if r["class"] not in CLASSES]
        if unknown:
            raise ValueError(f"{path}:{number}: {unknown} are not GenEval object names")
        rows.append(row)
        if limit is not None and len(rows) >= limit:
            break
    return rows


def write_metadata(rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """Write rows in the published one-object-per-line format."""
    path = Path(path)
    path.write_text("".join(json.dumps(dict(r)) + "\n" for r in rows))
    return path


# --- judging ------------------------------------------------------------------------------------------------
def _iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Their ``compute_iou``: inclusive pixel areas (``+ 1``)."""

    def area(box: Sequence[float]) -> float:
        return max(box[2] - box[0] + 1, 0) * max(box[3] - box[1] + 1, 0)

    inter = area([max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])])
    union = area(a) + area(b) - inter
    return inter / union if union else 0.0


def keep_objects(detections: Sequence[Detection], tag: str, *, threshold: float = THRESHOLD,
                 counting_threshold: float = COUNTING_THRESHOLD, max_objects: int = MAX_OBJECTS,
                 max_overlap: float = MAX_OVERLAP) -> dict[str, list[Detection]]:  # fmt: skip
    """Class -> kept detections, most confident first (their ``evaluate_image`` filtering)."""
    cut = counting_threshold if tag == "counting" else threshold
    kept: dict[str, list[Detection]] = {}
    for label in dict.fromkeys(d.label for d in detections):
        order = sorted((d for d in detections if d.label == label and d.score > cut), key=lambda d: -d.score)
        order = order[:max_objects]
        chosen = []
        while order:
            best = order.pop(0)
            chosen.append(best)
            order = [d for d in order if max_overlap == 1 or _iou(best.box, d.box) < max_overlap]
        if chosen:
            kept[label] = chosen
    return kept


def relative_position(a: Detection, b: Detection, threshold: float = POSITION_THRESHOLD) -> set[str]:
    """Where ``a`` is relative to ``b``: centre offset less ``threshold`` x the summed sizes, per axis, then
    a direction counts when its share of the unit offset exceeds 0.5 (image y grows downwards)."""
    boxes = np.array([a.box, b.box], dtype=float).reshape(2, 2, 2)
    centre_a, centre_b = boxes.mean(axis=-2)
    size_a, size_b = np.abs(np.diff(boxes, axis=-2))[..., 0, :]
    offset = centre_a - centre_b
    revised = np.maximum(np.abs(offset) - threshold * (size_a + size_b), 0) * np.sign(offset)
    if np.all(np.abs(revised) < 1e-3):
        return set()
    dx, dy = revised / np.linalg.norm(offset)
    return {name for name, hit in (("left of", dx < -0.5), ("right of", dx > 0.5), ("above", dy < -0.5),
                                   ("below", dy > 0.5)) if hit}  # fmt: skip


def _misplaced(found: Sequence[Detection], targets: Sequence[Detection], relation: str) -> set[str] | None:
    """The relations of the first (object, target) pair, in order, that lacks ``relation``; ``None`` when all hold."""
    for obj in found:
        for target in targets:
            seen = relative_position(obj, target)
            if relation not in seen:
                return seen
    return None


def judge(image: Any, objects: Mapping[str, Sequence[Detection]], metadata: Mapping[str, Any],
          colours: ColourClassifier | None = None) -> tuple[bool, str]:  # fmt: skip
    """``(correct, reasons)`` of one image against its metadata row (their ``evaluate``)."""
    correct, reasons, groups = True, [], []
    for req in metadata.get("include", []):
        name, count = req["class"], req["count"]
        found = list(objects.get(name, []))[:count]
        matched = len(found) >= count
        if not matched:
            reasons.append(f"expected {name}>={count}, found {len(found)}")
        else:
            if "color" in req:
                if colours is None:
                    raise ValueError("this GenEval row asks for a colour; pass a colour classifier")
                seen = colours(image, found, name)
                if seen.count(req["color"]) < count:
                    matched = False
                    reasons.append(f"expected {req['color']} {name}>={count}, found {seen.count(req['color'])} "
                                   f"{req['color']}; and " + ", ".join(f"{seen.count(c)} {c}" for c in COLORS if c in seen))  # fmt: skip
            if "position" in req and matched:
                relation, target = req["position"]
                if groups[target] is None:
                    matched = False
                    reasons.append(f"no target for {name} to be {relation}")
                else:
                    bad = _misplaced(found, groups[target], relation)
                    if bad is not None:
                        matched = False
                        reasons.append(f"expected {name} {relation} target, found {' and '.join(bad)} target")
        correct &= matched
        groups.append(found if matched else None)
    for req in metadata.get("exclude", []):
        present = len(objects.get(req["class"], []))
        if present >= req["count"]:
            correct = False
            reasons.append(f"expected {req['class']}<{req['count']}, found {present}")
    return correct, "\n".join(reasons)


def partial_credit(image: Any, objects: Mapping[str, Sequence[Detection]], metadata: Mapping[str, Any],
                   colours: ColourClassifier | None = None) -> tuple[bool, float, str]:  # fmt: skip
    """``(strict_correct, score, reasons)``: the partial-credit score Flow-GRPO trains on.

    yifan123/reward-server@92ac29f:reward_server/gen_eval.py:201-264 (``evaluate_reward``): its ``score`` is what
    yifan123/flow_grpo@ac4c86e:flow_grpo/rewards.py:210 collects, ``multi_score`` sums into ``avg`` (L377-400) and
    scripts/train_sd3.py:761 turns into advantages. Unlike
    :func:`judge` (GenEval's own rule, the evaluation metric), every kept detection of a clause's class counts
    (``n``), counts must be exact, and ``exclude`` clauses are not read. Per ``include`` clause it adds terms:

    * ``1 - |count - n| / count`` (not clipped: below 0 when ``n > 2 count``, as theirs);
    * when ``n != count`` and the clause asks for a colour or a position, a ``0``;
    * otherwise a colour: ``1 - |count - k| / count`` with ``k`` the detections classified as that colour;
    * a position, when the clause still holds: ``0`` if its target clause failed; else a ``0`` at the first
      object/target pair not in the relation, then a ``1`` in every case (their ``rewards.append(1.0)`` sits
      after the loop, so a misplaced object scores ``0`` and ``1``).

    The score is the mean of the terms (0 when there are none); ``strict_correct`` is every clause holding.
    """
    strict, reasons, terms, groups = True, [], [], []
    for req in metadata.get("include", []):
        name, count = req["class"], req["count"]
        found = list(objects.get(name, []))
        matched = len(found) == count
        terms.append(1 - abs(count - len(found)) / count)
        if not matched:
            reasons.append(f"expected {name}=={count}, found {len(found)}")
            if "color" in req or "position" in req:
                terms.append(0.0)
        else:
            if "color" in req:
                if colours is None:
                    raise ValueError("this GenEval row asks for a colour; pass a colour classifier")
                hits = colours(image, found, name).count(req["color"])
                terms.append(1 - abs(count - hits) / count)
                if hits != count:
                    matched = False
                    reasons.append(f"expected {req['color']} {name}=={count}, found {hits} {req['color']}")
            if "position" in req and matched:
                relation, target = req["position"]
                if groups[target] is None:
                    matched = False
                    reasons.append(f"no target for {name} to be {relation}")
                    terms.append(0.0)
                else:
                    bad = _misplaced(found, groups[target], relation)
                    if bad is not None:
                        matched = False
                        reasons.append(f"expected {name} {relation} target, found {' and '.join(bad)} target")
                        terms.append(0.0)
                    terms.append(1.0)
        strict &= matched
        groups.append(found if matched else None)
    return strict, sum(terms) / len(terms) if terms else 0.0, "\n".join(reasons)


def summarise(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per-tag accuracy and GenEval's overall score, the mean of the per-tag accuracies (``summary_scores.py``)."""
    by_tag: dict[str, list[bool]] = {}
    for row in rows:
        by_tag.setdefault(row["tag"], []).append(bool(row["correct"]))
    per_tag = {tag: sum(v) / len(v) for tag, v in sorted(by_tag.items())}
    return {"overall": sum(per_tag.values()) / len(per_tag) if per_tag else float("nan"),
            "images": sum(len(v) for v in by_tag.values()), **{f"tag/{k}": v for k, v in per_tag.items()}}  # fmt: skip


def load_samples(path: str | Path | None = None, limit: int | None = None, per_tag: int = 4, seed: int = 0) -> list[Any]:
    """GenEval rows as :class:`~zoo.data.Sample` s (prompt = the prompt, target = the row): the published
    ``evaluation_metadata.jsonl`` at ``path``, else :func:`prompt_set`."""
    from zoo.data import Sample

    rows = load_metadata(path, limit) if path else prompt_set(per_tag, seed)[:limit]
    return [Sample(id=f"{i:05d}", prompt=row["prompt"], target=dict(row), meta={"tag": row["tag"]})
            for i, row in enumerate(rows)]  # fmt: skip
