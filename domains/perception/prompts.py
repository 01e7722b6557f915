"""The authors' prompts and output parsers for general visual RL models.

Strings are facts copied from the authors' released code (repository and file named per
constant). Parsers never raise: a malformed answer comes back as ``{"parse_error": reason}``
beside whatever could be read. Boxes (``bbox``, and each of ``objects``) are returned in the
*model's* frame; the pipeline maps them to original pixels with the entry's ``coord_frame``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rewards.parsing import ParseError, extract_tag, parse_json_value, parse_qwen_box
from zoo.kinds import IMAGE_SLOT

#: The R1 system prompt shared by Visual-RFT (Liuziyu77/Visual-RFT ``src/virft/src/open_r1/grpo.py``),
#: VLM-R1 (``grpo_jsonl.py``) and Curr-ReFT (``Stage3_open_math_resize.py``).
R1_SYSTEM = (
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. The assistant "
    "first thinks about the reasoning process in the mind and then provides the user with the answer. The reasoning "
    "process and answer are enclosed within <think> </think> and <answer> </answer> tags, respectively, i.e., "
    "<think> reasoning process here </think><answer> answer here </answer>"
)

# VLM-R1 (om-ai-lab/VLM-R1 src/open-r1-multimodal/src/open_r1/vlm_modules/qwen_module.py,
# get_question_template; the same REC string in src/eval/test_rec_r1.py).
VLM_R1_REC_USER = (
    "{question} First output the thinking process in <think> </think> tags and then output the final answer in "
    "<answer> </answer> tags. Output the final answer in JSON format."
)
VLM_R1_DEFAULT_USER = (
    "{question} First output the thinking process in <think> </think> tags and then output the final answer in "
    "<answer> </answer> tags."
)
# VLM-R1 paper (arXiv 2504.07615, §5.1 "Problem Template of OVD" and "Thinking Prompt"): the OVD
# question lists the target labels; the thinking sentence is appended to it.
VLM_R1_OVD_PROBLEM = (
    "Please carefully check the image and detect the following objects: {labels}. Output each detected target's "
    "bbox coordinates in JSON format. The format of the bbox coordinates is:\n```json\n[\n"
    '    {{"bbox_2d": [x1, y1, x2, y2], "label": "target name"}},\n'
    '    {{"bbox_2d": [x1, y1, x2, y2], "label": "target name"}}\n]\n```\n'
    "If there are no such targets in the image, simply respond with None."
)
VLM_R1_OVD_USER = "{question} Output the thinking process in <think> </think> and final answer in <answer> </answer> tags."

# Visual-RFT LISA grounding (Liuziyu77/Visual-RFT src/virft/src/open_r1/grpo_lisa.py, QUESTION_TEMPLATE;
# "grouding" and the stray ")" are the authors').
VISUAL_RFT_LISA_USER = (
    "{question} Output the thinking process in <think> </think> and your grouding box. Following "
    '"<think> thinking process </think>\n<answer>(x1,y1),(x2,y2)</answer>)" format.'
)
# Its inference and demo ask the bare instruction inside the prefix its training data already carries, with a full
# stop after it (Liuziyu77/Visual-RFT@9486633:lisa_evaluation/Qwen2_VL_lisa_infere.py:45, demo/README.md:39;
# the training question is gen_sft.py:14's "Output the bounding box ... instruction: {instruct}", no full stop).
VISUAL_RFT_LISA_DIRECT_USER = VISUAL_RFT_LISA_USER.replace(
    "{question}", "Output the bounding box in the image corresponding to the instruction: {question}.")

# Vision-R1 (jefferyZhan/Griffon Vision-R1/README.md, "official prompts"): plain Qwen2.5-VL
# grounding requests, no think tags; this is the detect-everything one.
VISION_R1_DETECT_ALL = "Please first output bbox coordinates and names of every item in this image in JSON format."

# Curr-ReFT (ding523/Curr_REFT@f123433 train_code/grpo/open-r1-multimodal/src/open_r1/): stage 3
# (Stage3_open_math_resize.py:206-211, QUESTION_TEMPLATE_NORMAL, _DETECTION and _VQA, the last without a
# final full stop), stage 1 (Stage1_judge_math_resize.py:207-208) and stage 2 (Stage2_choice_math_resize.py:
# 207-212: one template for math and detection choices, another for multi-answer classification).
CURR_REFT_USER = VLM_R1_DEFAULT_USER
CURR_REFT_DETECTION_USER = (
    "{question} First output the thinking process in <think> </think> tags and then output the final answer in "
    "<answer> </answer> tags. Output the final answer in JSON format in <answer> </answer> tags."
)
CURR_REFT_VQA_USER = (
    "{question} First output the thinking process in <think> </think> tags and then output the final answer in "
    "<answer> </answer> tags"
)
CURR_REFT_JUDGE_USER = (
    "{question} First output the thinking process in <think> </think> tags and then output the final answer in "
    "<answer> </answer> tags. Ensure your final answer is exactly 'yes' or 'no'."
)
CURR_REFT_CHOICE_USER = (
    "{question} First output the thinking process in <think> </think> tags and then output the final answer in "
    "<answer> </answer> tags. Ensure your final answer is exactly one of the provided option letters without any "
    "additional text."
)
CURR_REFT_CLASSIFY_CHOICE_USER = (
    "{question} First output the thinking process in <think> </think> tags and then output the final answer in "
    "<answer> </answer> tags. Based on the given options, select all options that accurately describe what is "
    "shown in the image. Ensure your final answer is exactly one or more of the provided option letters without "
    "any additional text."
)
#: Curr-ReFT's other user templates by name: the curr-reft entries' ``templates``, their default ``user`` being
#: the open stage's QUESTION_TEMPLATE_NORMAL (:data:`CURR_REFT_USER`). A training sample names one with
#: ``meta["template"]`` (``load_curr_reft``), ``zoo run curr-reft-7b --template judge`` asks with it. Stage 1
#: asks every task with QUESTION_TEMPLATE_JUDGE (Stage1_judge_math_resize.py:207-208, 214), stage 2 with
#: QUESTION_TEMPLATE_others, classification with QUESTION_TEMPLATE_Classify (Stage2_choice_math_resize.py:207-212,
#: 220-222), stage 3 detection and coco_vqa with their own, other tasks with the default
#: (Stage3_open_math_resize.py:206-211, 217-222); ding523/Curr_REFT@f123433 as above.
CURR_REFT_TEMPLATES = {
    "judge": CURR_REFT_JUDGE_USER,
    "choice": CURR_REFT_CHOICE_USER,
    "choice-classify": CURR_REFT_CLASSIFY_CHOICE_USER,
    "open-detection": CURR_REFT_DETECTION_USER,
    "open-vqa": CURR_REFT_VQA_USER,
}

# Shuffle-R1 (xiaomi-research/shuffle-r1@31d3ff0): the thinking prompt opens the user turn, then the image, then the
# question, under Qwen's default system turn. Evaluation writes it out: "You are a helpful assistant." system, user
# "{system_prompt} <image>{question}" (inference/infer_vllm.py:104, 138; evaluation/utils/processing.py:61).
# Training builds the same turn (verl/utils/dataset.py:133-136: "<image> " + question, the prompt joined before it
# by a space, no system message, so the chat template adds the same default system turn), with the prompt of
# examples/qwen2_5_vl_{3b,7b}.sh:10-11, whose line break OmegaConf's YAML read of `data.system_prompt=` folds
# into a space, the text of infer_vllm.py:138. zoo: the one space training puts after the image is not kept
# (evaluation's layout, which scored the released weights). The README's snippet (README.md:68-77: the prompt
# after an image-first layout) is neither.
SHUFFLE_R1_SYSTEM = "You are a helpful assistant."
SHUFFLE_R1_USER = (
    "You FIRST think about the reasoning process as an internal monologue and then provide the final answer. "
    "The reasoning process MUST BE enclosed within <think> </think> tags. The final answer MUST BE put in "
    "\\boxed{}. " + IMAGE_SLOT + "{question}"
)

# R1-Reward (yfzhang114/r1_reward README.md, make_conv_rm): the judge prompt over two responses.
R1_REWARD_USER = (
    "You are a highly skilled and impartial evaluator tasked with comparing two responses generated by a Large "
    "Multimodal Model for a given question. "
    "- Start with a thorough, side-by-side comparative analysis enclosed within <think> and </think> tags. A tie is "
    "not permitted; you must choose a better option.\n\n"
    "- Conclude with a single numeric choice enclosed within <answer> and </answer> tags:\n"
    '  - Output "1" if Response 1 is better.\n'
    '  - Output "2" if Response 2 is better.\n\n'
    "###### **Input:**  \n"
    "###### [Question]:\n{question}  \n\n"
    "###### [Response 1]:\n{response1}  \n\n"
    "###### [Response 2]:\n{response2}  \n\n"
    "###### **Output Format (strictly follow):**  \n"
    "<think>Your detailed comparative analysis goes here</think><answer>1/2</answer>"
)


def format_r1_reward_question(question: str, response1: str, response2: str) -> str:
    """R1-Reward's judge prompt for one comparison (the entry's ``user`` template is ``{question}``)."""
    return R1_REWARD_USER.format(question=question, response1=response1, response2=response2)


def _think_answer(text: str) -> tuple[dict[str, Any], str | None]:
    out: dict[str, Any] = {"think": extract_tag(text, "think", required=False)}
    try:
        return out, extract_tag(text, "answer")
    except ParseError as err:
        return {**out, "parse_error": str(err)}, None


def parse_think_answer(text: str, question: str = "") -> dict[str, Any]:
    """``think`` and ``answer`` from ``<think>..</think><answer>..</answer>`` (math, MCQ, VQA)."""
    out, answer = _think_answer(text)
    return out if answer is None else {**out, "answer": answer}


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}``, braces balanced, or ``None`` (upstream: the string "None"):
    hiyouga/MathRuler@9ead5a3:mathruler/grader.py ``extract_boxed_content``, which Shuffle-R1 grades with
    (xiaomi-research/shuffle-r1@31d3ff0:verl/utils/reward_score/math.py:18)."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, begin = 0, start + len("\\boxed{")
    for i in range(begin, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth < 0:
            return text[begin:i].strip()
    return None


def parse_think_boxed(text: str, question: str = "") -> dict[str, Any]:
    """``think`` and the last ``\\boxed{}`` as ``answer`` (Shuffle-R1's format)."""
    out: dict[str, Any] = {"think": extract_tag(text, "think", required=False)}
    answer = last_boxed(text)
    return {**out, "parse_error": "no \\boxed{...} answer"} if answer is None else {**out, "answer": answer}


def parse_rec(text: str, question: str = "") -> dict[str, Any]:
    """VLM-R1 REC: the ``bbox`` inside ``<answer>`` (``{"bbox_2d": [...]}`` or a bare list), model frame."""
    out, answer = _think_answer(text)
    if answer is None:
        return out
    out["answer"] = answer
    try:
        out["bbox"] = parse_qwen_box(answer)
    except ParseError as err:
        out["parse_error"] = str(err)
    return out


def parse_lisa(text: str, question: str = "") -> dict[str, Any]:
    """Visual-RFT LISA grounding: ``<answer>(x1,y1),(x2,y2)</answer>`` in Qwen2-VL's 0-1000 frame."""
    return parse_rec(text, question)


def _objects(value: Any, box_key: str, label_key: str | None, score_key: str | None) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise ParseError(f"expected a JSON list of objects, got {type(value).__name__}")
    objects = []
    for item in value:
        if not isinstance(item, dict) or box_key not in item:
            raise ParseError(f"every object needs a {box_key!r} key, got {str(item)[:60]!r}")
        box = item[box_key]
        if not isinstance(box, list) or len(box) != 4 or not all(isinstance(v, (int, float)) for v in box):
            raise ParseError(f"{box_key} must be 4 numbers, got {box!r}")
        obj: dict[str, Any] = {"bbox": [float(v) for v in box]}
        if label_key is not None:
            obj["label"] = str(item.get(label_key, ""))
        if score_key is not None:
            obj["score"] = item.get(score_key)
        objects.append(obj)
    return objects


def parse_detections(text: str, question: str = "") -> dict[str, Any]:
    """Qwen-native detections ``[{"bbox_2d": [...], "label": ...}, ...]`` (VLM-R1 OVD, Vision-R1).

    Read inside ``<answer>`` when present, fenced or not; the literal ``None`` is "nothing found".
    """
    out: dict[str, Any] = {"think": extract_tag(text, "think", required=False)}
    answer = extract_tag(text, "answer", required=False)
    body = (answer if answer is not None else text).strip()
    out["answer"] = body
    if body == "None":
        return {**out, "objects": []}
    try:
        out["objects"] = _objects(parse_json_value(body), "bbox_2d", "label", None)
    except ParseError as err:
        out["parse_error"] = str(err)
    return out


def parse_visual_rft_detections(text: str, question: str = "") -> dict[str, Any]:
    """Visual-RFT detections ``[{'Position': [x1, y1, x2, y2], 'Confidence': c}, ...]`` in ``<answer>``."""
    out, answer = _think_answer(text)
    if answer is None:
        return out
    out["answer"] = answer
    try:
        out["objects"] = _objects(parse_json_value(answer), "Position", None, "Confidence")
    except ParseError as err:
        out["parse_error"] = str(err)
    return out


def parse_preference(text: str, question: str = "") -> dict[str, Any]:
    """R1-Reward's verdict: ``answer`` "1" or "2" from ``<answer>``, as its README reads it.

    The README's fallback when ``<answer>`` is missing (a ``1`` or ``2`` with no other on the rest of
    its line) is kept, flagged by ``answer_from_fallback``.
    """
    out: dict[str, Any] = {"think": extract_tag(text, "think", required=False)}
    match = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL | re.IGNORECASE)
    if match:
        answer = match.group(1).strip()
    else:
        last = re.search(r"[12](?!.*[12])", text)  # no DOTALL, as the README: last 1/2 of the first line with one
        if last is None:
            return {**out, "parse_error": "no <answer> and no 1 or 2 in the output"}
        answer, out["answer_from_fallback"] = last.group(0), True
    if answer not in ("1", "2"):
        return {**out, "answer": answer, "parse_error": f"verdict {json.dumps(answer)[:40]} is not 1 or 2"}
    return {**out, "answer": answer}
