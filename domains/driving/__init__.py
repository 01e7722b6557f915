"""Driving: NAVSIM PDMS/EPDMS scoring on synthetic scenes, a waypoint-emitting VLA trained with GRPO, AutoTrust."""

from zoo.domains import Domain

DOMAIN = Domain(
    name="driving",
    summary="driving VLAs: NAVSIM PDMS/EPDMS (synthetic bird's-eye scenes), waypoint GRPO, AutoTrust evaluation",
)
