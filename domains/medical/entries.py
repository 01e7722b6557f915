"""Medical models of the zoo (facts: research/domain-medical-gui.md §13-14)."""

from __future__ import annotations

from domains.medical.prompts import PATHO_COD_SYSTEM, PATHO_COT_SYSTEM, parse_think_answer
from zoo.kinds import ClipSpec, VLMSpec
from zoo.registry import ModelEntry, register

_PATHO_LICENCE_NOTE = (
    "CC-BY-NC-ND-4.0, gated: request access on the model page with an institutional e-mail. "
    "Non-commercial; no derivatives (this includes training on the model or building datasets from its outputs). "
    "Research use only: not a medical device, not for diagnosis."
)

# Patho-R1 README: CoT system prompt by default, Chain-of-Draft as a variant; max_new_tokens=2048.
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
        )
    )

# --- Patho-CLIP (open_clip), Dolphin (no public weights), datasets -------------------------------
# Patho-R1 README: `open_clip.create_model_and_transforms('ViT-B-16', pretrained='PathoCLIP-B.pt')`.
# The -L variant's exact open_clip name is not stated by the authors (research notes §13): ViT-L-14
# is the open_clip ViT-L CLIP and is UNVERIFIED here.
for size, arch in (("b", "ViT-B-16"), ("l", "ViT-L-14")):
    register(
        ModelEntry(
            name=f"patho-clip-{size}",
            repo_id=f"WenchuanZhang/Patho-CLIP-{size.upper()}",
            architecture=arch,
            base_model=f"open_clip {arch} (pathology figure-caption pre-training)",
            domain="medical",
            task="pathology zero-shot classification and image-text retrieval",
            spec=ClipSpec(),
            license="cc-by-nc-nd-4.0",
            gated=True,
            paper="2505.11404",
            notes=_PATHO_LICENCE_NOTE
            + (" Architecture ViT-L-14 is UNVERIFIED (authors say ViT-L)." if size == "l" else ""),
        )
    )

_DOLPHIN_NOTE = (
    "Dolphin v1.0 / R1 (ultrasound, U2-Bench) have no public weights (U4R/Dolphin holds images only). "
    "Base model, prompts and reward formulas are unpublished; the zoo's Dolphin-R1-style recipe "
    "(domains/medical/recipes/dolphin-r1-ultrasound.yaml) runs its RL stage on any Qwen-VL model "
    "with the U2-Bench task rewards. Fill in repo_id and architecture when weights are released."
)
for name in ("dolphin-v1", "dolphin-r1"):
    register(
        ModelEntry(
            name=name,
            repo_id=None,
            spec=VLMSpec(),
            architecture="unknown",
            base_model="unknown (UNVERIFIED)",
            domain="medical",
            task="ultrasound classification, localisation, measurement and report generation",
            license="unknown",
            released=False,
            notes=_DOLPHIN_NOTE,
        )
    )

