"""Seeded images of coloured shapes with exact boxes: the perception tasks, offline.

RefCOCO, OVDEval and LISA need COCO images and licences; the smoke recipes and tests run on
pictures drawn here instead. Each image is a grey canvas with a few filled shapes of distinct
(colour, shape) pairs, so a referring expression ("the red circle") names exactly one object and
every box is known. Sizes default to 56 px (a multiple of 28 with 56*56 = Qwen's ``min_pixels``),
so the processor does not resize and the model's frame is the image's.

Questions are raw, as the real loaders yield them (no user template, no system prompt); a recipe names
the entry whose prompt wraps them (``model.entry``), and the 56 px images lie within every such entry's
pixel limits, so the entry leaves them unresized. Tasks, and the entry each is asked through:

* ``rec``: one expression -> one box; entry ``vlm-r1-rec-3b``.
* ``detection``: VLM-R1's OVD problem over the present labels and one absent hard-negative label -> all
  boxes of the present ones; entry ``vlm-r1-ovd-3b``.
* ``preference``: R1-Reward's whole judge prompt over a right and a wrong description
  (:func:`~domains.perception.prompts.format_r1_reward_question`; target ``"1"`` or ``"2"``), which is the
  question itself: entry ``r1-reward-7b``, whose user template is ``{question}``.
* Curr-ReFT's first two stages, ``<answer>``-wrapped references: ``judge`` (is there a <shape>? yes/no) and
  ``choice`` (which shape is <colour>? A/B); ``mcq`` is the ``choice`` question with a bare option letter as
  the reference (SCS's multiple-choice data). Entry ``curr-reft-7b`` (or ``-3b``: the same prompt).

``judge``, ``choice`` and ``mcq`` are asked in the curr-reft entries' default template (Curr-ReFT's
stage-3 QUESTION_TEMPLATE_NORMAL; the questions say themselves which answer they want): they name no
``meta["template"]``, where the released stage files' loader names the stage's own (``judge``, ``choice``).
"""

from __future__ import annotations

import random

from PIL import Image, ImageDraw

from domains.perception.prompts import VLM_R1_OVD_PROBLEM, format_r1_reward_question
from zoo.data import Sample

COLOURS = {"red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 80, 220), "yellow": (230, 200, 40)}
SHAPES = ("square", "circle")
TASKS = ("rec", "detection", "preference", "judge", "choice", "mcq")


def draw_scene(rng: random.Random, size: int, n_objects: int) -> tuple[Image.Image, list[dict]]:
    """A canvas with ``n_objects`` non-overlapping shapes; returns the image and ``[{label, bbox}]``."""
    image = Image.new("RGB", (size, size), (128, 128, 128))
    draw = ImageDraw.Draw(image)
    kinds = rng.sample([(c, s) for c in COLOURS for s in SHAPES], n_objects)
    objects: list[dict] = []
    side = max(8, size // 4)
    for colour, shape in kinds:
        for _ in range(50):  # rejection-sample a free spot
            x, y = rng.randrange(0, size - side + 1), rng.randrange(0, size - side + 1)
            box = [x, y, x + side, y + side]
            if all(box[2] <= o["bbox"][0] or o["bbox"][2] <= box[0] or box[3] <= o["bbox"][1] or o["bbox"][3] <= box[1]
                   for o in objects):  # fmt: skip
                break
        (draw.rectangle if shape == "square" else draw.ellipse)([box[0], box[1], box[2] - 1, box[3] - 1],
                                                               fill=COLOURS[colour])
        objects.append({"label": f"{colour} {shape}", "bbox": [float(v) for v in box]})
    return image, objects


def synthetic_samples(n: int = 16, seed: int = 0, task: str = "rec", size: int = 56) -> list[Sample]:
    """``n`` samples of ``task`` (see module docstring), reproducible from ``seed``."""
    if task not in TASKS:
        raise ValueError(f"unknown synthetic perception task {task!r}; choose one of {TASKS}")
    if size < 28:
        raise ValueError(f"size must be at least 28 px (one Qwen patch pair), got {size}")
    rng = random.Random(seed)
    return [_sample(rng, f"synthetic-{task}-{seed}-{i}", task, size) for i in range(n)]


def _sample(rng: random.Random, sid: str, task: str, size: int) -> Sample:
    image, objects = draw_scene(rng, size, n_objects=2 if task != "detection" else 3)
    meta = {"task": task}
    if task == "rec":
        obj = rng.choice(objects)
        question = f"the {obj['label']}"
        return Sample(sid, (image,), question, {"bbox": obj["bbox"], "image_size": [size, size]}, meta)
    if task == "detection":
        present = sorted({o["label"] for o in objects})
        absent = next(f"{c} {s}" for c in COLOURS for s in SHAPES if f"{c} {s}" not in present)
        question = VLM_R1_OVD_PROBLEM.format(labels=", ".join([*present, absent]))
        return Sample(sid, (image,), question, {"objects": objects, "image_size": [size, size], "neg_labels": [absent]},
                      meta)  # fmt: skip
    if task in ("judge", "choice"):
        return _curriculum_sample(rng, sid, task, objects, image)
    if task == "mcq":
        choice = _curriculum_sample(rng, sid, "choice", objects, image)
        letter = choice.target["answer"][len("<answer>")]
        return Sample(sid, (image,), choice.prompt, {"answer": letter}, {"task": "mcq"})
    right = f"The image shows a {objects[0]['label']} and a {objects[1]['label']}."
    wrong_label = next(f"{c} {s}" for c in COLOURS for s in SHAPES if f"{c} {s}" not in {o["label"] for o in objects})
    wrong = f"The image shows a {wrong_label} only."
    first_is_right = rng.random() < 0.5
    responses = (right, wrong) if first_is_right else (wrong, right)
    prompt = format_r1_reward_question("Describe the shapes in the image.", *responses)
    return Sample(sid, (image,), prompt, {"answer": "1" if first_is_right else "2"}, meta)


def _curriculum_sample(rng: random.Random, sid: str, stage: str, objects: list[dict], image: Image.Image) -> Sample:
    """A Curr-ReFT stage-1 (yes/no) or stage-2 (A/B) question about the drawn shapes."""
    present = {o["label"] for o in objects}
    if stage == "judge":
        label = rng.choice(sorted(present)) if rng.random() < 0.5 else \
            next(f"{c} {s}" for c in COLOURS for s in SHAPES if f"{c} {s}" not in present)  # fmt: skip
        question, answer = f"Is there a {label} in the image? Answer yes or no.", "yes" if label in present else "no"
    else:
        obj = rng.choice(objects)
        colour, shape = obj["label"].split()
        options = [shape, next(s for s in SHAPES if s != shape)]
        rng.shuffle(options)
        question = f"Which shape is {colour}? A. {options[0]} B. {options[1]}"
        answer = "AB"[options.index(shape)]
    target = {"answer": f"<answer>{answer}</answer>", "stage": stage, "task": "classify"}
    return Sample(sid, (image,), question, target, {"task": stage})
