"""Driving models of the zoo.

No driving-VLA paper this project studied publishes weights on the Hugging Face Hub: ReflectDrive
(pixeli99/ReflectDrive) has released a README only ("code is being cleaned"), R2SE no code, and
CaRL's checkpoints live in its own repository under a licence that forbids redistribution here.
ReflectDrive is listed as a recipe/evaluation-only system: its reflective inference is implemented
in :mod:`domains.driving.refine` and its metric (NAVSIM v1 PDMS) in :mod:`domains.driving.pdms`.
"""

from __future__ import annotations

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
