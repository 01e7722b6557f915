"""Robot policies of the zoo (facts: each entry's sources, named beside it).

None of the papers' own actors is on the Hugging Face Hub in a format the zoo loads, so the entries
say where the weights are, what format they are in, what of each system runs here and what does
not. ``fetch-push-bc-tiny`` and ``fetch-push-resip-tiny`` are this repository's own CPU checkpoints.
"""

from __future__ import annotations

from zoo.kinds import PolicySpec
from zoo.registry import ModelEntry, register

_RESIP_S3 = "https://iai-robust-rearrangement.s3.us-east-2.amazonaws.com/checkpoints"

RESIP_ONE_LEG = register(
    ModelEntry(
        name="resip-one-leg",
        aliases=("resip",),
        repo_id=None,
        released=False,
        architecture="resip-diffusion-unet+residual-mlp",
        base_model="ResiP BC diffusion policy (1-D UNet, chunk 8), FurnitureBench one_leg",
        domain="robot",
        task="FurnitureBench one_leg assembly (state observations -> end-effector pose target, rot6d + gripper)",
        spec=PolicySpec(action_chunk=8),
        license="mit",
        license_source="the authors' repository ankile/robust-rearrangement (MIT); the S3 checkpoints carry no "
        "licence of their own",
        revision_note="no Hub weights to pin (torch pickles on S3, see notes)",
        rl_methods=("ppo",),
        paper="2407.16677",
        notes=(f"ResiP's actors are on S3, not the Hub, and are torch pickles of the authors' own classes: BC base "
               f"{_RESIP_S3}/bc/one_leg/{{low|med}}/actor_chkpt.pt and residual-PPO actor "
               f"{_RESIP_S3}/rppo/one_leg/{{low|med}}/actor_chkpt.pt (also lamp, round_table, mug_rack, "
               "factory_peg_hole). Fetch them with `curl -O` and load them with ankile/robust-rearrangement "
               "(its environment needs IsaacGym on a GPU); the zoo does not unpickle foreign code."),
    )
)

RESFIT = register(
    ModelEntry(
        name="resfit",
        repo_id=None,
        released=False,
        architecture="resfit-act+residual-td3",
        base_model="ACT or diffusion BC policy (LeRobot)",
        domain="robot",
        task="robosuite / DexMimicGen manipulation from 84x84 images (residual off-policy RL)",
        spec=PolicySpec(),
        license="cc-by-nc-4.0",
        license_source="the authors' code licence (ResFiT repository: CC-BY-NC-4.0); no weights are public",
        revision_note="no public weights to pin",
        paper="2509.19301",
        notes=("No checkpoints are public (base policies are referenced by WandB run ids); the demonstration "
               "datasets are on the Hub as ankile/robomimic-mh-can-image and siblings (LeRobot format). Runs here: "
               "the residual TD3 with ResFiT's update scheme, action scaling and critic loss, checked against "
               "amazon-science/residual-offpolicy-rl@66262b0 (domains/robot/residual.py, method resfit-td3, recipe "
               "fetch-push-resfit on a FetchPush stand-in). Does not run here: the image encoders, the ACT base, "
               "robosuite/DexMimicGen and the LeRobot datasets. The code's licence is non-commercial."),
    )
)

_DPPO_DRIVE = "https://drive.google.com/drive/folders/1ZlFqmhxC4S8Xh1pzZ-fXYzS5-P8sfpiP"

DPPO = register(
    ModelEntry(
        name="dppo",
        repo_id=None,
        released=False,
        architecture="dppo-diffusion-mlp",
        base_model="DDPM action-chunk policy (DiffusionMLP or UNet) behaviour-cloned per task",
        domain="robot",
        task="Gym locomotion, Robomimic, D3IL and FurnitureBench manipulation (diffusion policy fine-tuned with PPO)",
        spec=PolicySpec(),
        license="unknown",
        code_license="mit",
        license_source="irom-princeton/dppo@cc7234a LICENSE and README lines 186-187: MIT (the code); the "
        "checkpoints on Google Drive state no licence of their own",
        revision_note="no Hub weights to pin (Google Drive files, see notes)",
        rl_methods=("ppo",),
        paper="2409.00588",
        notes=(f"DPPO's pre-trained policies are on Google Drive ({_DPPO_DRIVE}; one file per task in "
               "script/download_url.py). Each is torch.save({'epoch', 'model', 'ema'}) of state dicts "
               "(agent/pretrain/train_agent.py:146-156), which the authors read with torch.load(weights_only=True) "
               "(model/diffusion/diffusion.py:77-86): tensors only, so safetensors-convertible. They are not loadable "
               "here: the zoo has no architecture for DPPO's DiffusionMLP (its time-embedding MLP and layout differ "
               "from the zoo's diffusion-mlp) nor DPPO's environments. Runs here: DPPO's fine-tuning maths "
               "(zoo/rl/dppo.py, checked against DPPO's own numbers in tests/rl/test_dppo.py) as method dppo "
               "(recipe fetch-push-dppo) on a FetchPush stand-in."),
    )
)

DIWA = register(
    ModelEntry(
        name="diwa",
        repo_id=None,
        released=False,
        architecture="diwa-diffusion-mlp+lumos-world-model",
        base_model="DPPO-style diffusion MLP pre-trained on CALVIN expert data, in a frozen world model learned from "
        "play data",
        domain="robot",
        task="CALVIN (and LIBERO) manipulation skills fine-tuned with PPO entirely inside a learned world model",
        spec=PolicySpec(),
        license="unknown",
        code_license="gpl-3.0 (README) / mit (LICENSE file)",
        license_source="upstream states two licences: acl21/diwa@028dbfe README 'released under the GPL-3.0 license' "
        "(and https://diwa.cs.uni-freiburg.de: 'released under the GPLv3 license. For any commercial purpose, please "
        "contact the authors'), while the LICENSE file @de1f39f is the MIT licence; the world-model checkpoint and "
        "expert data state none",
        revision_note="no Hub weights to pin (files on diwa.cs.uni-freiburg.de, see notes)",
        rl_methods=("ppo",),
        paper="2508.03645",
        notes=("The world-model checkpoint is https://diwa.cs.uni-freiburg.de/download/ckpts/vision.ckpt and the "
               "featurised expert data https://diwa.cs.uni-freiburg.de/download/data/expert.zip (README @028dbfe); "
               "they need the authors' LUMOS code and CALVIN, which the zoo does not wrap. DiWA's PPO loss is DPPO's "
               "(zoo/rl/dppo.py). Runs here: its imagined-rollout reward (argmax of the success classifier on the "
               "chunk's last latent), termination and time limit (domains/robot/diwa.py, checked against the "
               "authors' code). Does not run here: the world model, the reward classifier, CALVIN/LIBERO."),
    )
)

RL_100 = register(
    ModelEntry(
        name="rl-100",
        repo_id=None,
        released=False,
        architecture="rl100-diffusion-unet",
        base_model="diffusion (or flow) visuomotor policy from 3-D point clouds or images, behaviour-cloned on "
        "teleoperated demonstrations",
        domain="robot",
        task="real-robot manipulation (Push-T, bowling, pouring, folding, unscrewing, juicing): IL, offline PPO "
        "gated by OPE, then online PPO over the denoising steps",
        spec=PolicySpec(),
        license="unknown",
        license_source="Lei-Kun/RL-100 has no licence file among its indexed files (configs at 38513b2, "
        "unidpg/uni_ppo.py at 34204a7); no weights are published there",
        revision_note="no public weights to pin",
        rl_methods=("ppo",),
        paper="2510.14830",
        notes=("No checkpoints are published in the repository. Runs here: RL-100's online advantages (GAE per "
               "environment over chunk steps, gamma^n per chunk, bootstrap cut only by true terminations) and its "
               "per-denoising-step PPO loss with one ratio per chunk (domains/robot/rl100.py, checked against "
               "uni_ppo.py). Does not run here: its policies and encoders, the offline stage (IQL critics, OPE "
               "gate), consistency distillation and the real-robot environments."),
    )
)

SERL = register(
    ModelEntry(
        name="serl",
        repo_id=None,
        released=False,
        architecture="serl-resnet10-sac",
        base_model="ResNet-10 image encoder pre-trained on ImageNet-1K (frozen) under SAC actor and critic MLPs",
        domain="robot",
        task="real-robot manipulation (peg insertion, PCB insertion, cable routing, bin relocation) from images "
        "with SAC/RLPD, demonstrations and learned reward classifiers",
        spec=PolicySpec(),
        license="unknown",
        code_license="apache-2.0",
        license_source="rail-berkeley/serl LICENSE: MIT at 707d5f3 (and since a876cdb, 2024-01-18), Apache-2.0 since "
        "cd5f7e7 (2024-12-06, 'Update LICENSE'), while the README badge at cd5f7e7 still says MIT; the ResNet-10 "
        "release asset states no licence",
        revision_note="no Hub weights to pin (a GitHub release asset, see notes)",
        rl_methods=("sac",),
        paper="2401.16013",
        notes=("SERL publishes no trained policy; its ResNet-10 encoder is the GitHub release asset "
               "https://github.com/rail-berkeley/serl/releases/download/resnet10/resnet10_params.pkl, a Python pickle "
               "read with pickle.load (serl_launcher/utils/train_utils.py:69-109), which the zoo does not unpickle. "
               "Runs here: SERL's SAC critic, actor and temperature losses (REDQ subsampling, entropy backup outside "
               "the discount; domains/robot/serl.py, checked against sac.py). Does not run here: the JAX agents, the "
               "encoder, the actor/learner processes, the reward classifiers and the Franka environments."),
    )
)

# This repository's own CPU checkpoints (python -m lab.robot.release base|residual).
FETCH_PUSH_BC_TINY = register(
    ModelEntry(
        name="fetch-push-bc-tiny",
        repo_id=None,
        architecture="mlp",
        base_model="none (behaviour cloning from scripted demonstrations)",
        domain="robot",
        task="FetchPush-v4 (28-D state -> 4-D end-effector action), 4-step action chunks",
        spec=PolicySpec(observation_dim=28, action_dim=4, action_chunk=4),
        license="apache-2.0",
        license_source="this repository's licence (pyproject.toml: Apache-2.0); trained here",
        revision_note="shipped in this repository (checkpoints/fetch-push-bc-tiny), not on the Hub",
        notes="A deliberately imperfect BC base (open-loop 4-step chunks, 82 demonstrations) for residual RL; "
        "its success rate is in training.json. Card: model_cards/fetch-push-bc-tiny/README.md.",
    )
)

FETCH_PUSH_RESIP_TINY = register(
    ModelEntry(
        name="fetch-push-resip-tiny",
        repo_id=None,
        architecture="residual-mlp",
        base_model="fetch-push-bc-tiny (frozen) + ResiP residual trained with PPO",
        domain="robot",
        task="FetchPush-v4 (28-D state -> 4-D end-effector action), per-step residual over a chunked base",
        spec=PolicySpec(observation_dim=28, action_dim=4, action_chunk=1),
        license="apache-2.0",
        license_source="this repository's licence (pyproject.toml: Apache-2.0); trained here",
        revision_note="shipped in this repository (checkpoints/fetch-push-resip-tiny), not on the Hub",
        rl_methods=("ppo",),
        paper="2407.16677",
        notes="Use pipe.act(obs) per step (with pipe.reset() per episode) to keep the base's chunk queue, as in "
        "training. Card: model_cards/fetch-push-resip-tiny/README.md.",
    )
)
