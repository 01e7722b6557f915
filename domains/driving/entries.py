"""Driving models of the zoo.

No driving-VLA paper this project studied publishes weights on the Hugging Face Hub: ReflectDrive
(pixeli99/ReflectDrive) has released a README only ("code is being cleaned"), R2SE no code, and
CaRL's checkpoints live in its own repository under a licence that forbids redistribution here.
ReflectDrive is listed as a recipe/evaluation-only system: its reflective inference is implemented
in :mod:`domains.driving.refine` and its metric (NAVSIM v1 PDMS) in :mod:`domains.driving.pdms`.
"""

from __future__ import annotations

from domains.driving.prompts import DRIVING_USER, parse_waypoints
from zoo.kinds import VLMSpec
from zoo.registry import ModelEntry, register

REFLECTDRIVE = register(
    ModelEntry(
        name="reflectdrive",
        repo_id=None,
        spec=VLMSpec(),
        architecture="unknown",
        base_model="unknown (the README acknowledges LLaDA-V, a diffusion language model; UNVERIFIED)",
        domain="driving",
        task="camera -> discrete-token trajectory (NAVSIM), with safety-guided reflective inference",
        license="unknown",
        code_license="mit",
        released=False,
        license_source=(
            "no weights are published, so there is no weights licence to read; the repository "
            "pixeli99/ReflectDrive (README and LICENSE only) is MIT"
        ),
        revision_note="no public weights to pin",
        notes=(
            "Reported (README, NAVSIM v1 metrics): PDMS 91.1, 84.8 without reflective inference, 94.7 with a "
            "privileged ground-truth oracle. This zoo implements the reflective-inference loop for autoregressive "
            "VLAs (`zoo eval <model> --data synthetic-refine`) and the PDMS it is scored with; the discrete-"
            "diffusion planner itself is unreleased."
        ),
    )
)

# The checkpoint this repository trains itself (python -m domains.driving.release, from three recipes).
DRIVING_VLA_TINY = register(
    ModelEntry(
        name="driving-vla-tiny",
        repo_id=None,
        architecture="qwen2_5_vl",
        base_model="none (random init, Qwen2.5-VL architecture, ~1M parameters)",
        domain="driving",
        task="8 waypoints (x, y, heading; 0.5 s apart) from a 112-px synthetic bird's-eye scene and ego speed + command",
        # Trained on 112x112 renders with the question as the whole user turn, image first; the
        # processor limits keep them unresized (the recipe's tiny-model min/max pixels).
        spec=VLMSpec(
            user=DRIVING_USER,
            min_pixels=56 * 56,
            max_pixels=112 * 112,
            coord_frame="none",
            max_new_tokens=160,
            parser=parse_waypoints,
        ),
        license="apache-2.0",
        license_source="this repository's licence (pyproject.toml: Apache-2.0); trained here",
        revision_note="shipped in this repository (checkpoints/driving-vla-tiny), not on the Hub",
        rl_methods=("grpo",),
        notes="A teaching/demo checkpoint trained on CPU by `python -m domains.driving.release`; it only knows the "
        "synthetic scenes and is not a driving policy. Card: model_cards/driving-vla-tiny/README.md.",
    )
)
