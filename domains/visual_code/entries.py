"""Chart, SVG and CAD code models: MSRL, StarVector, and the CAD-RL / RLRF / Visual Programmability styles.

MSRL and StarVector publish weights; CAD-RL, RLRF and Visual Programmability do not, so their
rows carry ``released=False`` and point at the zoo's recipe, reward, data and evaluation "in
the style of" each paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from domains.visual_code.prompts import (
    CADQUERY_PROMPT,
    MSRL_MAX_PIXELS,
    MSRL_MIN_PIXELS,
    MSRL_PROMPT,
    SVG_PROMPT,
    parse_cadquery_block,
    parse_python_block,
    parse_svg,
)
from zoo.card_kinds import CardKind, SnippetOrigin, example_input, register_card_kind, usage_snippet
from zoo.kinds import VLMSpec
from zoo.registry import ModelEntry, register

# DocTron-hub/MSRL@203465d:README.md:244-268: user turn [image, MSRL_PROMPT] (newlines included),
# max_new_tokens=4096, top_p=1, temperature=0.1. ``pipe(image, "")`` sends the authors' prompt exactly; any
# question text is appended after it. The README's sampling settings are the spec's ``generation``, which the
# pipeline samples with (pass seed= for a reproducible answer).
_MSRL_SPEC = VLMSpec(
    user=MSRL_PROMPT + "{question}", min_pixels=MSRL_MIN_PIXELS, max_pixels=MSRL_MAX_PIXELS, coord_frame="none",
    max_new_tokens=4096, parser=parse_python_block,
    generation={"do_sample": True, "temperature": 0.1, "top_p": 1.0},  # DocTron-hub/MSRL@203465d:README.md:268
)
_NO_PIN = ("not pinned: no full commit hash of this Hub repository was found (its history cannot be read from here, "
           "and the Hub page mirrors and public code searched name none); pass zoo.load(name, revision=SHA)")
_MSRL_NOTE = ("Samples as the README's generate(max_new_tokens=4096, top_p=1, temperature=0.1) does (DocTron-hub/MSRL"
              "@203465d:README.md:268), so pass seed= for a reproducible answer (the README's call also inherits the "
              "checkpoint's generation_config.json, not read by this project). Render the code with "
              "rewards.render('matplotlib', ...) (a sandboxed worker): it is model-written Python.")
for name, repo, base, task in (
    ("msrl", "DocTron/MSRL", "MSRL-SFT (Qwen2.5-VL-7B-Instruct, SFT on 2.8M chart-code pairs), then two-stage RL",
     "chart image to matplotlib code (RL-tuned)"),
    ("msrl-sft", "DocTron/MSRL-SFT", "Qwen2.5-VL-7B-Instruct (SFT on 2.8M chart-code pairs)",
     "chart image to matplotlib code (SFT start of MSRL)"),
):
    register(ModelEntry(
        name=name, repo_id=repo, spec=_MSRL_SPEC, architecture="qwen2_5_vl", base_model=base, domain="visual_code",
        task=task, license="apache-2.0", paper="2508.13587", notes=_MSRL_NOTE,
        license_source="the authors' repository DocTron-hub/MSRL (Apache-2.0); the Hub card's licence field was "
        "not read by this project (UNVERIFIED)",
        revision_note=_NO_PIN, rl_methods=("grpo",) if name == "msrl" else (),
    ))


@dataclass(frozen=True)
class StarVectorSpec(VLMSpec):
    """StarVector: image in, raw SVG out, through the repository's own ``generate_im2svg`` (custom code).

    It is a VLM for the catalog but not a transformers image-text-to-text model, so it names its
    own pipeline (:func:`domains.visual_code.starvector.load_starvector_pipeline`).
    """

    pipeline: ClassVar[str] = "domains.visual_code.starvector:load_starvector_pipeline"


def _starvector_usage(entry: ModelEntry, origin: SnippetOrigin) -> str:
    image, _ = example_input(entry)
    body = ["prediction = pipe(image)  # image in, SVG out: StarVector takes no text prompt",
            "print(prediction.code or prediction.parse_error)"]
    return usage_snippet(entry, origin, body, image=image)


def _starvector_how(entry: ModelEntry) -> str:
    return ("StarVector encodes the image and writes SVG with its repository's own `generate_im2svg` (custom code, "
            "hence the opt-in). `prediction.code` is the first complete `<svg>` element; `prediction.parse_error` says "
            "why when the answer has none. Model-written SVG is untrusted: render it in the sandbox "
            "(`rewards.render('svg', ...)`).")


register_card_kind(StarVectorSpec, CardKind(
    "image-to-SVG model (runs its repository's code)", "transformers", "image-to-text",
    "domains.visual_code.starvector:StarVectorPipeline", "zoo.outputs:Prediction", _starvector_usage, _starvector_how,
))  # fmt: skip


_STARVECTOR_NOTE = (
    "Runs the repository's own Python (StarVectorForCausalLM): zoo.load asks for trust_remote_code=True by name. "
    "Read the code at the commit you load: the 1B entry is pinned (its revision); the 8B is not, so pass "
    "revision=<commit> after reading the code at that commit. The repository's pinned stack is torch 2.5.1 / "
    "transformers 4.49 (joanrod/star-vector pyproject.toml); newer stacks are untested. "
    "RLRF (arXiv 2505.20793) RL-tunes this model; its weights are not published."
)
# Cache path models--starvector--starvector-1b-im2svg/snapshots/380ab95... in one public script; no commit of
# the 8B was found.
_STARVECTOR_1B_PIN = {
    "revision": "380ab95d25a8e9ab1dc825debe238b4953ae13b9",
    "revision_note": "pinned to the commit `main` resolved to when a public project downloaded it (cache path "
                     "snapshots/380ab95...); first or newest commit of the card unverified (the Hub's history could "
                     "not be read here); its remote code is the code at this commit",
}
for size, base in (("1b", "StarCoder-based 1B code LLM + image encoder and adapter (joanrod/star-vector)"),
                   ("8b", "StarCoder2-based code LLM + image encoder and adapter (starvector/model/llm/starcoder2.py)")):
    register(ModelEntry(
        name=f"starvector-{size}-im2svg", aliases=("starvector",) if size == "8b" else (),
        repo_id=f"starvector/starvector-{size}-im2svg",
        spec=StarVectorSpec(user="{question}", coord_frame="none", max_new_tokens=4000, parser=parse_svg),
        architecture="starvector", base_model=base, domain="visual_code", task="image to SVG code (im2svg)",
        license="apache-2.0", paper="2312.11556", trust_remote_code=True, notes=_STARVECTOR_NOTE,
        license_source="the authors' repository joanrod/star-vector (Apache-2.0); the Hub card's licence field was "
        "not read by this project (UNVERIFIED)",
        **(_STARVECTOR_1B_PIN if size == "1b" else
           {"revision_note": _NO_PIN + "; with remote code, read the code at the commit you pin"}),
    ))

# --- systems without public weights: the zoo's recipes, rewards, data and evaluation ----------
_VISUAL_PROGRAMMABILITY_NOTE = (
    "Code: github.com/Aphelios-Tang/Code-as-Thought (the paper's footnote, arXiv:2509.09286 p.1; no snapshot of it "
    "was readable by this project, so its files, licence and any weights are unread). The paper (§4.2, §4.3.2, §5.1, "
    "App. C) trains Qwen2.5-VL-7B with GRPO (beta 0, EasyR1) to emit <CODE> or <DIRECT>, then code that builds a "
    "DataFrame or a text chain of thought, and a \\boxed{} answer, rewarded by R = 0.8 accuracy + 0.3 decision + "
    "0.15 data + 0.05 format: decision is full for the annotated strategy with a right answer, partial (value "
    "unpublished) with a wrong one, 0 for the other strategy; data rebuilds the DataFrame chart_data the code constructs "
    "(AST-extracted) and scores 0.2 column match + 0.1 row count + 0.7 values (rel. tol. 1e-2) against a ground-truth "
    "CSV (App. C, Algorithm 1). Training charts are ChartMimic's with Gemini-2.5-Flash questions and annotators' "
    "strategy labels (§5.1, App. D); the master prompt is in App. E. The zoo has only a reward of its own in that spirit ('visual-programmability': "
    "<mode>code|direct</mode> and <answer> tags, answer + 0.5 decision + 0.5 data, the data term the share of "
    "target numbers written in the code block, no format term); no weights, data, recipe or evaluation."
)
# The prompts the zoo's recipes train these systems with (model.entry: cad-rl, rlrf), so that zoo.load asks
# a model they trained as they trained it. zoo: both prompts are the zoo's own (domains/visual_code/prompts.py):
# CAD-RL publishes no prompt (arXiv 2508.10118; no code released) and RLRF's is unpublished (arXiv 2505.20793;
# UNVERIFIED). The part's description (text-to-CAD) or nothing (an SVG sample: the picture is the task) is the
# question. Visual Programmability's master prompt (arXiv:2509.09286 App. E) is not transcribed here and no
# recipe trains it, so its entry keeps the bare question.
_UNRELEASED = (
    ("cad-rl", "2508.10118", "text/image to CadQuery code",
     ("CAD-RL publishes no code, weights or data (ExeCAD). The zoo's 'cad-geometry' reward is its own: the code "
      "runs in the sandbox (cadquery kinds), 0.1 for building a valid solid + 0.9 exact volume IoU with the target, "
      "Chamfer distance logged; the paper's exact metric and weights are UNVERIFIED. Data: cad-synthetic, text2cad."),
     VLMSpec(user=CADQUERY_PROMPT, coord_frame="none", parser=parse_cadquery_block)),
    ("rlrf", "2505.20793", "image to SVG code, RL from rendering feedback",
     ("RLRF weights and training code are unreleased. The zoo's 'rlrf-svg' reward follows the paper's terms "
      "(normalised L2, Canny-edge L2, perceptual, length); weights are the zoo's own where the paper gives none. "
      "Recipe: domains/visual_code/recipes/rlrf-svg-grpo.yaml."),
     VLMSpec(user=SVG_PROMPT + "{question}", coord_frame="none", parser=parse_svg)),
    ("visual-programmability", "2509.09286", "chart QA choosing code-as-thought or direct answer",
     _VISUAL_PROGRAMMABILITY_NOTE, VLMSpec(coord_frame="none", parser=parse_python_block)),
)
_BASES = {"visual-programmability": "Qwen2.5-VL-7B (arXiv:2509.09286 §4.2); weights not found"}
for name, paper, task, note, spec in _UNRELEASED:
    register(ModelEntry(
        name=name, repo_id=None, spec=spec, architecture="unknown",
        base_model=_BASES.get(name, "unknown (UNVERIFIED)"), domain="visual_code", task=task, paper=paper,
        released=False, notes=note,
        license_source="no weights are published, so there is no weights licence to read",
        revision_note="no public weights to pin",
    ))

# The checkpoint this repository trains itself (python -m lab.visual_code.release, three recipes).
register(ModelEntry(
    name="svg-scenes-tiny", repo_id=None, architecture="qwen2_5_vl",
    base_model="none (random init, Qwen2.5-VL architecture, ~1M parameters)", domain="visual_code",
    task="image to SVG code on 112-px synthetic scenes of one circle or rectangle",
    # zoo: the picture is the whole task: the release trained on the prompt alone (its questions are blank,
    # lab/visual_code/release.py), so the template carries no question and a blank one is what it is asked
    spec=VLMSpec(user=SVG_PROMPT, min_pixels=112 * 112, max_pixels=112 * 112, coord_frame="none",
                 max_new_tokens=48, parser=parse_svg),
    license="apache-2.0", license_source="this repository's licence (pyproject.toml: Apache-2.0); trained here",
    revision_note="shipped in this repository (checkpoints/svg-scenes-tiny), not on the Hub",
    rl_methods=("grpo",),
    notes="A teaching checkpoint trained on CPU by `python -m lab.visual_code.release` (SFT, then GRPO with a "
          "sandboxed render reward, against an equal-time SFT control); it only knows one-shape synthetic scenes. "
          "Model-written SVG is untrusted: render it with rewards.render('svg-skia', ...).",
))
