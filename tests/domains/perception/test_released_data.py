"""Loaders of the authors' released training data, each on a small file written in the released format.

* JefferyZhan/Vision-R1-Data: a ``datasets`` folder with the features of its ``dataset_info.json``
  (refs/pr/3 at 0a17371) and the ``solution`` nesting Vision-R1's code reads (visionr1_qwen.py:294-298,
  sft_qwen.py:160-162; jefferyZhan/Griffon@9866875).
* ZTE-AIM/Curr-ReFT-data: JSON lines ``{problem, solution, task, image}`` (the data card, mirrored in
  ding523/Curr_REFT@f123433 ``Evaluation&Data_Usage.md``).
* yifanzhang114/R1-Reward-RL: parquet ``{question, message, answer, image}`` (card at c3243ab; the
  ``message`` chat of yfzhang114/r1_reward@3693413 README.md:71-80).
"""

from __future__ import annotations

import base64
import io
import json

import pytest
from PIL import Image

import zoo
from domains.perception import prompts
from domains.perception.data import (
    CURR_REFT_STAGE_TEMPLATES,
    curr_reft_template,
    load_curr_reft,
    load_r1_reward_rl,
    load_refcoco,
    load_vision_r1_data,
)
from domains.perception.prompts import format_r1_reward_question
from rewards.base import get
from zoo.engines.checks import check_training_data
from zoo.engines.vlm.contract import with_contract
from zoo.engines.vlm.recipe import ModelConfig
from zoo.recipe import DataConfig, RecipeError


def _asked(sample, entry: str) -> list[dict]:
    """The chat a recipe with ``model.entry: entry`` trains ``sample`` on (as ``zoo.load(entry)`` asks it)."""
    return with_contract(sample, ModelConfig(entry=entry).contract()).prompt

# --- Vision-R1-Data -----------------------------------------------------------------------------------

#: Three rows, one per question wording Vision-R1 rewrites for Qwen (visionr1_qwen.py:426-434), plus two
#: that its instance filter drops (0 and 31 objects, L450-460).
VR1_ROWS = [
    {"problem": "Can you point out dog in the image and provide the coordinates of its location?",
     "solution": [["dog", [[10.0, 20.0, 200.0, 220.0]]], ["dog", [[300.0, 40.0, 500.0, 300.0]]]], "n": 2},
    {"problem": "Examine the image for any objects from the category set. Report the coordinates of each detected "
                "object. The category set includes cat, bus.", "solution": [["cat", [[5.0, 6.0, 50.0, 60.0]]]], "n": 1},
    {"problem": "Locate the exact position of bus in the picture, if you can.",
     "solution": [["bus", [[0.0, 0.0, 600.0, 400.0]]], ["bus", [[1.0, 1.0, 9.0, 9.0]]], ["bus", [[2.0, 2.0, 8.0, 8.0]]]],
     "n": 3},
    {"problem": "Can you point out cow in the image and provide the coordinates of its location?", "solution": [], "n": 0},
    {"problem": "Can you point out ant in the image and provide the coordinates of its location?",
     "solution": [["ant", [[1.0, 1.0, 2.0, 2.0]]]] * 31, "n": 31},
]  # fmt: skip


def _png(size: tuple[int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (90, 90, 90)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def vision_r1_folder(tmp_path):
    from datasets import Dataset, Features, Value
    from datasets import Image as ImageFeature

    features = Features({"problem": Value("string"), "image": ImageFeature(), "solution": Value("string"),
                         "width": Value("int64"), "height": Value("int64"), "num_instances": Value("int64"),
                         "target_id_maps": Value("string"), "source": Value("string")})  # fmt: skip
    rows = [{"problem": r["problem"], "image": {"bytes": _png((320, 240)), "path": None},
             "solution": json.dumps(r["solution"]), "width": 640, "height": 480, "num_instances": r["n"],
             "target_id_maps": json.dumps({lab: i + 1 for i, lab in enumerate(sorted({s[0] for s in r["solution"]}))}),
             "source": "coco"} for r in VR1_ROWS]  # fmt: skip
    Dataset.from_list(rows, features=features).save_to_disk(str(tmp_path / "Vision-R1-Data"))
    return tmp_path / "Vision-R1-Data"


def test_vision_r1_data_reads_the_released_folder_as_vision_r1_does(vision_r1_folder):
    samples = load_vision_r1_data(str(vision_r1_folder))
    assert [s.meta["num_instances"] for s in samples] == [1, 2, 3]  # 0 and 31 filtered out, sorted by count
    cat, dogs, buses = samples
    assert cat.prompt == ("Locate every item from the category list in the image and output the coordinates in JSON "
                          "format. The category set includes cat, bus.")  # fmt: skip
    assert dogs.prompt == "Locate every dog in the image and output the coordinates in JSON format."
    assert buses.prompt == "Locate every bus in the image and output the coordinates in JSON format."
    assert dogs.target["objects"] == [{"bbox": [10.0, 20.0, 200.0, 220.0], "label": "dog"},
                                      {"bbox": [300.0, 40.0, 500.0, 300.0], "label": "dog"}]  # fmt: skip
    # boxes live in the width/height columns' frame, not the stored image's (320 x 240 here)
    assert dogs.target["image_size"] == [640, 480] and dogs.target["label_ids"] == {"dog": 1}
    assert Image.open(io.BytesIO(dogs.images[0])).size == (320, 240)
    assert load_vision_r1_data(str(vision_r1_folder), qwen_wording=False)[1].prompt == VR1_ROWS[0]["problem"]
    # the reworded question is the whole user turn, no system prompt (visionr1_qwen.py:438-447): vision-r1-7b's
    assert _asked(dogs, "vision-r1-7b") == [{"role": "user", "content": dogs.prompt}]


def test_vision_r1_reward_scores_a_loaded_sample_against_its_solution(vision_r1_folder):
    dogs = load_vision_r1_data(str(vision_r1_folder))[1]
    seen = [320, 240]  # a model that saw the stored image at its own size writes boxes at half the columns' scale
    target = {**dogs.target, "resized_size": seen}
    answer = json.dumps([{"bbox_2d": [int(v / 2) for v in o["bbox"]], "label": o["label"]} for o in dogs.target["objects"]])
    [result] = get("vision-r1-precision")([answer], [type(dogs)(id="d", images=dogs.images, prompt="", target=target)])
    assert result.score == pytest.approx(1.0)


def test_vision_r1_data_refuses_what_vision_r1_would(tmp_path, vision_r1_folder):
    with pytest.raises(FileNotFoundError, match="datasets folder"):
        load_vision_r1_data(str(tmp_path))
    from datasets import Dataset

    Dataset.from_list([{"problem": "Where is the dog?", "image": None, "solution": "[]", "width": 1, "height": 1,
                        "num_instances": 1, "target_id_maps": "{}"}]).save_to_disk(str(tmp_path / "odd"))  # fmt: skip
    with pytest.raises(ValueError, match="visionr1_qwen.py:426-434"):
        load_vision_r1_data(str(tmp_path / "odd"))
    with pytest.raises(ValueError, match="neither bytes nor a path"):
        load_vision_r1_data(str(tmp_path / "odd"), qwen_wording=False)


# --- Curr-ReFT-data -----------------------------------------------------------------------------------


@pytest.fixture
def curr_reft_files(tmp_path):
    Image.new("RGB", (64, 48)).save(tmp_path / "img.jpg")

    def write(name: str, rows: list[dict]) -> str:
        path = tmp_path / name
        path.write_text("".join(json.dumps({**r, "image": "img.jpg"}) + "\n" for r in rows))
        return str(path)

    return tmp_path, write


def test_curr_reft_stages_get_each_task_its_template_and_no_system_prompt(curr_reft_files):
    root, write = curr_reft_files
    judge = load_curr_reft(write("judge_math_train.jsonl", [
        {"problem": "Is the angle 30 degrees?", "solution": "<answer>yes</answer>", "task": "math"}]), "judge")
    choice = load_curr_reft(write("choice_classify_v2_coco_val.jsonl", [
        {"problem": "Which are shown? A. cat B. dog", "solution": "<answer>A,B</answer>", "task": "classify"},
        {"problem": "Which box? A. [1,2,3,4] B. [5,6,7,8]", "solution": "<answer>B</answer>", "task": "detection"}]),
        "choice")  # fmt: skip
    opened = load_curr_reft(write("open_train.jsonl", [
        {"problem": "Find the cat.", "solution": "<think>t</think><answer>{'bbox': [1, 2, 30, 40]}</answer>",
         "task": "detection"},
        {"problem": "Describe it.", "solution": "<answer>a cat</answer>", "task": "coco_vqa"},
        {"problem": "What is 2+2?", "solution": "<answer>4</answer>", "task": "math"}]), "open")  # fmt: skip
    samples = [*judge, *choice, *opened]
    assert [s.prompt for s in samples] == ["Is the angle 30 degrees?", "Which are shown? A. cat B. dog",
                                           "Which box? A. [1,2,3,4] B. [5,6,7,8]", "Find the cat.", "Describe it.",
                                           "What is 2+2?"]  # the rows' problems, raw  # fmt: skip
    assert [s.meta.get("template") for s in samples] == ["judge", "choice-classify", "choice", "open-detection",
                                                         "open-vqa", None]  # fmt: skip
    # The curr-reft entries wrap each as its stage's trainer does, with no system prompt: the authors' strings
    # (ding523/Curr_REFT@f123433 train_code/grpo/open-r1-multimodal/src/open_r1/), which the loader wrote before.
    think = "First output the thinking process in <think> </think> tags and then output the final answer in <answer> </answer> tags"
    expected = [
        f"Is the angle 30 degrees? {think}. Ensure your final answer is exactly 'yes' or 'no'.",  # Stage1 L207-208
        (f"Which are shown? A. cat B. dog {think}. Based on the given options, select all options that accurately "
         "describe what is shown in the image. Ensure your final answer is exactly one or more of the provided "
         "option letters without any additional text."),  # Stage2 L211-212, task classify (L221-222)
        (f"Which box? A. [1,2,3,4] B. [5,6,7,8] {think}. Ensure your final answer is exactly one of the provided "
         "option letters without any additional text."),  # Stage2 L207-208
        f"Find the cat. {think}. Output the final answer in JSON format in <answer> </answer> tags.",  # Stage3 L206-207
        f"Describe it. {think}",  # Stage3 L208-209, no full stop
        f"What is 2+2? {think}.",  # Stage3 L210-211
    ]  # fmt: skip
    for size in ("3b", "7b"):
        assert [_asked(s, f"curr-reft-{size}") for s in samples] == [[{"role": "user", "content": e}] for e in expected]
    assert [s.target["stage"] for s in samples] == ["judge", "choice", "choice", "open", "open", "open"]
    # an entry without Curr-ReFT's templates cannot ask the stage files: refused, not silently re-worded
    with pytest.raises(ValueError, match="no user template 'judge'; the authors publish: none"):
        _asked(judge[0], "vlm-r1-rec-3b")
    assert opened[2].target == {"answer": "<answer>4</answer>", "task": "math", "stage": "open"}
    assert samples[0].images == (str(root / "img.jpg"),)
    assert get("curr-reft")(["<think>t</think><answer>yes</answer>"], [judge[0]])[0].score == 1.0


def test_curr_reft_test_files_are_refused_as_training_data_and_val_files_are_not():
    # The card's in-domain test file, and a _val file it says the authors trained on (paths only: not read).
    train = "data/Curr-ReFT-data/grpo_data/train/"
    with pytest.raises(RecipeError, match="evaluation data"):
        check_training_data(DataConfig(name="curr-reft-data", kwargs={
            "path": train + "open/coco_3k_2task/detection_coco_test.jsonl", "stage": "open"}))  # fmt: skip
    check_training_data(DataConfig(name="curr-reft-data", kwargs={"path": train + "judge/judge_v2_coco_val.jsonl",
                                                                  "stage": "judge"}))  # fmt: skip


def test_curr_reft_bad_stage_is_one_line(curr_reft_files):
    _, write = curr_reft_files
    with pytest.raises(ValueError, match="judge, choice and open"):
        load_curr_reft(write("x.jsonl", []), "final")


def test_curr_reft_entries_carry_every_template_the_loader_names():
    named = {name for names in CURR_REFT_STAGE_TEMPLATES.values() for name in names.values() if name}
    for size in ("3b", "7b"):
        spec = zoo.info(f"curr-reft-{size}").spec
        assert set(spec.templates) == named == {"judge", "choice", "choice-classify", "open-detection", "open-vqa"}
        assert spec.user == prompts.CURR_REFT_USER and spec.system is None
        assert spec.user_text("Q?", "judge") == prompts.CURR_REFT_JUDGE_USER.replace("{question}", "Q?")
        with pytest.raises(ValueError, match="no user template 'stage1'; the authors publish: choice, choice-classify"):
            spec.user_text("Q?", "stage1")
    assert curr_reft_template("open", "math") is None and curr_reft_template("judge", "detection") == "judge"


# --- R1-Reward-RL -------------------------------------------------------------------------------------

QUESTION = "Give a comprehensive description of this artwork."


def _r1_row(image_in_message: str, image_column: str) -> dict:
    prompt = format_r1_reward_question(QUESTION, "A print of a cake shop.", "A photo of a dog.")
    message = [{"role": "user", "content": [{"type": "text", "text": prompt},
                                            {"type": "image", "image": image_in_message}]}]  # fmt: skip
    return {"question": QUESTION, "message": json.dumps(message), "answer": ["<answer>1</answer>"],
            "image": image_column}


def _parquet(path, rows) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("question", pa.string()), ("message", pa.string()), ("answer", pa.list_(pa.string())),
                        ("image", pa.string())])  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return str(path)


def test_r1_reward_rl_reads_the_judge_prompt_image_and_verdict(tmp_path):
    Image.new("RGB", (40, 30)).save(tmp_path / "edouard-vuillard_the-cake-shop.jpg")
    encoded = base64.b64encode(_png((20, 10))).decode()
    rows = [_r1_row(str(tmp_path / "edouard-vuillard_the-cake-shop.jpg"), ""),  # the path the README has users write
            _r1_row("/mmu_mllm_hdd/yfzhang/data/RLAIF-V-image/edouard-vuillard_the-cake-shop.jpg", ""),  # found by name
            _r1_row("/elsewhere/missing.jpg", encoded)]  # the image column
    _parquet(tmp_path / "R1-Reward-RL" / "data" / "train-00000-of-00001.parquet", rows)
    samples = load_r1_reward_rl(str(tmp_path / "R1-Reward-RL"), image_root=str(tmp_path))
    assert [s.images[0] for s in samples[:2]] == [str(tmp_path / "edouard-vuillard_the-cake-shop.jpg")] * 2
    assert Image.open(io.BytesIO(samples[2].images[0])).size == (20, 10)
    first = samples[0]
    assert first.prompt == format_r1_reward_question(QUESTION, "A print of a cake shop.", "A photo of a dog.")
    assert first.target == {"answer": "<answer>1</answer>"} and first.meta["question"] == QUESTION
    # the row's judge prompt is the question, raw data: r1-reward-7b ({question}, no system prompt) asks it as is
    assert _asked(first, "r1-reward-7b") == [{"role": "user", "content": first.prompt}]
    [result] = get("r1-reward")(["<think>the first matches</think><answer>1</answer>"], [first])
    assert result.score == pytest.approx(1.5)  # 0.5 format + accuracy 1 (no consistency judge)


def test_r1_reward_rl_readme_jsonl_and_missing_image(tmp_path):
    path = tmp_path / "rl.jsonl"
    path.write_text(json.dumps(_r1_row("/nowhere/a.jpg", "")) + "\n")
    with pytest.raises(FileNotFoundError, match="image_root"):
        load_r1_reward_rl(str(path))


# --- RefCOCO/+/g train files together (VLM-R1's REC run) ----------------------------------------------


def test_refcoco_reads_the_three_train_files_in_order(tmp_path):
    (tmp_path / "train2014").mkdir()
    Image.new("RGB", (100, 80)).save(tmp_path / "train2014" / "a.jpg")
    paths = []
    for name, box in (("refcoco_train.json", [1, 2, 30, 40]), ("refcocop_train.json", [5, 6, 50, 60]),
                      ("refcocog_train.json", [7, 8, 70, 70])):  # fmt: skip
        (tmp_path / name).write_text(json.dumps([{"image": "train2014/a.jpg", "problem": name, "solution": box}]))
        paths.append(str(tmp_path / name))
    samples = load_refcoco(paths, image_root=str(tmp_path))
    assert [s.meta["source"] for s in samples] == ["refcoco_train.json", "refcocop_train.json", "refcocog_train.json"]
    assert [s.target["bbox"] for s in samples][2] == [7.0, 8.0, 70.0, 70.0]
    assert len(load_refcoco(paths, image_root=str(tmp_path), limit=2)) == 2
