"""Robot manipulation: residual RL on a frozen behaviour-cloned policy (ResiP, ResFiT) and diffusion-policy PPO (DPPO)."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="robot",
    summary="residual RL on frozen BC policies (ResiP PPO, ResFiT TD3) and diffusion-policy PPO (DPPO) on a CPU FetchPush stand-in",
    entries="domains.robot.entries",
    algorithms="domains.robot.algorithms",
    algorithm_names={},  # its algorithms module registers the policy methods only (named by `methods`)
    methods={"resip-ppo": "domains.robot.settings", "resfit-td3": "domains.robot.settings",
             "dppo": "domains.robot.settings"},
    environments={"fetch-push": "domains.robot.envs:make_fetch_push"},
)
