"""General visual-RL models of the zoo; facts from the authors' repositories named per entry (those
the authors link from their READMEs)."""

from __future__ import annotations

from domains.perception.prompts import (
    CURR_REFT_USER,
    R1_SYSTEM,
    VISION_R1_DETECT_ALL,
    VISUAL_RFT_LISA_USER,
    VLM_R1_DEFAULT_USER,
    VLM_R1_OVD_USER,
    VLM_R1_REC_USER,
    parse_detections,
    parse_lisa,
    parse_preference,
    parse_rec,
    parse_think_answer,
)
from zoo.kinds import VLMSpec
from zoo.registry import ModelEntry, register

# VLM-R1 trains at the Qwen2.5-VL processor limits (grpo_jsonl.py: min_pixels 3136, max_pixels 12845056).
_QWEN = {"min_pixels": 3136, "max_pixels": 12845056}

_NO_PIN = ("not pinned: no commit of the Hub repository is recorded in this project's sources (the Hub's commit "
           "list could not be read here); pass zoo.load(name, revision=SHA)")

for name, repo, task, spec in (
    ("vlm-r1-rec-3b", "omlab/Qwen2.5VL-3B-VLM-R1-REC-500steps", "referring expression comprehension (box)",
     VLMSpec(user=VLM_R1_REC_USER, max_new_tokens=1024, parser=parse_rec, **_QWEN)),
    ("vlm-r1-ovd-3b", "omlab/VLM-R1-Qwen2.5VL-3B-OVD-0321", "open-vocabulary detection (labelled boxes)",
     VLMSpec(user=VLM_R1_OVD_USER, max_new_tokens=1024, parser=parse_detections, **_QWEN)),
    ("vlm-r1-math-3b", "omlab/VLM-R1-Qwen2.5VL-3B-Math-0305", "multimodal math reasoning",
     VLMSpec(user=VLM_R1_DEFAULT_USER, coord_frame="none", max_new_tokens=1024, parser=parse_think_answer, **_QWEN)),
):  # fmt: skip
    register(ModelEntry(
        name=name, aliases=("vlm-r1",) if name == "vlm-r1-rec-3b" else (), repo_id=repo, architecture="qwen2_5_vl",
        base_model="Qwen/Qwen2.5-VL-3B-Instruct", domain="perception", task=task, spec=spec, license="apache-2.0",
        paper="2504.07615", notes="Prompts from qwen_module.py and the paper's OVD template.",
        license_source="the authors' repository om-ai-lab/VLM-R1 (Apache-2.0); the Hub card's licence field was not "
        "read by this project (UNVERIFIED)",
        revision_note=_NO_PIN, rl_methods=("grpo",),
    ))  # fmt: skip

# Visual-RFT's released checkpoint: LISA reasoning grounding, Qwen2-VL-7B, boxes in Qwen2-VL's
# 0-1000 frame (grpo_lisa.py divides them by 1000), R1 system prompt.
register(ModelEntry(
    name="visual-rft-lisa-7b", aliases=("visual-rft",), repo_id="Zery/Qwen2-VL-7B_visual_rft_lisa_IoU_reward",
    architecture="qwen2_vl", base_model="Qwen/Qwen2-VL-7B-Instruct", domain="perception",
    task="reasoning grounding (LISA): question -> box", paper="2503.01785", license="apache-2.0",
    spec=VLMSpec(system=R1_SYSTEM, user=VISUAL_RFT_LISA_USER, max_pixels=401408, coord_frame="norm1000",
                 max_new_tokens=1024, parser=parse_lisa),
    license_source="the authors' repository Liuziyu77/Visual-RFT (Apache-2.0); the Hub card's licence field was not "
    "read by this project (UNVERIFIED)",
    revision_note=_NO_PIN, rl_methods=("grpo",),
))  # fmt: skip

# Vision-R1 (jefferyZhan/Griffon Vision-R1/README.md): processor min_pixels=28*28, max_pixels=12800*28*28,
# Qwen-native JSON detections, no think tags; use_cache=True is required at generation.
register(ModelEntry(
    name="vision-r1-7b", repo_id="JefferyZhan/Qwen2.5-VL-7B-Instruct-Vision-R1", architecture="qwen2_5_vl",
    base_model="Qwen/Qwen2.5-VL-7B-Instruct", domain="perception", task="object localisation and detection",
    paper="2503.18013", license="apache-2.0",
    spec=VLMSpec(user="{question}", min_pixels=28 * 28, max_pixels=12800 * 28 * 28, max_new_tokens=1024,
                 parser=parse_detections),
    notes=f"Official prompts are plain grounding requests, e.g. {VISION_R1_DETECT_ALL!r}. "
    "Not Osilly/Vision-R1 (a different math-reasoning paper).",
    license_source="the authors' repository jefferyZhan/Griffon (Apache-2.0), which holds Vision-R1; the Hub card's "
    "licence field was not read by this project (UNVERIFIED)",
    revision_note=_NO_PIN, rl_methods=("grpo",),
))  # fmt: skip

# Curr-ReFT (ding523/Curr_REFT): 3-stage curriculum GRPO + rejection SFT; stage-3 prompt, R1 system prompt.
for size in ("3b", "7b"):
    register(ModelEntry(
        name=f"curr-reft-{size}", aliases=("curr-reft",) if size == "7b" else (), repo_id=f"ZTE-AIM/{size.upper()}-Curr-ReFT",
        architecture="qwen2_5_vl", base_model=f"Qwen/Qwen2.5-VL-{size.upper()}-Instruct", domain="perception",
        task="detection, classification and multimodal math with reasoning", paper="2503.07065", license="unknown",
        spec=VLMSpec(system=R1_SYSTEM, user=CURR_REFT_USER, coord_frame="none", max_new_tokens=1024,
                     parser=parse_think_answer),
        notes="The repository has no LICENSE file: check the model card before use. The README's 7B link points "
        "to an omlab model by mistake; the ZTE-AIM page is the one the README's news names.",
        license_source="unknown: the authors' repository ding523/Curr_REFT has no LICENSE file and the Hub card's "
        "licence field was not read by this project",
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
