"""Driving: NAVSIM PDMS/EPDMS on synthetic bird's-eye scenes, a waypoint VLA trained with GRPO, AutoTrust,
and CaRL's route-completion reward with Beta-PPO on a highway-env stand-in."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="driving",
    summary="driving VLAs: NAVSIM PDMS/EPDMS scoring (synthetic bird's-eye scenes), waypoint GRPO, AutoTrust; "
    "CaRL's route-completion reward and Beta-PPO on highway-env",
    entries="domains.driving.entries",
    rewards="domains.driving.rewards",
    algorithms="domains.driving.carl",
    algorithm_names={},  # carl registers the policy method only (named by `methods`)
    methods={"carl-ppo": "domains.driving.carl_settings"},
    datasets={
        "driving-synthetic": "domains.driving.data:synthetic_driving",
        "autotrust": "domains.driving.data:load_autotrust",
    },
    answer_formats={"driving-waypoints": "domains.driving.prompts:waypoints_answer",
                    "driving-action-tokens": "domains.driving.action_tokens:tokens_answer"},
    evaluate="domains.driving.evaluate:run",
    environments={"highway-carl": "domains.driving.carl_env:make_highway_carl"},
    benchmarks=("synthetic", "synthetic-tiny", "synthetic-refine", "synthetic-tiny-refine", "autotrust",
                "autotrust-uncertainty", "autotrust-abstention", "autotrust-privacy", "navsim"),
    # AutoTrust's QA files are its benchmark (taco-group/AutoTrust qa-pairs/); the synthetic scenes train
    # below the held-out seeds (data.EVAL_SEED), so they are not evaluation data.
    eval_datasets=("autotrust",),
)
