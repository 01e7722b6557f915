"""Driving: NAVSIM PDMS/EPDMS on synthetic bird's-eye scenes, a waypoint VLA trained with GRPO, AutoTrust."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="driving",
    summary="driving VLAs: NAVSIM PDMS/EPDMS scoring (synthetic bird's-eye scenes), waypoint GRPO, AutoTrust",
    entries="domains.driving.entries",
    rewards="domains.driving.rewards",
    datasets={
        "driving-synthetic": "domains.driving.data:synthetic_driving",
        "autotrust": "domains.driving.data:load_autotrust",
    },
    answer_formats={"driving-waypoints": "domains.driving.prompts:waypoints_answer"},
    evaluate="domains.driving.evaluate:run",
    benchmarks=("synthetic", "synthetic-tiny", "synthetic-refine", "synthetic-tiny-refine", "autotrust"),
)
