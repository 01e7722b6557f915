"""General visual RL: VLM-R1, Visual-RFT, Vision-R1, Curr-ReFT, R1-Reward (grounding, detection, reasoning)."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="perception",
    summary="general visual RL with verifiable rewards (VLM-R1, Visual-RFT, Vision-R1, Curr-ReFT, R1-Reward)",
    entries="domains.perception.entries",
    rewards="domains.perception.rewards",
)
