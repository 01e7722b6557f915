"""General visual-RL models of the zoo; facts from the authors' repositories named per entry (those
the authors link from their READMEs).

Licences are the authors' words where they give them. Weights fine-tuned from Qwen2.5-VL-3B-Instruct
also carry its Qwen Research License (the base's Hub LICENSE, discussion Qwen/Qwen2.5-VL-3B-Instruct#12),
as the GUI domain's ``gui-g1-3b`` says; the 7B base is Apache-2.0.
"""

from __future__ import annotations

from domains.perception.prompts import (
    CURR_REFT_TEMPLATES,
    CURR_REFT_USER,
    R1_SYSTEM,
    SHUFFLE_R1_SYSTEM,
    SHUFFLE_R1_USER,
    VISION_R1_DETECT_ALL,
    VISUAL_RFT_LISA_DIRECT_USER,
    VISUAL_RFT_LISA_USER,
    VLM_R1_DEFAULT_USER,
    VLM_R1_OVD_USER,
    VLM_R1_REC_USER,
    parse_detections,
    parse_lisa,
    parse_preference,
    parse_rec,
    parse_think_answer,
    parse_think_boxed,
)
from zoo.kinds import VLMSpec
from zoo.registry import ModelEntry, register

# VLM-R1 trains at the Qwen2.5-VL processor limits (grpo_jsonl.py: min_pixels 3136, max_pixels 12845056).
_QWEN = {"min_pixels": 3136, "max_pixels": 12845056}

_NO_PIN = ("not pinned: no full commit hash of this Hub repository was found (its history cannot be read from here, "
           "and the Hub page mirrors and public code searched name none); pass zoo.load(name, revision=SHA)")
_UNPINNED = {"revision_note": _NO_PIN}
# Full commits found for VLM-R1 checkpoints (how: docs/guides/hub.md); the Math one is _UNPINNED. Neither is checked
# to be its card's first or newest commit: the Hub's history could not be read here.
_PINNED = {
    # Cache path models--omlab--Qwen2.5VL-3B-VLM-R1-REC-500steps/snapshots/b9a4c5a... in two public copies of one
    # script.
    "omlab/Qwen2.5VL-3B-VLM-R1-REC-500steps": {
        "revision": "b9a4c5aa915faddc7e129c3f61d630ceef73a911",
        "revision_note": "pinned to the commit `main` resolved to when a public project downloaded it (cache path "
                         "snapshots/b9a4c5a...); first or newest commit of the card unverified",
    },
    # Cache path models--omlab--VLM-R1-Qwen2.5VL-3B-OVD-0321/snapshots/f2e8476... in two public scripts of one
    # project.
    "omlab/VLM-R1-Qwen2.5VL-3B-OVD-0321": {
        "revision": "f2e8476efe7996d6c25d82507774e903f9a8471a",
        "revision_note": "pinned to the commit `main` resolved to when a public project downloaded it (cache path "
                         "snapshots/f2e8476...); first or newest commit of the card unverified",
    },
}

#: Added to the licence source of every entry whose base is Qwen2.5-VL-3B-Instruct.
_QWEN_3B_LICENCE = ("The base Qwen/Qwen2.5-VL-3B-Instruct is published under the Qwen Research License (its Hub "
                    "card: license other, license_name qwen-research; its LICENSE, discussion "
                    "Qwen/Qwen2.5-VL-3B-Instruct#12): check it before any commercial use")
#: The licence column of a Qwen2.5-VL-3B derivative: the base's terms bind the fine-tuned weights whatever the
#: authors' code licence says, so the column is the base's (the Hub's `other`), not the repository's Apache-2.0.
_QWEN_3B = "other"
_VLM_R1_CODE = "the authors' repository om-ai-lab/VLM-R1 is Apache-2.0"
for name, repo, task, spec, card in (
    ("vlm-r1-rec-3b", "omlab/Qwen2.5VL-3B-VLM-R1-REC-500steps", "referring expression comprehension (box)",
     VLMSpec(user=VLM_R1_REC_USER, max_new_tokens=1024, parser=parse_rec, **_QWEN),
     "the Hub card's licence field was not read by this project (UNVERIFIED)"),
    ("vlm-r1-ovd-3b", "omlab/VLM-R1-Qwen2.5VL-3B-OVD-0321", "open-vocabulary detection (labelled boxes)",
     VLMSpec(user=VLM_R1_OVD_USER, max_new_tokens=1024, parser=parse_detections, **_QWEN),
     "the Hub page of omlab/VLM-R1-Qwen2.5VL-3B-OVD-0321 shows License: apache-2.0 (commit not recorded)"),
    ("vlm-r1-math-3b", "omlab/VLM-R1-Qwen2.5VL-3B-Math-0305", "multimodal math reasoning",
     VLMSpec(user=VLM_R1_DEFAULT_USER, coord_frame="none", max_new_tokens=1024, parser=parse_think_answer, **_QWEN),
     "the Hub page of omlab/VLM-R1-Qwen2.5VL-3B-Math-0305 shows License: apache-2.0 (commit not recorded)"),
):  # fmt: skip
    register(ModelEntry(
        name=name, aliases=("vlm-r1",) if name == "vlm-r1-rec-3b" else (), repo_id=repo, architecture="qwen2_5_vl",
        base_model="Qwen/Qwen2.5-VL-3B-Instruct", domain="perception", task=task, spec=spec, license=_QWEN_3B,
        code_license="apache-2.0", paper="2504.07615", notes="Prompts from qwen_module.py and the paper's OVD template. " + _QWEN_3B_LICENCE + ".",
        license_source=f"{card}; {_VLM_R1_CODE}. {_QWEN_3B_LICENCE}",
        **_PINNED.get(repo, _UNPINNED), rl_methods=("grpo",),
    ))  # fmt: skip

# Visual-RFT's released checkpoint: LISA reasoning grounding, Qwen2-VL-7B, boxes in Qwen2-VL's
# 0-1000 frame (grpo_lisa.py divides them by 1000). Direct use is the authors' LISA inference and demo
# (Liuziyu77/Visual-RFT@9486633:lisa_evaluation/Qwen2_VL_lisa_infere.py:38-56, 115; demo/README.md:32-57): R1 system
# prompt, the bare instruction in their prefix, qwen-vl-utils' default pixel limits (process_vision_info with none set:
# 3136 to 12845056; the checkpoint's own preprocessor_config.json, which could cap lower, was not read here:
# UNVERIFIED), 128 new tokens. Their training asks without the system prompt (the image branch builds the user turn
# alone, grpo_lisa.py:193-219; the R1 prompt of L157 only reaches the text-only branch, L175) and wraps the data's
# question, which carries the prefix already, in QUESTION_TEMPLATE: a recipe trains with `model.variant: train`, the
# lisa-visual-rft loader names the `train` template, and the recipe sets the training's 401,408 pixels
# (src/scripts/2B_lisa_grounding.sh:22).
register(ModelEntry(
    name="visual-rft-lisa-7b", aliases=("visual-rft",), repo_id="Zery/Qwen2-VL-7B_visual_rft_lisa_IoU_reward",
    architecture="qwen2_vl", base_model="Qwen/Qwen2-VL-7B-Instruct", domain="perception",
    task="reasoning grounding (LISA): question -> box", paper="2503.01785", license="cc-by-nc-4.0",
    code_license="apache-2.0",
    spec=VLMSpec(system=R1_SYSTEM, variants={"train": ""}, user=VISUAL_RFT_LISA_DIRECT_USER,
                 templates={"train": VISUAL_RFT_LISA_USER}, min_pixels=3136, max_pixels=12845056,
                 coord_frame="norm1000", max_new_tokens=128, parser=parse_lisa),
    notes="Research use only: the authors license their data and code for research use only, the data under "
          "CC BY-NC 4.0 (Attribution-NonCommercial), and this checkpoint is trained on that data.",
    license_source="Liuziyu77/Visual-RFT@9486633:README.md:266-268 (code Apache-2.0; data CC BY-NC 4.0; \"The data "
    "and code are intended and licensed for research use only. License: Attribution-NonCommercial 4.0 "
    "International\"); the Hub card's licence field was not read by this project (UNVERIFIED)",
    # Cache path models--Zery--Qwen2-VL-7B_visual_rft_lisa_IoU_reward/snapshots/cc595b1... in two public scripts of
    # one project.
    revision="cc595b1208351cf1b9ac53fd7245055dd935580e",
    revision_note=("pinned to the commit `main` resolved to when a public project downloaded it (cache path "
                   "snapshots/cc595b1...); first or newest commit of the card unverified (the Hub's history could not "
                   "be read here)"),
    rl_methods=("grpo",),
))  # fmt: skip

# Vision-R1 (jefferyZhan/Griffon Vision-R1/README.md): processor min_pixels=28*28, max_pixels=12800*28*28,
# Qwen-native JSON detections, no think tags; use_cache=True is required at generation. The question is the
# whole user turn, image first, no system prompt, in training too (jefferyZhan/Griffon@9866875:Vision-R1/
# vision_r1/visionr1_qwen.py:438-447; the vision-r1-data loader yields the question as that code rewrites it).
register(ModelEntry(
    name="vision-r1-7b", repo_id="JefferyZhan/Qwen2.5-VL-7B-Instruct-Vision-R1", architecture="qwen2_5_vl",
    base_model="Qwen/Qwen2.5-VL-7B-Instruct", domain="perception", task="object localisation and detection",
    paper="2503.18013", license="other", code_license="apache-2.0",
    spec=VLMSpec(user="{question}", min_pixels=28 * 28, max_pixels=12800 * 28 * 28, max_new_tokens=1024,
                 parser=parse_detections),
    notes=f"Research use only: the authors license the checkpoint for research use only, and models trained on "
    f"Vision-R1-Data (CC BY-NC 4.0) must not be used outside research. Official prompts are plain grounding "
    f"requests, e.g. {VISION_R1_DETECT_ALL!r}. Not Osilly/Vision-R1 (a different math-reasoning paper).",
    license_source="jefferyZhan/Griffon@9866875:README.md:166-171 (the repository holding Vision-R1): \"The data "
    "and checkpoint is licensed for research use only ... The dataset is CC BY NC 4.0 (allowing only "
    "non-commercial use) and models trained using the dataset should not be used outside of research purposes\"; "
    "code Apache-2.0 (LICENSE); the Hub card's licence field was not read by this project (UNVERIFIED)",
    revision_note=_NO_PIN, rl_methods=("grpo",),
))  # fmt: skip

# Curr-ReFT (ding523/Curr_REFT@f123433): 3-stage curriculum GRPO + rejection SFT; stage-3 prompt and no
# system prompt: the image branch of every stage's trainer comments it out (Stage3_open_math_resize.py:226,
# Stage1/Stage2 L218/L226), as its evaluation does (eval/muti_process_eval.py:478). The other stages' and
# tasks' user templates are the entries' named templates (prompts.CURR_REFT_TEMPLATES), which the
# curr-reft-data loader names per sample.
for size in ("3b", "7b"):
    register(ModelEntry(
        name=f"curr-reft-{size}", aliases=("curr-reft",) if size == "7b" else (), repo_id=f"ZTE-AIM/{size.upper()}-Curr-ReFT",
        architecture="qwen2_5_vl", base_model=f"Qwen/Qwen2.5-VL-{size.upper()}-Instruct", domain="perception",
        task="detection, classification and multimodal math with reasoning", paper="2503.07065", license=_QWEN_3B if size == "3b" else "unknown",
        spec=VLMSpec(user=CURR_REFT_USER, templates=dict(CURR_REFT_TEMPLATES), coord_frame="none",
                     max_new_tokens=1024, parser=parse_think_answer),
        notes="The repository has no LICENSE file: check the model card before use. The README's 7B link points "
        "to an omlab model by mistake; the ZTE-AIM page is the one the README's news names."
        + (" " + _QWEN_3B_LICENCE + "." if size == "3b" else ""),
        license_source="unknown: the authors' repository ding523/Curr_REFT has no LICENSE file and the Hub card's "
        "licence field was not read by this project" + ("; " + _QWEN_3B_LICENCE if size == "3b" else ""),
        revision_note=_NO_PIN, rl_methods=("grpo",),
    ))  # fmt: skip

# R1-Reward (yfzhang114/r1_reward README): a multimodal reward model that judges two responses.
register(ModelEntry(
    name="r1-reward-7b", aliases=("r1-reward",), repo_id="yifanzhang114/R1-Reward", architecture="qwen2_5_vl",
    base_model="Qwen/Qwen2.5-VL-7B-Instruct", domain="perception",
    task="pairwise preference judge (question, two responses -> 1 or 2)", paper="2505.02835", license="apache-2.0",
    spec=VLMSpec(user="{question}", max_pixels=1003520, coord_frame="none", max_new_tokens=1024,
                 parser=parse_preference),
    notes="Build the question with domains.perception.prompts.format_r1_reward_question(question, r1, r2).",
    license_source="the authors' repository yfzhang114/r1_reward (Apache-2.0); the Hub card's licence field was not "
    "read by this project (UNVERIFIED)",
    revision_note=_NO_PIN, rl_methods=("stable_reinforce",),
))  # fmt: skip

# Shuffle-R1 (xiaomi-research/shuffle-r1@31d3ff0 README.md:47-48): GRPO with Pairwise Trajectory Sampling
# and Advantage-based Batch Shuffle (adv_estimator pairwise_purning, examples/qwen2_5_vl_{3b,7b}.sh) on
# Qwen2.5-VL. Pixels and answer budget of its training and inference: examples/config.yaml:13-14
# (min 262144, max 4194304), inference/infer_vllm.py:129-131 (2048 new tokens); greedy as infer_vllm's
# default temperature 0.0 (L133). The README's transformers example passes no pixel limits and 128 new tokens, and
# lays its prompt out otherwise (prompts.SHUFFLE_R1_USER says where each layout is read).
for size in ("3b", "7b"):
    register(ModelEntry(
        name=f"shuffle-r1-{size}", aliases=("shuffle-r1",) if size == "7b" else (),
        repo_id=f"XenoZLH/Shuffle-R1-Qwen-{size.upper()}", architecture="qwen2_5_vl",
        base_model=f"Qwen/Qwen2.5-VL-{size.upper()}-Instruct", domain="perception",
        task="multimodal math and chart reasoning (answer in \\boxed{})", paper="2508.05612",
        license=_QWEN_3B if size == "3b" else "apache-2.0", code_license="apache-2.0" if size == "3b" else None,
        spec=VLMSpec(system=SHUFFLE_R1_SYSTEM, user=SHUFFLE_R1_USER, min_pixels=262144, max_pixels=4194304, coord_frame="none",
                     max_new_tokens=2048, parser=parse_think_boxed),
        notes="Prompt as the authors' evaluation and training ask: the thinking prompt, the image, then the "
        "question, under the default system turn (inference/infer_vllm.py:104). "
        "Trained on XenoZLH/MMRL30k; the authors evaluate on XenoZLH/MM_Eval (README.md:144, 167)."
        + (" " + _QWEN_3B_LICENCE + "." if size == "3b" else ""),
        license_source="the authors' repository xiaomi-research/shuffle-r1@31d3ff0 (LICENSE: Apache-2.0); the Hub "
        "card's licence field was not read by this project (UNVERIFIED)" + ("; " + _QWEN_3B_LICENCE if size == "3b" else ""),
        revision_note=_NO_PIN, rl_methods=("grpo", "shuffle-r1"),
    ))  # fmt: skip

# InternLM-XComposer2.5-Reward (arXiv 2501.12368): a discriminative multimodal reward model. Its weights are
# public but not in a form the zoo loads, so the entry is the catalogue row and says what a user must do.
register(ModelEntry(
    name="ixc-2.5-reward-7b", aliases=("internlm-xcomposer2d5-7b-reward",), repo_id=None, spec=VLMSpec(coord_frame="none"),
    architecture="internlm2", base_model="internlm/internlm-xcomposer2d5-7b", domain="perception",
    task="multimodal reward model (chat with images or video -> scalar score)", paper="2501.12368",
    license="other", released=False,
    notes="Published at internlm/internlm-xcomposer2d5-7b-reward, but the zoo cannot load it: (1) the weights on "
    "main (7b3fad4) are pickled PyTorch shards (pytorch_model-0000N-of-00003.bin) and the zoo reads safetensors "
    "only (a safetensors conversion sits in the unmerged bot pull request refs/pr/1, 317487c); (2) the model is "
    "the repository's own Python (modeling_internlm_xcomposer2.py, modeling_internlm2.py, build_mlp.py, "
    "ixc_utils.py) with its own scoring methods, a reward-model interface no zoo pipeline serves, and none of it "
    "could be run or checked here. To use it: read those files at a commit you pin, load it as the card's "
    "'Basic Usage' does (AutoModel and AutoTokenizer with trust_remote_code=True at that revision), and wrap its "
    "score as a reward (rewards.base.SampleReward) to train with it.",
    license_source="Hub card front matter of internlm/internlm-xcomposer2d5-7b-reward at 65ae685 (`license: "
    "other`); the repository's LICENSE file is empty (0 bytes)",
    revision_note="not loadable by the zoo (see notes); a user pins the commit whose code they read",
))  # fmt: skip
