"""Perception loaders on small files written in each published format, and the synthetic generator.

Loaders yield raw questions; the entry a recipe names (``model.entry``) wraps them as ``zoo.load`` does
(:func:`zoo.engines.vlm.contract.with_contract`). Each wrapped prompt is checked against the authors' own
text, copied here from their source, which is what the loaders wrote themselves before.
"""

from __future__ import annotations

import json

import pytest
from PIL import Image

import zoo
from domains.perception.data import load_lisa, load_ovdeval, load_refcoco, load_synthetic
from domains.perception.prompts import R1_SYSTEM, VLM_R1_OVD_PROBLEM, format_r1_reward_question
from rewards.base import get
from zoo.data import Sample
from zoo.engines.vlm.contract import with_contract
from zoo.engines.vlm.recipe import ModelConfig
from zoo.recipe import RecipeError

#: om-ai-lab/VLM-R1@90052f4:src/open-r1-multimodal/src/open_r1/vlm_modules/qwen_module.py:73 (REC), as
#: grpo_rec.py:161-173 and src/eval/test_rec_r1.py:111, 124-134 ask it: image first, no system prompt.
VLM_R1_REC = ("{} First output the thinking process in <think> </think> tags and then output the final answer in "
              "<answer> </answer> tags. Output the final answer in JSON format.")  # fmt: skip
#: Liuziyu77/Visual-RFT@9486633:src/virft/src/open_r1/grpo_lisa.py:180 QUESTION_TEMPLATE ("grouding" and ")" theirs).
VISUAL_RFT_LISA = ('{} Output the thinking process in <think> </think> and your grouding box. Following '
                   '"<think> thinking process </think>\n<answer>(x1,y1),(x2,y2)</answer>)" format.')  # fmt: skip
#: VLM-R1 paper (arXiv 2504.07615) §5.1 "Thinking Prompt", appended to the OVD problem.
VLM_R1_OVD_THINK = " Output the thinking process in <think> </think> and final answer in <answer> </answer> tags."
#: ding523/Curr_REFT@f123433 Stage3_open_math_resize.py:210-211 QUESTION_TEMPLATE_NORMAL.
CURR_REFT_NORMAL = ("{} First output the thinking process in <think> </think> tags and then output the final answer "
                    "in <answer> </answer> tags.")  # fmt: skip


def _asked(sample: Sample, entry: str, variant: str | None = None) -> list[dict]:
    """The chat a recipe with ``model.entry: entry`` (and ``model.variant``) trains ``sample`` on."""
    return with_contract(sample, ModelConfig(entry=entry, variant=variant).contract()).prompt


@pytest.fixture
def images(tmp_path):
    Image.new("RGB", (640, 480)).save(tmp_path / "COCO_train2014_000000000009.jpg")
    Image.new("RGB", (340, 254)).save(tmp_path / "64d22c6fe4b011b0db94b993.jpg")
    return tmp_path


def test_refcoco_eval_json_and_training_jsonl(images):
    # src/eval/test_rec_r1.py reads image / problem / solution; grpo_jsonl.py reads conversations.
    (images / "refcoco_val.json").write_text(json.dumps([
        {"image": "COCO_train2014_000000000009.jpg", "problem": "the left dog", "solution": [10, 20, 110, 220]}]))
    (images / "refcoco_train.jsonl").write_text(json.dumps(
        {"id": 7, "image": "COCO_train2014_000000000009.jpg", "conversations": [
            {"from": "human", "value": "<image>the right cat"}, {"from": "gpt", "value": "[300, 40, 600, 400]"}]}) + "\n")
    [val] = load_refcoco(str(images / "refcoco_val.json"))
    [train] = load_refcoco(str(images / "refcoco_train.jsonl"))
    assert val.target == {"bbox": [10.0, 20.0, 110.0, 220.0], "image_size": [640, 480]}
    assert val.prompt == "the left dog" and "template" not in val.meta  # the raw expression
    assert train.prompt == "the right cat" and train.id == "7" and train.target["bbox"] == [300.0, 40.0, 600.0, 400.0]
    # vlm-r1-rec-3b asks it as VLM-R1 trains and evaluates: the REC template, no system prompt
    assert _asked(val, "vlm-r1-rec-3b") == [{"role": "user", "content": VLM_R1_REC.format("the left dog")}]
    assert _asked(train, "vlm-r1-rec-3b") == [{"role": "user", "content": VLM_R1_REC.format("the right cat")}]


def test_refcoco_errors_name_the_problem(images):
    (images / "bad.json").write_text(json.dumps([{"image": "missing.jpg", "problem": "x", "solution": [1, 2, 3, 4]}]))
    with pytest.raises(FileNotFoundError, match="image_root"):
        load_refcoco(str(images / "bad.json"))
    (images / "bad2.json").write_text(json.dumps([{"image": "COCO_train2014_000000000009.jpg", "problem": "x",
                                                   "solution": [5, 2, 3, 4]}]))
    with pytest.raises(ValueError, match="negative width"):
        load_refcoco(str(images / "bad2.json"))


def test_ovdeval_coco_json_with_negative_labels(images):
    # om-ai-lab/OVDEval Evaluation.md "Dataset Structure": bbox is x, y, w, h.
    (images / "negation.json").write_text(json.dumps({
        "categories": [{"supercategory": "object", "id": 0, "name": "computer without screen on"},
                       {"supercategory": "object", "id": 1, "name": "computer with screen on"}],
        "annotations": [{"id": 0, "bbox": [111, 117, 99, 75], "category_id": 0, "image_id": 0, "iscrowd": 0,
                         "area": 7425}],
        "images": [{"file_name": "64d22c6fe4b011b0db94b993.jpg", "id": 0, "height": 254, "width": 340,
                    "text": ["computer without screen on"], "neg_text": ["computer with screen on"]}]}))
    [sample] = load_ovdeval(str(images / "negation.json"))
    assert sample.target["objects"] == [{"bbox": [111.0, 117.0, 210.0, 192.0], "label": "computer without screen on"}]
    assert sample.target["neg_labels"] == ["computer with screen on"] and sample.target["image_size"] == [340, 254]
    question = VLM_R1_OVD_PROBLEM.format(labels="computer without screen on, computer with screen on")
    assert sample.prompt == question and question.startswith("Please carefully check the image and detect")
    assert _asked(sample, "vlm-r1-ovd-3b") == [{"role": "user", "content": question + VLM_R1_OVD_THINK}]
    with pytest.raises(ValueError, match="COCO json"):
        load_ovdeval(str(images / "nothing.json"))


def test_lisa_visual_rft_format_maps_1000_frame_to_pixels(images):
    # Visual-RFT grpo_lisa.py: "<img>path</img>" in the user turn, "(x1,y1),(x2,y2)" on 0-1000.
    (images / "lisa.json").write_text(json.dumps([{"conversations": [
        {"from": "user", "value": "<img>COCO_train2014_000000000009.jpg</img> What keeps the rain off?"},
        {"from": "assistant", "value": "(100,250),(500,1000)"}]}]))
    [sample] = load_lisa(str(images / "lisa.json"))
    assert sample.target["bbox"] == [64.0, 120.0, 320.0, 480.0]
    assert sample.target["bbox_norm1000"] == [100.0, 250.0, 500.0, 1000.0]
    assert sample.prompt == "What keeps the rain off?"  # the user turn without its <img> tag
    assert sample.target["solution"] == "<answer> (100,250),(500,1000) </answer>"  # grpo_lisa.py:214
    # Visual-RFT trains without a system prompt, in QUESTION_TEMPLATE (grpo_lisa.py:193-219): the loader names the
    # entry's train template, the recipe model.variant train ...
    assert sample.meta["template"] == "train"
    assert _asked(sample, "visual-rft-lisa-7b", "train") == [
        {"role": "user", "content": VISUAL_RFT_LISA.format("What keeps the rain off?")}]
    # ... and its system prompt is the R1 one of its inference (lisa_evaluation/Qwen2_VL_lisa_infere.py:38-46)
    assert _asked(sample, "visual-rft-lisa-7b") == [
        {"role": "system", "content": R1_SYSTEM}, {"role": "user", "content": VISUAL_RFT_LISA.format("What keeps the rain off?")}]
    [plain] = load_lisa(str(images / "lisa.json"), template=None)  # for an entry without a train template
    assert "template" not in plain.meta


def test_visual_rft_lisa_train_variant_is_no_system_prompt_and_unknown_variants_fail():
    spec = zoo.info("visual-rft-lisa-7b").spec
    assert spec.variants == {"train": ""} and spec.system == R1_SYSTEM
    assert spec.system_prompt("train") == ""  # the pipeline sends no system turn for it (zoo run --system train)
    assert ModelConfig(entry="visual-rft-lisa-7b", variant="train").contract().system is None
    with pytest.raises(RecipeError, match="model.variant='inference': visual-rft-lisa-7b publishes train"):
        ModelConfig(entry="visual-rft-lisa-7b", variant="inference").contract()
    with pytest.raises(RecipeError, match="vlm-r1-rec-3b publishes no prompt variants"):
        ModelConfig(entry="vlm-r1-rec-3b", variant="train").contract()  # VLM-R1 trains and infers alike, without one


def test_synthetic_questions_are_raw_and_their_entries_ask_them_as_the_generator_used_to():
    [rec] = load_synthetic(n=1, seed=0, task="rec")
    assert rec.prompt.startswith("the ") and _asked(rec, "vlm-r1-rec-3b") == [
        {"role": "user", "content": VLM_R1_REC.format(rec.prompt)}]
    [detection] = load_synthetic(n=1, seed=0, task="detection")
    assert detection.prompt.startswith("Please carefully check the image and detect the following objects: ")
    assert _asked(detection, "vlm-r1-ovd-3b") == [{"role": "user", "content": detection.prompt + VLM_R1_OVD_THINK}]
    [preference] = load_synthetic(n=1, seed=0, task="preference")
    first, second = (part.split("  \n")[0] for part in preference.prompt.split("]:\n")[2:4])
    assert preference.prompt == format_r1_reward_question("Describe the shapes in the image.", first, second)
    assert _asked(preference, "r1-reward-7b") == [{"role": "user", "content": preference.prompt}]  # as written
    for task, start in (("judge", "Is there a "), ("choice", "Which shape is "), ("mcq", "Which shape is ")):
        [sample] = load_synthetic(n=1, seed=0, task=task)
        assert sample.prompt.startswith(start) and "template" not in sample.meta  # the entries' default template
        assert _asked(sample, "curr-reft-7b") == [{"role": "user", "content": CURR_REFT_NORMAL.format(sample.prompt)}]


@pytest.mark.parametrize("task", ["rec", "detection", "preference"])
def test_synthetic_is_seeded_and_scores_its_own_truth_as_perfect(task):
    a, b = load_synthetic(n=4, seed=3, task=task), load_synthetic(n=4, seed=3, task=task)
    assert [s.target for s in a] == [s.target for s in b] and a[0].images[0].tobytes() == b[0].images[0].tobytes()
    sample = a[0]
    if task == "rec":
        box = [int(v) for v in sample.target["bbox"]]
        [result] = get("vlm-r1-rec-iou")([f"<think>t</think><answer>{box}</answer>"], [sample])
        assert result.score == pytest.approx(1.0)
    elif task == "detection":
        answer = json.dumps([{"bbox_2d": o["bbox"], "label": o["label"]} for o in sample.target["objects"]])
        [result] = get("vision-r1-precision")([answer], [sample])
        assert result.score == pytest.approx(1.0) and len(sample.target["objects"]) == 3
    else:
        [result] = get("r1-reward")([f"<think>t</think><answer>{sample.target['answer']}</answer>"], [sample])
        assert result.score == pytest.approx(1.5)


def test_synthetic_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown synthetic"):
        load_synthetic(task="segmentation")
    with pytest.raises(ValueError, match="at least 28"):
        load_synthetic(size=10)
