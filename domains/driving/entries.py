"""Driving models of the zoo.

No driving-VLA paper this project studied publishes weights on the Hugging Face Hub: ReflectDrive
(pixeli99/ReflectDrive) has released a README only ("code is being cleaned"), R2SE no code, CaRL's
checkpoints are torch pickles inside its own repository (for CARLA and nuPlan, which the zoo cannot
run), and FastRLAP released code and a simulator but no weights. ReflectDrive is listed as a
recipe/evaluation-only system: its reflective inference is implemented in :mod:`domains.driving.refine`
and its metric (NAVSIM v1 PDMS) in :mod:`domains.driving.pdms`.
"""

from __future__ import annotations

from domains.driving.prompts import DRIVING_USER, parse_waypoints
from zoo.kinds import PolicySpec, VLMSpec
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
        paper="2509.20109",  # pixeli99/ReflectDrive@dc49ed8:README.md links arXiv 2509.20109
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

# The checkpoint this repository trains itself (python -m lab.driving.release, from three recipes).
DRIVING_VLA_TINY = register(
    ModelEntry(
        name="driving-vla-tiny",
        repo_id=None,
        architecture="qwen2_5_vl",
        base_model="none (random init, Qwen2.5-VL architecture, ~1M parameters)",
        domain="driving",
        task="a 4-s plan as 16 action tokens (distance + curvature per 0.5 s, decoded to 8 waypoints x, y, heading) "
        "from a 112-px synthetic bird's-eye scene and ego speed + command",
        # Trained on 112x112 renders with the question as the whole user turn, image first; the
        # processor limits keep them unresized (the recipe's tiny-model min/max pixels).
        spec=VLMSpec(
            user=DRIVING_USER,
            min_pixels=56 * 56,
            max_pixels=112 * 112,
            coord_frame="none",
            max_new_tokens=32,  # 16 action tokens and the end of turn (domains/driving/action_tokens.py)
            parser=parse_waypoints,
        ),
        license="apache-2.0",
        license_source="this repository's licence (pyproject.toml: Apache-2.0); trained here",
        revision_note="shipped in this repository (checkpoints/driving-vla-tiny), not on the Hub",
        rl_methods=("grpo",),
        notes="A teaching/demo checkpoint trained on CPU by `python -m lab.driving.release`; it only knows the "
        "synthetic scenes and is not a driving policy. Card: model_cards/driving-vla-tiny/README.md.",
    )
)

# CaRL (arXiv 2504.17838): the authors' planners, and this repository's own CPU policy trained with its reward.
CARL = register(
    ModelEntry(
        name="carl",
        repo_id=None,
        released=False,
        architecture="carl-roach-cnn+beta-ppo",
        base_model="none (PPO from scratch on privileged BEV input)",
        domain="driving",
        task="closed-loop planning in CARLA (longest6 v2) and nuPlan (Val14) from a privileged BEV raster",
        spec=PolicySpec(action_dim=2),
        license="other",
        license_source="jkli-2/CaRL@721743c:LICENSE (fork of autonomousvision/CaRL): Civil-M, MIT's permissions "
        "(use, copy, modify, distribute) plus Civil Clause v1: no use in or for weapons, not to be sold to or used by "
        "entities authorised to use force against persons, and any derivative's licence must carry the clause; the "
        "README (jkli-2/CaRL@0cddea6) says the same ('a variant of the MIT license that bans dual-use', 'partial "
        "copyleft'). An older upstream README (autonomousvision/CaRL@7721d07) named Civil-A, the Apache-2.0 variant",
        revision_note="no Hub weights to pin (torch checkpoints inside the authors' repository)",
        rl_methods=("ppo",),
        paper="2504.17838",
        notes="The authors' checkpoints live in github.com/autonomousvision/CaRL: CARLA/results/CaRL_PY_00 and "
        "siblings (config.json, model_final.pth) and nuPlan/checkpoints/nuplan_51892_1B/model_best.pth; they need "
        "CARLA 0.9.15 or nuPlan with its maps. The zoo re-implements CaRL's nuPlan reward and its PPO loss "
        "(domains/driving/carl_reward.py, carl_policy.py) on a CPU highway-env stand-in, in its own code; copying "
        "CaRL's code is allowed under Civil-M if the civil clause travels with it. Out of scope: any real vehicle "
        "and any use the civil clause excludes.",
    )
)

# This repository's own CPU checkpoint (bench/driving_carl.py, then python -m lab.driving.carl_release).
CARL_HIGHWAY_TINY = register(
    ModelEntry(
        name="carl-highway-tiny",
        repo_id=None,
        architecture="beta-mlp",
        base_model="none (Beta-PPO from scratch on CaRL's reward)",
        domain="driving",
        task="highway-env route driving (35-D kinematics of ego + 4 nearest vehicles -> [acceleration, steering])",
        spec=PolicySpec(observation_dim=35, action_dim=2),
        license="apache-2.0",
        license_source="this repository's licence (pyproject.toml: Apache-2.0); trained here",
        revision_note="shipped in this repository (checkpoints/carl-highway-tiny), not on the Hub",
        rl_methods=("ppo",),
        paper="2504.17838",
        notes="Acts with the Beta distribution's mean, as CaRL evaluates; observations from "
        "domains/driving/carl_env.py (make_highway_carl). A simulator toy: out of scope for any real vehicle. "
        "Card: model_cards/carl-highway-tiny/README.md.",
    )
)

# FastRLAP (arXiv 2304.09831): code and simulator are public (MIT), no trained weights.
FASTRLAP = register(
    ModelEntry(
        name="fastrlap",
        repo_id=None,
        released=False,
        architecture="jaxrl5 DrQ (pixels) / REDQ (states) actor-critic",
        base_model="none released (the paper initialises the encoder offline on other robots' navigation data)",
        domain="driving",
        task="fast RC-car driving through checkpoints from a user's demonstration lap, learned online in the "
        "real world (ROS) or in a MuJoCo off-road simulator",
        spec=PolicySpec(action_dim=2),
        license="unknown",
        code_license="mit",
        license_source="kylestach/fastrlap-release@12d8e5b:LICENSE (MIT, code, simulator and jaxrl5); no weights "
        "are published, so there is no weights licence to read",
        revision_note="no public weights to pin",
        paper="2304.09831",
        notes="Public: ROS stack, the MuJoCo off-road simulator (fastrlap-mujoco-env) and jaxrl5 DrQ/REDQ training "
        "(kylestach/fastrlap-release@6913d16). Nothing of it runs in the zoo: its reward (velocity towards the current "
        "checkpoint, +100 on reaching it, -100 upside down or stuck; fastrlap-mujoco-env/offroad_sim_v2/envs/"
        "task.py:129-141) is paid by a dm_control 1.0.9 heightfield world on MuJoCo 2.3 with a goal graph and trained "
        "with JAX, none of which the zoo's environment has (mujoco 3.4, no dm_control or JAX), and the zoo has no "
        "checkpoint-course environment of its own to pay it in.",
    )
)
