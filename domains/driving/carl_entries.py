"""CaRL's driving policies in the catalog.

The authors' planners (arXiv 2504.17838) are checkpoints inside their GitHub repository, not on
the Hugging Face Hub, under a licence that forbids dual use and copying into a permissive project:
the entry says where they are. The zoo's own CPU policy trained with CaRL's reward on highway-env
is registered next to it once shipped in ``checkpoints/``.
"""

from __future__ import annotations

from zoo.kinds import PolicySpec
from zoo.registry import ModelEntry, register

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
        license_source="autonomousvision/CaRL README: Civil-M licence (an MIT variant that bans dual use, "
        "partial copyleft); 'all models are licensed under the same license as the code'",
        revision_note="no Hub weights to pin (torch checkpoints inside the authors' repository)",
        rl_methods=("ppo",),
        paper="2504.17838",
        notes="The authors' checkpoints live in github.com/autonomousvision/CaRL: CARLA/results/CaRL_PY_00 and "
        "siblings (config.json, model_final.pth) and nuPlan/checkpoints/nuplan_51892_1B/model_best.pth; they need "
        "CARLA 0.9.15 or nuPlan with its maps. The zoo re-implements CaRL's reward and Beta-PPO from the paper "
        "(domains/driving/carl_reward.py, carl_policy.py) on a CPU highway-env stand-in; the licence forbids "
        "copying the code. Out of scope: any real vehicle.",
    )
)

# This repository's own CPU checkpoint (bench/driving_carl.py, then python -m domains.driving.carl_release).
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
