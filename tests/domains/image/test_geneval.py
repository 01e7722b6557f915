"""GenEval's judging rules, as djghosh13/geneval ``evaluation/evaluate_images.py`` (commit 16f1681): detection
filtering (0.3, 0.9 for counting, 16 per class), ``relative_position`` with threshold 0.1, ``evaluate``'s include /
exclude clauses; and the metadata rows in the published ``evaluation_metadata.jsonl`` format."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from domains.image import geneval
from domains.image.geneval import Detection, judge, keep_objects, relative_position


def _det(label, box, score=0.99):
    return Detection(label, score, box)


def test_relative_position_uses_sizes_and_the_half_unit_rule():
    left, right = _det("cat", (0, 0, 10, 10)), _det("dog", (30, 0, 40, 10))
    assert relative_position(left, right) == {"left of"} and relative_position(right, left) == {"right of"}
    # centres 12 px apart, 0.1 x (10 + 10) = 2 px shaved: still a clear "above"
    assert relative_position(_det("a", (0, 0, 10, 10)), _det("b", (0, 12, 10, 22))) == {"above"}
    # centres 1 px apart: the shaved offset is 0, so no relation at all
    assert relative_position(_det("a", (0, 0, 10, 10)), _det("b", (1, 0, 11, 10))) == set()
    # a diagonal at 45 degrees: each unit component is ~0.707 > 0.5, two relations
    assert relative_position(_det("a", (50, 50, 52, 52)), _det("b", (0, 0, 2, 2))) == {"right of", "below"}


def test_counting_uses_its_own_threshold_and_the_exclude_clause():
    row = {"tag": "counting", "include": [{"class": "clock", "count": 2}], "exclude": [{"class": "clock", "count": 3}]}
    dets = [_det("clock", (0, 0, 5, 5), 0.95), _det("clock", (10, 0, 15, 5), 0.92), _det("clock", (20, 0, 25, 5), 0.5)]
    objects = keep_objects(dets, "counting")
    assert len(objects["clock"]) == 2  # the 0.5 one is under 0.9
    assert judge(None, objects, row) == (True, "")
    three = keep_objects(dets, "two_object")  # the 0.3 threshold keeps all three
    ok, reason = judge(None, three, row)
    assert not ok and reason == "expected clock<3, found 3"
    assert keep_objects([_det("cup", (0, 0, 1, 1), 0.3)], "single_object") == {}  # strictly above 0.3


def test_keep_objects_orders_by_confidence_and_caps_per_class():
    dets = [_det("cup", (i, 0, i + 1, 1), 0.4 + i / 100) for i in range(20)]
    kept = keep_objects(dets, "single_object")["cup"]
    assert len(kept) == 16 and kept[0].score == pytest.approx(0.59) and kept[-1].score == pytest.approx(0.44)
    nms = keep_objects([_det("cup", (0, 0, 10, 10), 0.9), _det("cup", (0, 0, 10, 9), 0.8)], "colors", max_overlap=0.5)
    assert len(nms["cup"]) == 1


def test_position_checks_against_the_referred_group_and_colour_uses_the_classifier():
    row = {"tag": "position", "include": [{"class": "laptop", "count": 1},
                                          {"class": "cow", "count": 1, "position": ["right of", 0]}]}  # fmt: skip
    good = {"laptop": [_det("laptop", (0, 0, 10, 10))], "cow": [_det("cow", (40, 0, 50, 10))]}
    bad = {"laptop": [_det("laptop", (40, 0, 50, 10))], "cow": [_det("cow", (0, 0, 10, 10))]}
    assert judge(None, good, row)[0]
    ok, reason = judge(None, bad, row)
    assert not ok and reason == "expected cow right of target, found left of target"
    missing = judge(None, {"cow": good["cow"]}, row)
    assert missing == (False, "expected laptop>=1, found 0\nno target for cow to be right of")

    colour_row = {"tag": "colors", "include": [{"class": "car", "count": 1, "color": "red"}]}
    objects = {"car": [_det("car", (0, 0, 5, 5))]}
    assert judge(None, objects, colour_row, lambda image, dets, name: ["red"] * len(dets))[0]
    ok, reason = judge(None, objects, colour_row, lambda image, dets, name: ["blue"])
    assert not ok and reason == "expected red car>=1, found 0 red; and 1 blue"
    with pytest.raises(ValueError, match="colour classifier"):
        judge(None, objects, colour_row)


def test_prompt_set_rows_are_in_the_published_format(tmp_path):
    rows = geneval.prompt_set(per_tag=3, seed=1)
    assert [r["tag"] for r in rows] == [t for t in geneval.TAGS for _ in range(3)]
    assert rows == geneval.prompt_set(per_tag=3, seed=1)
    for row in rows:
        assert row["prompt"].startswith("a photo of ") and all(r["class"] in geneval.CLASSES for r in row["include"])
    counting = next(r for r in rows if r["tag"] == "counting")
    n = counting["include"][0]["count"]
    assert counting["exclude"] == [{"class": counting["include"][0]["class"], "count": n + 1}]
    position = next(r for r in rows if r["tag"] == "position")
    assert position["include"][1]["position"][1] == 0
    assert position["prompt"].endswith(position["include"][0]["class"])
    path = geneval.write_metadata(rows, tmp_path / "evaluation_metadata.jsonl")
    assert geneval.load_metadata(path) == rows and len(geneval.load_metadata(path, limit=2)) == 2
    samples = geneval.load_samples(path, limit=4)
    assert samples[0].prompt == rows[0]["prompt"] and samples[3].target == rows[3]


def test_a_published_row_loads_and_a_malformed_one_is_named(tmp_path):
    published = {"tag": "color_attr", "include": [{"class": "handbag", "count": 1, "color": "pink"},
                 {"class": "scissors", "count": 1, "color": "black"}], "prompt": "a photo of a pink handbag and a black scissors"}  # fmt: skip
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(published) + "\n\n")
    assert geneval.load_metadata(path) == [published]
    path.write_text(json.dumps({"tag": "colors", "prompt": "x"}) + "\n")
    with pytest.raises(ValueError, match="m.jsonl:1: a GenEval metadata row needs include"):
        geneval.load_metadata(path)
    path.write_text(json.dumps({**published, "include": [{"class": "unicorn", "count": 1}]}) + "\n")
    with pytest.raises(ValueError, match="not GenEval object names"):
        geneval.load_metadata(path)


def test_summary_is_the_mean_of_per_tag_accuracies():
    rows = [{"tag": "counting", "correct": True}, {"tag": "counting", "correct": False},
            {"tag": "colors", "correct": True}]  # fmt: skip
    summary = geneval.summarise(rows)
    assert summary["tag/counting"] == 0.5 and summary["tag/colors"] == 1.0 and summary["overall"] == 0.75


def test_clip_colour_classifier_crops_on_grey_and_names_a_colour(tmp_path):
    from domains.image.geneval_models import BACKGROUND, ClipColourClassifier
    from tests.domains.image.test_ocr_and_scorers import _tiny_clip

    model, processor = _tiny_clip(tmp_path)
    image = np.zeros((32, 32, 3))
    image[4:12, 4:12] = [1.0, 0.0, 0.0]
    mask = np.zeros((32, 32), bool)
    mask[6:10, 6:10] = True
    det = Detection("car", 0.9, (4, 4, 12, 12), mask)
    classifier = ClipColourClassifier(model=model, processor=processor)
    crop = classifier.crops(image, [det])[0]
    assert crop.size == (8, 8)
    assert crop.getpixel((0, 0)) == BACKGROUND and crop.getpixel((3, 3)) == (255, 0, 0)
    colours = classifier(image, [det, det], "car")
    assert len(colours) == 2 and colours[0] == colours[1] and colours[0] in geneval.COLORS
    assert classifier._classifier("car").shape == (16, len(geneval.COLORS))


def test_geneval_reward_scores_correctness_with_a_plugged_detector():
    from domains.image.geneval_models import GenEvalReward

    detector = lambda image: [_det("dog", (0, 0, 8, 8), 0.8), _det("dog", (10, 0, 18, 8), 0.6)]
    reward = GenEvalReward(detector, colours=lambda image, dets, name: ["brown"] * len(dets))
    rows = [{"tag": "single_object", "include": [{"class": "dog", "count": 1}], "prompt": "a photo of a dog"},
            {"tag": "counting", "include": [{"class": "dog", "count": 2}], "exclude": [{"class": "dog", "count": 3}],
             "prompt": "a photo of two dogs"},
            {"tag": "colors", "include": [{"class": "dog", "count": 1, "color": "brown"}], "prompt": "a photo of a brown dog"}]  # fmt: skip
    results = reward([np.zeros((20, 20, 3))] * 3, rows)
    assert [r.score for r in results] == [1.0, 0.0, 1.0]  # counting keeps only > 0.9: none
    assert results[1].error == "expected dog>=2, found 0"


def _tiny_mask2former():
    """A random transformers Mask2Former (tiny Swin backbone) whose label names are COCO's, renames included."""
    import torch
    from transformers import (
        Mask2FormerConfig,
        Mask2FormerForUniversalSegmentation,
        Mask2FormerImageProcessor,
        SwinConfig,
    )

    torch.manual_seed(0)
    backbone = SwinConfig(embed_dim=16, depths=[1, 1, 1, 1], num_heads=[1, 1, 1, 1], window_size=4, image_size=64,
                          out_features=["stage1", "stage2", "stage3", "stage4"])  # fmt: skip
    labels = {0: "dog", 1: "mouse", 2: "cup"}
    config = Mask2FormerConfig(backbone_config=backbone, hidden_dim=32, num_queries=5, encoder_layers=1, decoder_layers=2,
                               mask_feature_size=32, feature_size=32, dim_feedforward=64, num_attention_heads=2,
                               encoder_feedforward_dim=64, num_labels=3, id2label=labels,
                               label2id={v: k for k, v in labels.items()})  # fmt: skip
    return Mask2FormerForUniversalSegmentation(config).eval(), Mask2FormerImageProcessor(size={"height": 64, "width": 64})


def test_mask2former_detector_gives_geneval_names_boxes_from_masks_and_feeds_the_reward(tmp_path):
    from domains.image.geneval_models import ClipColourClassifier, GenEvalReward, Mask2FormerDetector
    from tests.domains.image.test_ocr_and_scorers import _tiny_clip

    model, processor = _tiny_mask2former()
    image = np.random.default_rng(0).random((48, 40, 3))
    detections = Mask2FormerDetector(model=model, processor=processor, min_score=0.0)(image)
    assert detections and {d.label for d in detections} <= {"dog", "computer mouse", "cup"}
    for det in detections:
        ys, xs = np.nonzero(det.mask)
        assert det.mask.shape == (48, 40) and det.box == (xs.min(), ys.min(), xs.max(), ys.max())
    high = max(d.score for d in detections)
    assert Mask2FormerDetector(model=model, processor=processor, min_score=high + 1e-3)(image) == []

    clip, clip_processor = _tiny_clip(tmp_path)
    reward = GenEvalReward(Mask2FormerDetector(model=model, processor=processor, min_score=0.0),
                           ClipColourClassifier(model=clip, processor=clip_processor))  # fmt: skip
    rows = [{"tag": "single_object", "include": [{"class": "cup", "count": 1}], "prompt": "a photo of a cup"},
            {"tag": "colors", "include": [{"class": "cup", "count": 1, "color": "red"}], "prompt": "a photo of a red cup"}]  # fmt: skip
    results = reward([image, image], rows)
    kept = geneval.keep_objects(detections, "single_object")
    assert results[0].score == float("cup" in kept)  # the same rule on the same detections
    assert all(r.score in (0.0, 1.0) and set(r.components) == {"correct"} for r in results)


# --- Flow-GRPO's training reward: the reward server's partial credit ---------------------------------------------
# Ported from yifan123/reward-server@92ac29f:reward_server/gen_eval.py (L119-136 relative_position, L201-264
# evaluate_reward), with ``color_classification`` passed in: the reference the zoo's partial_credit must equal.
def _their_relative_position(obj_a, obj_b, position_threshold=0.1):
    boxes = np.array([obj_a[0], obj_b[0]])[:, :4].reshape(2, 2, 2)
    center_a, center_b = boxes.mean(axis=-2)
    dim_a, dim_b = np.abs(np.diff(boxes, axis=-2))[..., 0, :]
    offset = center_a - center_b
    revised_offset = np.maximum(np.abs(offset) - position_threshold * (dim_a + dim_b), 0) * np.sign(offset)
    if np.all(np.abs(revised_offset) < 1e-3):
        return set()
    dx, dy = revised_offset / np.linalg.norm(offset)
    relations = set()
    if dx < -0.5: relations.add("left of")
    if dx > 0.5: relations.add("right of")
    if dy < -0.5: relations.add("above")
    if dy > 0.5: relations.add("below")
    return relations


def _their_evaluate_reward(image, objects, metadata, color_classification):
    correct = True
    rewards = []
    matched_groups = []
    for req in metadata.get("include", []):
        classname = req["class"]
        matched = True
        found_objects = objects.get(classname, [])
        rewards.append(1 - abs(req["count"] - len(found_objects)) / req["count"])
        if len(found_objects) != req["count"]:
            correct = matched = False
            if "color" in req or "position" in req:
                rewards.append(0.0)
        else:
            if "color" in req:
                colors = color_classification(image, found_objects, classname)
                rewards.append(1 - abs(req["count"] - colors.count(req["color"])) / req["count"])
                if colors.count(req["color"]) != req["count"]:
                    correct = matched = False
            if "position" in req and matched:
                expected_rel, target_group = req["position"]
                if matched_groups[target_group] is None:
                    correct = matched = False
                    rewards.append(0.0)
                else:
                    for obj in found_objects:
                        for target_obj in matched_groups[target_group]:
                            true_rels = _their_relative_position(obj, target_obj)
                            if expected_rel not in true_rels:
                                correct = matched = False
                                rewards.append(0.0)
                                break
                        if not matched:
                            break
                    rewards.append(1.0)
        if matched:
            matched_groups.append(found_objects)
        else:
            matched_groups.append(None)
    reward = sum(rewards) / len(rewards) if rewards else 0
    return correct, reward


def _colour_of(box) -> str:
    """A stand-in colour classifier: a detection's colour is fixed by its box (deterministic, shared by both)."""
    return geneval.COLORS[int(box[0]) % 3]  # red, orange or yellow


def _both(objects: dict, row: dict) -> tuple[tuple, tuple]:
    """(theirs, ours) on the same detections: theirs as (bbox with score, mask) pairs, ours as Detections."""
    theirs_objects = {k: [(np.array([*d.box, d.score]), None) for d in v] for k, v in objects.items()}
    theirs = _their_evaluate_reward(None, theirs_objects, row, lambda image, objs, name: [_colour_of(b) for b, _ in objs])
    strict, score, _ = geneval.partial_credit(None, objects, row, lambda image, dets, name: [_colour_of(d.box) for d in dets])
    return theirs, (strict, score)


LAPTOP = {"class": "laptop", "count": 1}
COW_RIGHT = {"class": "cow", "count": 1, "position": ["right of", 0]}
PARTIAL_CASES = {  # name: (objects by class as box lists, metadata row, their score)
    "exact count": ({"dog": [(0, 0, 8, 8)]}, {"include": [{"class": "dog", "count": 1}]}, 1.0),
    "too few": ({"dog": [(0, 0, 8, 8)]}, {"include": [{"class": "dog", "count": 2}]}, 0.5),
    "three times too many (below 0)": ({"dog": [(0, 0, 1, 1), (3, 0, 4, 1), (6, 0, 7, 1)]},
                                       {"include": [{"class": "dog", "count": 1}]}, -1.0),
    "count off with a colour": ({"car": [(0, 0, 1, 1), (3, 0, 4, 1)]},
                                {"include": [{"class": "car", "count": 1, "color": "red"}]}, 0.0),
    "half the colour": ({"car": [(0, 0, 1, 1), (1, 0, 2, 1)]},
                        {"include": [{"class": "car", "count": 2, "color": "red"}]}, 0.75),
    "the colour": ({"car": [(3, 0, 4, 1)]}, {"include": [{"class": "car", "count": 1, "color": "red"}]}, 1.0),
    "colour fails, position not read": ({"laptop": [(0, 0, 10, 10)], "cow": [(41, 0, 50, 10)]},
                                        {"include": [LAPTOP, {**COW_RIGHT, "color": "red"}]}, 2 / 3),
    "no target": ({"cow": [(40, 0, 50, 10)]}, {"include": [LAPTOP, COW_RIGHT]}, 1 / 3),
    "misplaced: a 0 and a 1": ({"laptop": [(40, 0, 50, 10)], "cow": [(0, 0, 10, 10)]},
                               {"include": [LAPTOP, COW_RIGHT]}, 0.75),
    "placed": ({"laptop": [(0, 0, 10, 10)], "cow": [(40, 0, 50, 10)]}, {"include": [LAPTOP, COW_RIGHT]}, 1.0),
    "two targets, one misplaced": ({"laptop": [(0, 0, 10, 10), (60, 0, 70, 10)], "cow": [(40, 0, 50, 10)]},
                                   {"include": [{"class": "laptop", "count": 2}, COW_RIGHT]}, 0.75),
    "exclude not read": ({"clock": [(0, 0, 5, 5), (10, 0, 15, 5)]},
                         {"include": [{"class": "clock", "count": 2}], "exclude": [{"class": "clock", "count": 3}]}, 1.0),
    "no include clause": ({}, {"include": []}, 0.0),
}


@pytest.mark.parametrize("name", PARTIAL_CASES)
def test_partial_credit_is_the_reward_servers_score(name):
    boxes, row, expected = PARTIAL_CASES[name]
    objects = {k: [_det(k, b) for b in v] for k, v in boxes.items()}
    theirs, ours = _both(objects, row)
    assert theirs[1] == pytest.approx(expected) and ours == (theirs[0], pytest.approx(theirs[1]))
    if name == "exclude not read":
        assert judge(None, {"clock": objects["clock"] + [_det("clock", (20, 0, 25, 5))]}, row)[0] is False


def test_partial_credit_equals_theirs_on_random_rows_and_detections():
    rng = np.random.default_rng(0)
    classes, relations = ("dog", "cat", "car"), geneval.RELATIONS
    for _ in range(300):
        names = rng.choice(classes, size=rng.integers(1, 3), replace=False)
        include = []
        for i, name in enumerate(names):
            req = {"class": str(name), "count": int(rng.integers(1, 4))}
            if rng.random() < 0.4:
                req["color"] = str(rng.choice(geneval.COLORS[:3]))
            if i and rng.random() < 0.6:
                req["position"] = [str(rng.choice(relations)), 0]
            include.append(req)
        objects = {str(c): [_det(str(c), tuple(float(v) for v in (x, y, x + w, y + h)))
                            for x, y, w, h in rng.integers(0, 60, (rng.integers(0, 5), 4))]
                   for c in classes if rng.random() < 0.8}  # fmt: skip
        theirs, ours = _both({k: v for k, v in objects.items() if v}, {"include": include})
        assert ours == (theirs[0], pytest.approx(theirs[1])), include


def test_geneval_score_reward_trains_on_partial_credit_of_the_jpeg_it_would_send():
    from PIL import Image

    from domains.image.geneval_models import GenEvalScore

    seen = []

    def detector(image):
        seen.append(image)
        return [_det("dog", (0, 0, 8, 8), 0.8), _det("dog", (10, 0, 18, 8), 0.6)]

    row = {"tag": "counting", "include": [{"class": "dog", "count": 3}], "prompt": "a photo of three dogs"}
    image = np.random.default_rng(1).random((16, 16, 3))
    results = GenEvalScore(detector, colours=lambda *a: [])([image, image], [{**row, "tag": "two_object"}, row])
    assert results[0].score == pytest.approx(1 - 1 / 3) and results[0].components == {"score": results[0].score,
                                                                                       "strict_correct": 0.0}  # fmt: skip
    assert results[1].score == 0.0 and results[1].error == "expected dog==3, found 0"  # counting keeps > 0.9 only
    # what yifan123/flow_grpo@ac4c86e:flow_grpo/rewards.py:179-197 sends: uint8 by rounding, PIL's default JPEG
    buffer = io.BytesIO()
    Image.fromarray((image * 255).round().clip(0, 255).astype(np.uint8)).save(buffer, format="JPEG")
    theirs = np.asarray(Image.open(io.BytesIO(buffer.getvalue())))
    assert seen[0].format == "JPEG" and np.array_equal(np.asarray(seen[0]), theirs)
    assert not np.array_equal(theirs, (image * 255).round())  # the JPEG's loss is in what gets scored
    assert GenEvalScore(detector, colours=lambda *a: [], jpeg=False)([image], [row]) and seen[-1] is image
