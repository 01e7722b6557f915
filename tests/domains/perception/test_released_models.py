"""Perception entries, REC evaluation and recipes against what the authors released.

References are the authors' files (repository@commit:path:line in each test); the VLM-R1 REC box reader
is ported below unchanged from om-ai-lab/VLM-R1@90052f4:src/eval/test_rec_r1.py:68-79.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

import zoo
from domains.perception import DOMAIN
from domains.perception.evaluate import score_rows, vlm_r1_eval_box
from domains.perception.prompts import SHUFFLE_R1_USER, last_boxed, parse_think_boxed
from zoo.data import Sample
from zoo.engines.checks import check_training_data
from zoo.engines.vlm.checks import check_image_first
from zoo.engines.vlm.recipe import ModelConfig, VLMRecipe
from zoo.hub import ModelNotAvailableError, ResolvedModel
from zoo.outputs import Prediction
from zoo.pipelines.vlm import VLMPipeline
from zoo.recipe import DataConfig, RecipeError, read_yaml

RECIPES = Path(__file__).parents[3] / "domains" / "perception" / "recipes"


def extract_bbox_answer(content):  # om-ai-lab/VLM-R1@90052f4:src/eval/test_rec_r1.py:68-79, unchanged
    # Try to find the bbox within <answer> tags, if can not find, return [0, 0, 0, 0]
    answer_tag_pattern = r'<answer>(.*?)</answer>'
    bbox_pattern = r'\{.*\[(\d+),\s*(\d+),\s*(\d+),\s*(\d+)]\s*.*\}'
    content_answer_match = re.search(answer_tag_pattern, content, re.DOTALL)
    if content_answer_match:
        content_answer = content_answer_match.group(1).strip()
        bbox_match = re.search(bbox_pattern, content_answer, re.DOTALL)
        if bbox_match:
            bbox = [int(bbox_match.group(1)), int(bbox_match.group(2)), int(bbox_match.group(3)), int(bbox_match.group(4))]
            return bbox
    return [0, 0, 0, 0]


REC_ANSWERS = [
    '<think>t</think><answer>{"bbox_2d": [10, 20, 110, 220]}</answer>',
    "<think>t</think><answer>[10, 20, 110, 220]</answer>",  # a bare list: no braces, no box
    '<answer>{"bbox_2d": [10.5, 20, 110, 220]}</answer>',  # floats: no box
    '<answer>{"bbox_2d": [10.0, 20.0, 110.0, 220.0]}</answer>',
    '<answer>[{"bbox_2d": [1, 2, 3, 4]}, {"bbox_2d": [50, 60, 70, 80]}]</answer>',  # two boxes: the last
    '<answer>```json\n{"bbox_2d": [5,6,7,8], "label": "cup"}\n```</answer>',
    '{"bbox_2d": [10, 20, 110, 220]}',  # no answer tags
    "<answer>(10,20),(110,220)</answer>",
    '<answer>{"bbox_2d": [10, 20, 110, 220]}</answer><answer>{"bbox_2d": [1, 1, 2, 2]}</answer>',  # the first answer
    '<answer>{"a": [1, 2, 3, 4]} and {"b": [9, 9, 9]}</answer>',
]


@pytest.mark.parametrize("text", REC_ANSWERS)
def test_rec_box_reader_matches_vlm_r1_eval(text):
    ours = vlm_r1_eval_box(text)
    assert (ours if ours is not None else [0, 0, 0, 0]) == extract_bbox_answer(text)


def test_rec_accuracy_reads_boxes_as_vlm_r1_and_maps_from_the_frame_seen():
    sample = Sample("s", (), "q", {"bbox": [20.0, 40.0, 220.0, 440.0], "image_size": [400, 600]})
    frame = {"model_frame_size": [200, 300]}  # the model saw the image at half size
    answers = ['<answer>{"bbox_2d": [10, 20, 110, 220]}</answer>', "<answer>[10, 20, 110, 220]</answer>"]
    # the pipeline's lenient parser read a box from both (in original pixels)
    preds = [Prediction(text=t, bbox=[20.0, 40.0, 220.0, 440.0], extra=frame) for t in answers]
    strict = score_rows([sample, sample], preds, vlm_r1_frame="resized")
    assert [r["correct"] for r in strict] == [True, False] and [r["no_box"] for r in strict] == [False, True]
    assert strict[0]["bbox"] == [20.0, 40.0, 220.0, 440.0]
    assert [r["correct"] for r in score_rows([sample, sample], preds)] == [True, True]  # the entry parser's reading


# --- licences as the authors state them ---------------------------------------------------------------


def test_licences_follow_the_authors():
    vision_r1 = zoo.info("vision-r1-7b")
    assert vision_r1.license == "other" and vision_r1.code_license == "apache-2.0"
    assert "Research use only" in vision_r1.notes and "README.md:166-171" in vision_r1.license_source
    rft = zoo.info("visual-rft-lisa-7b")
    assert rft.license == "cc-by-nc-4.0" and rft.code_license == "apache-2.0" and "research use only" in rft.notes
    assert "README.md:266-268" in rft.license_source
    three_b = [n for n in zoo.list_models(domain="perception") if zoo.info(n).base_model == "Qwen/Qwen2.5-VL-3B-Instruct"]
    assert set(three_b) == {"vlm-r1-rec-3b", "vlm-r1-ovd-3b", "vlm-r1-math-3b", "curr-reft-3b", "shuffle-r1-3b"}
    for name in three_b:
        assert "Qwen Research License" in zoo.info(name).license_source, name


@pytest.fixture(scope="module")
def tiny():
    from zoo.tiny import build_tiny_vlm

    return build_tiny_vlm("qwen2_5_vl")


def test_curr_reft_prompts_carry_no_system_prompt(tiny, tmp_path):
    # ding523/Curr_REFT@f123433 Stage3_open_math_resize.py:226 and eval/muti_process_eval.py:478 comment it out.
    for name in ("curr-reft-3b", "curr-reft-7b"):
        pipe = VLMPipeline(*tiny, zoo.info(name), ResolvedModel(tmp_path, "local", "local"))
        assert [m["role"] for m in pipe.messages("image", "What is 2+2?")] == ["user"]


def shuffle_r1_eval_prompt(system_prompt: str, question: str) -> str:
    """xiaomi-research/shuffle-r1@31d3ff0:inference/infer_vllm.py:104, the prompt it scores with (one image)."""
    return f"<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n{system_prompt} <|vision_start|><|image_pad|><|vision_end|>{question}<|im_end|>\n<|im_start|>assistant\n"


# xiaomi-research/shuffle-r1@31d3ff0:inference/infer_vllm.py:138 (--system-prompt default)
SHUFFLE_R1_THINKING = "You FIRST think about the reasoning process as an internal monologue and then provide the final answer. The reasoning process MUST BE enclosed within <think> </think> tags. The final answer MUST BE put in \\boxed{}."


def test_shuffle_r1_asks_as_the_authors_evaluation(tiny, tmp_path):
    """Thinking prompt, image, question, under the default system turn: the chat text equals infer_vllm's."""
    model, processor = tiny
    question = "What is the area of <image> the triangle?"  # an image tag inside a question stays text
    for size in ("3b", "7b"):
        entry = zoo.info(f"shuffle-r1-{size}")
        pipe = VLMPipeline(model, processor, entry, ResolvedModel(tmp_path, "local", "local"))
        text = processor.apply_chat_template(pipe.messages("image", question), add_generation_prompt=True, tokenize=False)
        assert text == shuffle_r1_eval_prompt(SHUFFLE_R1_THINKING, question)
        assert entry.repo_id == f"XenoZLH/Shuffle-R1-Qwen-{size.upper()}"
        assert (entry.spec.min_pixels, entry.spec.max_pixels, entry.spec.max_new_tokens) == (262144, 4194304, 2048)


def test_shuffle_r1_training_prompt_folds_to_the_evaluation_text():
    """examples/qwen2_5_vl_7b.sh:10-11 holds a line break; the YAML read of the dotlist value folds it to a space."""
    script_value = """You FIRST think about the reasoning process as an internal monologue and then provide the final answer.
 The reasoning process MUST BE enclosed within <think> </think> tags. The final answer MUST BE put in \\boxed{}."""
    assert yaml.safe_load(script_value).strip() == SHUFFLE_R1_THINKING
    assert SHUFFLE_R1_USER == SHUFFLE_R1_THINKING + " <image>{question}"


def test_an_entry_with_the_image_between_texts_is_refused_by_a_single_turn_loop():
    with pytest.raises(RecipeError, match="between two texts"):
        check_image_first("shuffle-r1-7b", ModelConfig(name="x", entry="shuffle-r1-7b").contract(), "the GRPO loop")


@pytest.mark.parametrize(("text", "boxed"), [(r"so \boxed{12}.", "12"), (r"\boxed{1} then \boxed{\frac{1}{2}}", r"\frac{1}{2}"),
                                             (r"\boxed{ A }", "A"), (r"\boxed{3", None), ("no box", None)])  # fmt: skip
def test_boxed_answer_is_mathrulers(text, boxed):
    # hiyouga/MathRuler@9ead5a3:mathruler/grader.py extract_boxed_content: last \boxed{, balanced braces, stripped
    assert last_boxed(text) == boxed
    assert parse_think_boxed("<think>t</think>" + text).get("answer") == boxed


def test_ixc_reward_entry_says_why_the_zoo_cannot_load_it():
    entry = zoo.info("internlm-xcomposer2d5-7b-reward")
    assert entry.name == "ixc-2.5-reward-7b" and not entry.released and entry.license == "other"
    with pytest.raises(ModelNotAvailableError, match="pickled PyTorch shards"):
        zoo.load("ixc-2.5-reward-7b")


# --- evaluation data ----------------------------------------------------------------------------------


def test_ovdeval_is_evaluation_data_of_the_domain():
    assert DOMAIN.eval_datasets == ("ovdeval",)
    with pytest.raises(RecipeError, match="evaluation data"):
        check_training_data(DataConfig(name="ovdeval", kwargs={"path": "data/OVDEval/annotations/color.json"}))
    with pytest.raises(RecipeError, match="evaluation data"):
        check_training_data(DataConfig(name="refcoco", kwargs={"path": "data/vlm-r1/rec_jsons_processed/refcoco_testA.json"}))


@pytest.mark.parametrize("path", sorted(RECIPES.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_recipes_build_and_train_on_no_evaluation_data(path):
    recipe = VLMRecipe.from_dict(read_yaml(path))
    assert not recipe.data.allow_eval_data


def test_the_pipeline_resizes_within_the_entrys_limits_and_the_processors(tmp_path):
    # A processor at Qwen's defaults leaves an entry's narrower limits in force (vision-r1-7b: 28*28 ..
    # 12800*28*28); a checkpoint's narrower processor narrows them; ranges that do not meet: the processor's.
    from zoo.tiny import build_tiny_vlm

    model, processor = build_tiny_vlm("qwen2_5_vl")
    processor.image_processor.size = {"shortest_edge": 3136, "longest_edge": 12845056}
    pipe = VLMPipeline(model, processor, zoo.info("vision-r1-7b"), ResolvedModel(tmp_path, "local", "local"))
    assert pipe.pixel_limits == (3136, 12800 * 28 * 28)
    processor.image_processor.size = {"shortest_edge": 3136, "longest_edge": 401408}
    assert pipe.pixel_limits == (3136, 401408)
    processor.image_processor.size = {"shortest_edge": 3136, "longest_edge": 12544}
    pipe = VLMPipeline(model, processor, zoo.info("shuffle-r1-7b"), ResolvedModel(tmp_path, "local", "local"))
    assert pipe.pixel_limits == (3136, 12544)  # shuffle-r1 asks for at least 262144 pixels
