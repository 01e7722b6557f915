"""Driving: CaRL's route-completion reward and PPO on a CPU highway stand-in."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="driving",
    summary="driving RL: CaRL's route-completion reward and Beta-PPO on highway-env",
    entries="domains.driving.carl_entries",
    algorithms="domains.driving.carl",
    environments={"highway-carl": "domains.driving.carl_env:make_highway_carl"},
)
