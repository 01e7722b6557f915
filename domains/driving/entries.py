"""Driving models of the zoo.

No driving-VLA paper this project studied publishes weights on the Hugging Face Hub: ReflectDrive
(pixeli99/ReflectDrive) has released a README only, R2SE no code, and CaRL's checkpoints live in its
own repository under a licence that forbids redistribution here. The catalog therefore lists the
waypoint VLA this repository trains itself (``python -m domains.driving.release``).
"""

from __future__ import annotations
