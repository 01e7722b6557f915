"""Robot policies of the zoo (facts: research/domain-driving-robot.md §2.1-2.3).

The papers' own actors are not on the Hugging Face Hub, so the zoo cannot fetch them: the entries
say where they are. ``fetch-push-residual-tiny`` is this repository's own CPU checkpoint.
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
               "datasets are on the Hub as ankile/robomimic-mh-can-image and siblings (LeRobot format). The zoo "
               "re-implements the residual TD3 from the paper (domains/robot/residual.py): the code's licence is "
               "non-commercial."),
    )
)

# This repository's own CPU checkpoints (python -m domains.robot.release base|residual).
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
