"""Image generation and editing: Flow-GRPO, Adv-GRPO, DanceGRPO, OmniGen2-EditScore and the EditScore judge.

Sampling settings are the authors' inference settings, read in their repositories:
Flow-GRPO and Adv-GRPO sample SD3.5-Medium at 512 px with 40 steps and guidance 4.5
(``config/grpo.py``: ``resolution``, ``eval_num_steps``, ``guidance_scale``); DanceGRPO's FLUX inference script
samples 50 steps at 1024 px with embedded guidance 3.5 (XueZeyue/DanceGRPO@15cc71d:
scripts/visualization/vis_flux.py:59-66), while its training sampler is 16 steps at 720 px on a shift-3 schedule
(``scripts/finetune/finetune_flux_grpo_8gpus.sh``); OmniGen2's GEdit runs use 50 steps, text guidance 5.0,
image guidance 1.5 and ``time_shift_base_res`` 168 at 1024 px (:class:`~domains.image.specs.OmniGen2Spec`).
"""

from __future__ import annotations

from domains.image.editscore import parse_editscore_answer
from domains.image.specs import AdapterDiffusionSpec, JudgeSpec, OmniGen2Spec
from zoo.card_kinds import CardKind, SnippetOrigin, diffusion_usage, example_input, register_card_kind, usage_snippet
from zoo.kinds import DiffusionSpec
from zoo.registry import ModelEntry, register

_NO_PIN = ("not pinned: no full commit hash of this Hub repository was found (its history cannot be read from here, "
           "and the Hub page mirrors and public code searched name none); pass zoo.load(name, revision=SHA)")
_CARD_UNREAD = "the Hub card's licence field was not read by this project (UNVERIFIED)"
_UNPINNED = {"revision_note": _NO_PIN}
# Full commits found for repositories registered in the loops below (how: docs/guides/hub.md); the others are
# _UNPINNED. Neither is checked to be its card's first or newest commit: the Hub's history could not be read here.
_PINNED = {
    # Cache path models--jieliu--SD3.5M-FlowGRPO-PickScore/snapshots/10c5669... in three public scripts of one
    # project.
    "jieliu/SD3.5M-FlowGRPO-PickScore": {
        "revision": "10c56697459bbdbe54d5e375912f49a0bcfae773",
        "revision_note": "pinned to the commit `main` resolved to when a public project downloaded it (cache path "
                         "snapshots/10c5669... in its scripts); first or newest commit of the card unverified",
    },
    # snapshot_download("EditScore/EditScore-7B", revision="dcce052...", local_files_only=True) in a public
    # reward-study script, which also pins its Qwen2.5-VL-7B-Instruct base.
    "EditScore/EditScore-7B": {
        "revision": "dcce052accfc75f2d48279c889a71755ecdf737b",
        "revision_note": "pinned to the commit a public reward-study script loads it at (snapshot_download with "
                         "revision dcce052...); first or newest commit of the card unverified",
    },
}

# --- gated bases: their own entries, so an adapter on them fails with their licence --------------------------
register(ModelEntry(
    name="stable-diffusion-3.5-medium", aliases=("sd3.5-medium",), repo_id="stabilityai/stable-diffusion-3.5-medium",
    spec=DiffusionSpec(), architecture="StableDiffusion3Pipeline", base_model="(base model)", domain="image",
    task="text-to-image (base of Flow-GRPO and Adv-GRPO)", license="other", gated=True,
    notes="Stability AI Community License: accept it on the Hub page; commercial use above the licence's revenue "
          "threshold needs an enterprise licence from Stability AI. Sampling defaults are diffusers' own.",
    license_source="Stability AI Community License as named on the Hub page (not re-read here: UNVERIFIED)",
    # Hugging Face cache path models--stabilityai--stable-diffusion-3.5-medium/snapshots/b940f67... in 8 public files.
    revision="b940f670f0eda2d07fbb75229e779da1ad11eb80",
    revision_note=("pinned to the commit `main` resolved to when public projects downloaded it (cache path "
                   "snapshots/b940f67... in 8 public files, Flow-GRPO checkouts among them); whether it is the card's "
                   "first or newest commit is unverified (the Hub's history could not be read here)"),
))  # fmt: skip
register(ModelEntry(
    name="flux-1-dev", aliases=("flux.1-dev", "flux-dev"), repo_id="black-forest-labs/FLUX.1-dev", spec=DiffusionSpec(),
    architecture="FluxPipeline", base_model="(base model)", domain="image", task="text-to-image (base of DanceGRPO)",
    license="other", gated=True,
    notes="FLUX.1 [dev] Non-Commercial License: accept it on the Hub page; outputs and weights are for "
          "non-commercial use unless Black Forest Labs grants otherwise. Sampling defaults are diffusers' own.",
    license_source="FLUX.1 [dev] Non-Commercial License as named on the Hub page (not re-read here: UNVERIFIED)",
    # Cache path models--black-forest-labs--FLUX.1-dev/snapshots/3de623f... in many public files and as a
    # pinned revision in others (versionLabel "3de623f", hf://black-forest-labs/FLUX.1-dev@3de623f...).
    revision="3de623fc3c33e44ffbe2bad470d0f45bccf2eb21",
    revision_note=("pinned to the commit `main` resolved to when public projects downloaded it (cache path "
                   "snapshots/3de623f... in many public files, and pinned by name in several); whether it is the "
                   "card's first or newest commit is unverified (the Hub's history could not be read here)"),
))  # fmt: skip

# --- Flow-GRPO (yifan123/flow_grpo, MIT): PEFT LoRA r32/alpha64 on the SD3.5-M transformer ---------------------
_SD35_EVAL = {"num_inference_steps": 40, "guidance_scale": 4.5, "height": 512, "width": 512,
              "base_entry": "stable-diffusion-3.5-medium", "base_repo": "stabilityai/stable-diffusion-3.5-medium"}
_LAYOUT = ("The repository layout (a PEFT adapter, as scripts/train_sd3.py saves it with save_pretrained) is read "
           "from the authors' code, not from the Hub listing (UNVERIFIED).")
for task, repo, reward in (("geneval", "jieliu/SD3.5M-FlowGRPO-GenEval", "GenEval (object composition)"),
                           ("ocr", "jieliu/SD3.5M-FlowGRPO-Text", "OCR (text rendering)"),
                           ("pickscore", "jieliu/SD3.5M-FlowGRPO-PickScore", "PickScore (human preference)")):
    register(ModelEntry(
        name=f"flow-grpo-sd35m-{task}", repo_id=repo, spec=AdapterDiffusionSpec(**_SD35_EVAL),
        architecture="StableDiffusion3Pipeline", base_model="stabilityai/stable-diffusion-3.5-medium (LoRA r32, alpha 64)",
        domain="image", task=f"text-to-image, RL-tuned for {reward}", license="mit", paper="2505.05470",
        notes=f"Flow-GRPO LoRA; the base's Stability AI Community License applies to what it generates. {_LAYOUT}",
        license_source=f"the authors' repository yifan123/flow_grpo LICENSE (MIT); {_CARD_UNREAD}",
        **_PINNED.get(repo, _UNPINNED), rl_methods=("flow-grpo",),
    ))  # fmt: skip

# --- Adv-GRPO (showlab/Adv-GRPO, MIT): two LoRAs in subfolders of one repository -----------------------------
_ADV_TRAINING = {
    "dino": "The zoo trains this discriminator: the diffusion engine's adv_grpo method.",
    "pickscore": "The zoo trains this discriminator: the diffusion engine's adv_grpo method with algorithm.discriminator: "
                 "pickscore (zoo/engines/diffusion/adversarial_pickscore.py). As theirs, it fine-tunes PickScore's CLIP "
                 "(vision layers from discriminator_tune_layer, -1: the last; Adam lr 5e-6, betas 0.5/0.999) with "
                 "PickScore's pairwise loss, references preferred, in the rounds where the references score below the "
                 "generations, the other rounds training the generator (showlab/Adv-GRPO@8287f90:scripts/"
                 "train_sd3_fast_pickscore.py:151-183, 658, 1008-1037; config/grpo.py:354-356). It differs in: float32 "
                 "(theirs casts the scorer to bfloat16, train_sd3_fast_pickscore.py:655); gradients averaged over "
                 "processes (their scorer unwraps its DDP, adv_grpo/pickscore_scorer.py:19-20, so each rank trains a copy "
                 "of its own); one reference drawn per generated image (theirs sets a prompt's 8 listed files against its "
                 "8 generations, train_sd3_fast_pickscore.py:773-801); the run's evaluation scores with the co-trained "
                 "discriminator (theirs with the frozen PickScore, config/grpo.py:370-372). The recipe "
                 "domains/image/recipes/adv-grpo-sd35m-pickscore.yaml is their pickscore_cotrain_sd3_fast config; its "
                 "reference images, Qwen-Image generations (config.json_path, config/grpo.py:361-362; released as the "
                 "Hub dataset benzweijia/QWen_Image_PickScore), are read by the qwen-image-references loader.",
}
for reward, folder in (("pickscore", "PickScore"), ("dino", "DINO")):
    register(ModelEntry(
        name=f"adv-grpo-sd35m-{reward}", repo_id="benzweijia/Adv-GRPO",
        spec=AdapterDiffusionSpec(**_SD35_EVAL, subfolder=folder), architecture="StableDiffusion3Pipeline",
        base_model="stabilityai/stable-diffusion-3.5-medium (LoRA)", domain="image",
        task=f"text-to-image, adversarial reward ({folder} discriminator) against reference images",
        license="mit", paper="2511.20256",
        notes=f"LoRA in the repository's {folder}/ folder (README, app.py load_lora_from_subfolder); sampling as "
              f"config/grpo.py eval_sd3_fast. The base's licence applies to what it generates. {_ADV_TRAINING[reward]}",
        license_source=f"the authors' repository showlab/Adv-GRPO LICENSE (MIT); {_CARD_UNREAD}",
        revision_note=_NO_PIN, rl_methods=("adv-grpo",),
    ))  # fmt: skip

# --- DanceGRPO (XueZeyue/DanceGRPO, code Apache-2.0): a full fine-tune of FLUX.1-dev's transformer ---------------
register(ModelEntry(
    name="dancegrpo-flux-hps", repo_id="xzyhku/flux_hpsv2.1_dancegrpo",
    # the authors' FLUX inference script: XueZeyue/DanceGRPO@15cc71d:scripts/visualization/vis_flux.py:59-66
    spec=AdapterDiffusionSpec(num_inference_steps=50, guidance_scale=3.5, height=1024, width=1024, base_entry="flux-1-dev",
                              base_repo="black-forest-labs/FLUX.1-dev", adapter_format="transformer"),
    architecture="FluxPipeline", base_model="black-forest-labs/FLUX.1-dev (full fine-tune of the transformer)",
    domain="image", task="text-to-image, RL-tuned for HPS-v2.1", license="other", paper="2505.07818",
    notes="A FluxTransformer2DModel folder (config.json + diffusion_pytorch_model.safetensors, as "
          "fastvideo/utils/checkpoint.py saves it) replaces FLUX.1-dev's transformer; its files at the repository "
          "root are assumed (UNVERIFIED). Sampling: the authors' FLUX inference settings (50 steps, embedded guidance "
          "3.5, 1024 px, scripts/visualization/vis_flux.py); their training sampler is another one (16 steps at 720 px "
          "on a shift-3 schedule, eta 0.3: scripts/finetune/finetune_flux_grpo_8gpus.sh), which "
          "domains/image/recipes/dancegrpo-flux-hps.yaml trains with. As a fine-tune of FLUX.1-dev the weights fall "
          "under the FLUX.1 [dev] Non-Commercial License (the code's Apache-2.0 does not cover them).",
    license_source="FLUX.1 [dev] Non-Commercial License: the weights are a full fine-tune of black-forest-labs/FLUX.1-dev "
                   "(the trained FLUX checkpoint of XueZeyue/DanceGRPO@15cc71d:README.md:34, train_grpo_flux.py loads "
                   f"FLUX.1-dev); the code repository is Apache-2.0; {_CARD_UNREAD}",
    revision_note=_NO_PIN, rl_methods=("dancegrpo",),
))  # fmt: skip

# --- EditScore (VectorSpaceLab/EditScore, Apache-2.0) ----------------------------------------------------------
_OMNIGEN2_HOW = ("diffusers 0.42.1 has no OmniGen2 pipeline: zoo.load fetches the LoRA and says how to run it with the "
                 "authors' OmniGen2 code, with their GEdit-Bench settings (text guidance 5.0, image guidance 1.5, "
                 "time_shift_base_res 168, empty negative prompt, 50 Euler steps at 1024 px). Score editors of your own "
                 "with the 'editscore' reward and the gedit-bench evaluation.")
for name, repo, what in (
    ("omnigen2-editscore7b", "OmniGen2/OmniGen2-EditScore7B", "released 2025-09-30 (EditScore README L44)"),
    ("omnigen2-editscore7b-v1.1", "OmniGen2/OmniGen2-EditScore7B-v1.1",
     ("v1.1, released 2025-10-27 with TempFlow's reweighting, 700 steps; the authors report GEdit 7.01 "
     "(EditScore README L32)")),
):
    register(ModelEntry(
        name=name, repo_id=repo, spec=OmniGen2Spec(num_inference_steps=50, guidance_scale=5.0, height=1024, width=1024),
        architecture="OmniGen2Pipeline", base_model="OmniGen2/OmniGen2 (LoRA)", domain="image",
        task="instruction-guided image editing, RL-tuned with EditScore-7B", license="apache-2.0", paper="2509.23909",
        notes=f"OmniGen2 LoRA {what}. {_OMNIGEN2_HOW}",
        license_source=f"the authors' repository VectorSpaceLab/EditScore (Apache-2.0); {_CARD_UNREAD}",
        revision_note=_NO_PIN, rl_methods=("flow-grpo",),
    ))  # fmt: skip

_JUDGE_USE = ("Use it through the 'editscore' reward (prompts, parsing and score maths of the editscore package), "
              "e.g. EditScoreReward(judge='{name}').")
_ES = "VectorSpaceLab/EditScore@6e0f1b9:"
# (entry, LoRA repository, base, chat layout, where the authors name the two)
_JUDGES = (
    ("editscore-7b", "EditScore/EditScore-7B", "Qwen/Qwen2.5-VL-7B-Instruct", "editscore", f"{_ES}evaluate.sh:8-10"),
    ("editscore-32b", "EditScore/EditScore-32B", "Qwen/Qwen2.5-VL-32B-Instruct", "editscore",
     (f"{_ES}README.md:23 (the 7B-72B series) and an EditScore reward-server launch script newer than that "
     "snapshot (file index id 5638692493: model_name_or_path=Qwen/Qwen2.5-VL-32B-Instruct, "
     "lora_path=EditScore/EditScore-32B)")),
    ("editscore-72b", "EditScore/EditScore-72B", "Qwen/Qwen2.5-VL-72B-Instruct", "editscore",
     f"{_ES}evaluate_72B_vllm.sh:8-10"),
    ("editscore-qwen3-vl-4b", "EditScore/EditScore-Qwen3-VL-4B-Instruct", "Qwen/Qwen3-VL-4B-Instruct", "processor",
     f"{_ES}evaluate_qwen3_vl_4B.sh:8-10 and README.md:145-154"),
    ("editscore-qwen3-vl-8b", "EditScore/EditScore-Qwen3-VL-8B-Instruct", "Qwen/Qwen3-VL-8B-Instruct", "processor",
     f"{_ES}evaluate_qwen3_vl_8B.sh:8-10"),
    ("editscore-qwen3-vl-32b", "EditScore/EditScore-Qwen3-VL-32B-Instruct", "Qwen/Qwen3-VL-32B-Instruct", "processor",
     f"{_ES}evaluate_qwen3_vl_32B.sh:8-10"),
)
for name, repo, base, layout, source in _JUDGES:
    served = ("the LoRA merged into the base, their chat layout" if layout == "editscore" else
              "the LoRA merged into the base, the base processor's chat template (editscore/mllm_tools/qwen3vl.py)")
    register(ModelEntry(
        name=name, aliases=("editscore",) if name == "editscore-7b" else (), repo_id=repo,
        spec=JudgeSpec(coord_frame="none", max_new_tokens=512, parser=parse_editscore_answer, base_repo_id=base,
                       chat_layout=layout),
        architecture="qwen2_5_vl" if layout == "editscore" else "qwen3_vl", base_model=f"{base} (LoRA)",
        domain="image", task="reward model for image edits (semantic consistency, perceptual quality; 0-25)",
        license="apache-2.0", paper="2509.23909",
        notes=f"Served as the authors do: {served}, temperature 0.7, top-p 0.9, top-k 20, 512 new tokens. "
              f"{_JUDGE_USE.format(name=name)} Base and LoRA named by {source}.",
        license_source=("the Hub card huggingface.co/EditScore/EditScore-32B/blob/ef0cf29/README.md front matter: "
                        "license: apache-2.0" if name == "editscore-32b" else
                        f"the authors' repository VectorSpaceLab/EditScore (Apache-2.0); {_CARD_UNREAD}"),
        **_PINNED.get(repo, _UNPINNED),
    ))  # fmt: skip


def _adapter_how(entry: ModelEntry) -> str:
    spec = entry.spec
    what = "a PEFT LoRA on" if spec.adapter_format == "peft-lora" else "a full replacement transformer for"
    where = f" (folder `{spec.subfolder}/`)" if spec.subfolder else ""
    return (f"Loads `{spec.base_entry}` (gated: accept its licence on the Hub first) and applies {what} its "
            f"transformer{where}. Samples with the authors' inference settings: {spec.num_inference_steps} steps, guidance "
            f"{spec.guidance_scale}, {spec.width}x{spec.height}. `image_output.settings` records what was used, seed "
            "included.")


def _omnigen2_usage(entry: ModelEntry, origin: SnippetOrigin) -> str:
    return "\n".join(["import zoo", "", f'entry = zoo.info("{entry.name}")', "print(entry.notes)  # how to run it"])


def _omnigen2_how(entry: ModelEntry) -> str:
    return ("OmniGen2 is not a diffusers pipeline, so `zoo.load` fetches the LoRA and raises with the authors' code "
            "path and settings. The zoo scores editing models with EditScore (`rewards.get('editscore')`) and "
            "evaluates diffusers editing pipelines on GEdit-Bench.")


def _judge_usage(entry: ModelEntry, origin: SnippetOrigin) -> str:
    image, _ = example_input(entry)  # one example image as source and edit: the call's shape, not a real edit
    return usage_snippet(entry, origin, [
        'question = sc_prompt("make the background blue")  # the authors\' semantic-consistency question',
        "answers = pipe.ask([[image, image]], [question])  # raw JSON answers, one per (images, question), batched",
        "print(parse_editscore_answer(answers[0], question))  # the scores on 0-25, parsed as the authors do",
        "# the 'editscore' reward asks both questions and combines the scores as the authors do:",
        '# rewards.get("editscore")(["edited.png"], [{"instruction": "...", "image": "source.png"}])',
    ], image=image, imports=("from domains.image.editscore import parse_editscore_answer, sc_prompt",))  # fmt: skip


def _judge_how(entry: ModelEntry) -> str:
    return ("The judge answers two questions per edit (semantic consistency on the source and edited image, "
            "perceptual quality) as JSON scores on 0-25; the reward parses them, rescales, and combines them as the "
            "authors' package does (O = sqrt(SC * PQ), 0-10). Questions are batched through the zoo's VLM pipeline.")


register_card_kind(AdapterDiffusionSpec, CardKind(
    "diffusion model: released weights on a gated base", "diffusers", "text-to-image",
    "zoo.pipelines.diffusion:DiffusionPipeline", "zoo.outputs:ImageOutput", diffusion_usage, _adapter_how,
))  # fmt: skip
register_card_kind(OmniGen2Spec, CardKind(
    "image editing model (authors' OmniGen2 code)", None, "image-to-image", None, None, _omnigen2_usage, _omnigen2_how,
))  # fmt: skip
register_card_kind(JudgeSpec, CardKind(
    "VLM reward model (judge)", "transformers", "image-text-to-text", "domains.image.pipelines:JudgePipeline", None,
    _judge_usage, _judge_how,
))  # fmt: skip

# --- trained in this repository (python -m lab.image.release all) ----------------------------------------
register(ModelEntry(
    name="flow-grpo-tiny-colour", repo_id=None, architecture="sd3",
    base_model="none (random init, StableDiffusion3Pipeline architecture, ~0.4M parameters, pre-trained here)",
    domain="image", task="text-to-image, 32x32 synthetic coloured shapes ('a <colour> square', 'a <colour> circle')",
    # The recipe's sampler: 6 Euler steps, guidance 4.5 (Flow-GRPO's), 32 px.
    spec=DiffusionSpec(num_inference_steps=6, guidance_scale=4.5, height=32, width=32),
    license="apache-2.0", license_source="this repository's licence (pyproject.toml: Apache-2.0); trained here",
    revision_note="shipped in this repository (checkpoints/flow-grpo-tiny-colour), not on the Hub",
    rl_methods=("flow-grpo",), paper="2505.05470",
    notes="A teaching/demo checkpoint trained on CPU: Flow-GRPO with the prompt-colour reward on a tiny SD3 "
          "pipeline; it only knows 8 colours and 2 shapes. Card: checkpoints/flow-grpo-tiny-colour/README.md.",
))  # fmt: skip
