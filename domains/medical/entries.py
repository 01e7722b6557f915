"""Medical models of the zoo.

Facts come from the authors' pages: the Patho-R1 README (Wenchuan-Zhang/Patho-R1@066024f3), its CLIP
evaluation code (@3494816:clip/val/) and the Hub cards of WenchuanZhang/Patho-R1-3B/-7B; Dolphin's paper
(arXiv 2509.25748). Where a fact could not be read in full (a Hub commit, the Patho-CLIP-L
architecture) the entry says so.
"""

from __future__ import annotations

from domains.medical.prompts import (
    PATHO_COD_SYSTEM,
    PATHO_COT_SYSTEM,
    US_REASONING_SYSTEM,
    parse_think_answer,
    parse_us_answer,
)
from zoo.kinds import ClipSpec, VLMSpec
from zoo.registry import ModelEntry, register

_PATHO_SOURCE = (
    "Hub card front matter of {repo} (`license: cc-by-nc-nd-4.0`, gated by an extra_gated_prompt stating "
    "the CC-BY-NC-ND 4.0 terms)"
)
# zoo: the card's own licence stays the column (it restricts more); the base's terms bind the weights as well.
_QWEN_3B_BASE = (
    "; its base Qwen/Qwen2.5-VL-3B-Instruct is published under the Qwen Research License (Hub card: license "
    "other, license_name qwen-research), which binds these weights as well"
)
_PATHO_CLIP_SOURCE = (
    "the Patho-R1 README (Wenchuan-Zhang/Patho-R1@066024f3) sends users to request access to "
    "WenchuanZhang/Patho-CLIP-B under the Patho-R1 terms (CC-BY-NC-ND-4.0); the Patho-CLIP Hub cards "
    "themselves were not read by this project"
)
_NO_PIN = (
    "not pinned: no full commit hash of {repo} was found (its history cannot be read from here, and the Hub "
    "page mirrors and public code searched name none); pin one yourself with zoo.load(name, revision=SHA)"
)
# The card page huggingface.co/WenchuanZhang/Patho-R1-7B/blob/main/README.md shows commit 7a69eb2; two public files
# give its full hash: a model registry (LLMSpec revision=...) and a provenance record
# (hf:WenchuanZhang/Patho-R1-7B@7a69eb2...).
_PATHO_7B_PIN = {
    "revision": "7a69eb299bde72a4c3b8ec26fe0b17515346ef73",
    "revision_note": (
        "pinned to the commit the card page shows (7a69eb2), its full hash as two public files pin it; whether it "
        "is the card's first or newest commit is unverified (the Hub's history could not be read here)"
    ),
}
_PATHO_LICENCE_NOTE = (
    "CC-BY-NC-ND-4.0, gated: request access on the model page with an institutional e-mail. "
    "Non-commercial; no derivatives (this includes training on the model or building datasets from its outputs). "
    "Research use only: not a medical device, not for diagnosis."
)

# Patho-R1 README: CoT system prompt by default (Wenchuan-Zhang/Patho-R1@3494816:README.md:76), Chain-of-Draft as
# a variant (README.md:72), the bare question as the user text (README.md:84), max_new_tokens=2048 (README.md:103);
# copied in domains/medical/prompts.py. The pathology recipes (patho-r1-grpo/-dapo and their smoke runs) name
# patho-r1-7b: the loaders yield raw questions and this system prompt wraps them, as the loaders' former
# `system=PATHO_COT_SYSTEM` default did.
_PATHO_SPEC = VLMSpec(
    system=PATHO_COT_SYSTEM,
    variants={"cot": PATHO_COT_SYSTEM, "cod": PATHO_COD_SYSTEM},
    coord_frame="none",
    max_new_tokens=2048,
    parser=parse_think_answer,
)

for size, repo in (("3b", "WenchuanZhang/Patho-R1-3B"), ("7b", "WenchuanZhang/Patho-R1-7B")):
    register(
        ModelEntry(
            name=f"patho-r1-{size}",
            aliases=("patho-r1",) if size == "7b" else (),
            repo_id=repo,
            architecture="qwen2_5_vl",
            base_model=f"Qwen2.5-VL-{size.upper()} (continued pre-training, SFT, then GRPO/DAPO)",
            domain="medical",
            task="pathology VQA and multiple choice with reasoning",
            spec=_PATHO_SPEC,
            license="cc-by-nc-nd-4.0",
            gated=True,
            paper="2505.11404",
            notes=_PATHO_LICENCE_NOTE,
            license_source=_PATHO_SOURCE.format(repo=repo) + (_QWEN_3B_BASE if size == "3b" else ""),
            **(_PATHO_7B_PIN if size == "7b" else {"revision_note": _NO_PIN.format(repo=repo)}),
            rl_methods=("grpo", "dapo"),
        )
    )

# --- Patho-CLIP (open_clip), Dolphin (no public weights), datasets -------------------------------
# Patho-R1 README: `open_clip.create_model_and_transforms('ViT-B-16', pretrained='PathoCLIP-B.pt')`:
# a pickled state dict, converted to safetensors on first load (zoo/safe_weights.py). The -L
# variant's open_clip name is not stated by the authors: ViT-L-14 is UNVERIFIED here.
for size, arch in (("b", "ViT-B-16"), ("l", "ViT-L-14")):
    register(
        ModelEntry(
            name=f"patho-clip-{size}",
            repo_id=f"WenchuanZhang/Patho-CLIP-{size.upper()}",
            architecture=arch,
            base_model=f"open_clip {arch} (pathology figure-caption pre-training)",
            domain="medical",
            task="pathology zero-shot classification and image-text retrieval",
            spec=ClipSpec(pickled_weights=("*.pt",)),
            license="cc-by-nc-nd-4.0",
            gated=True,
            paper="2505.11404",
            notes=_PATHO_LICENCE_NOTE
            + " Authors' protocol (Wenchuan-Zhang/Patho-R1@3494816:clip/val/): zero-shot classes from a prompt "
            "file of class names (synonyms) and CLASSNAME templates, accuracy of the logit_scale x cosine "
            "argmax; retrieval Recall@1/5/10/20. Their prompt files are not published: "
            "`zoo eval patho-clip-b --data clip-zero-shot --path FOLDER --option prompt=YOURS.json`, "
            "`--data clip-retrieval --path captions.json`."
            + (" Architecture ViT-L-14 is UNVERIFIED (authors say ViT-L)." if size == "l" else ""),
            license_source=_PATHO_CLIP_SOURCE,
            revision_note=_NO_PIN.format(repo=f"WenchuanZhang/Patho-CLIP-{size.upper()}"),
        )
    )

_DOLPHIN_NOTE = (
    "Dolphin v1.0 and Dolphin R1 (ultrasound; paper arXiv 2509.25748) have no public weights. Their "
    "base model, prompts and reward formulas are unpublished, so the zoo ships its own recipe, rewards "
    "and evaluation in the style of the paper (domains/medical/recipes/dolphin-r1-ultrasound.yaml: RL on "
    "any Qwen-VL model with the U2-Bench task rewards), not the authors' training. Fill in repo_id and "
    "architecture when weights are released."
)
# Dolphin R1's prompt is the zoo's own: the paper publishes none (arXiv 2509.25748). dolphin-r1 carries the
# reasoning system prompt the zoo's Dolphin-R1-style recipe trains with (US_REASONING_SYSTEM, formerly the
# default `system=` of the synthetic-ultrasound loader) and reads the <answer> span as its rewards do, so a run of
# dolphin-r1-ultrasound.yaml (`model.entry: dolphin-r1`) is asked and scored by `zoo eval RUN --entry dolphin-r1` as
# it was trained, with the recipe's completion budget (algorithm.max_completion_length: 1024). Dolphin v1.0 (no RL
# stage) keeps the bare question.
_DOLPHIN_SPECS = {
    "dolphin-v1": VLMSpec(),
    "dolphin-r1": VLMSpec(system=US_REASONING_SYSTEM, max_new_tokens=1024, parser=parse_us_answer),
}
# Dolphin v1.0 is the instruction-aligned model; Dolphin R1 adds the RL stage (arXiv 2509.25748).
for name, rl_methods in (("dolphin-v1", ()), ("dolphin-r1", ("rl",))):
    register(
        ModelEntry(
            name=name,
            repo_id=None,
            spec=_DOLPHIN_SPECS[name],
            architecture="unknown",
            base_model="unknown (UNVERIFIED)",
            domain="medical",
            task="ultrasound classification, localisation, measurement and report generation",
            license="unknown",
            paper="2509.25748",
            released=False,
            notes=_DOLPHIN_NOTE,
            license_source="no weights are published, so there is no weights licence to read",
            revision_note="no public weights to pin",
            rl_methods=rl_methods,
        )
    )
