"""The lab: the experiments that made this repository's shipped checkpoints.

Release ladders (SFT start -> RL -> equal-CPU-time SFT control, :mod:`lab.ladder`), the per-domain
drivers that build ``checkpoints/<entry>`` (``python -m lab.<domain>.release``) and the narrative model
cards of those checkpoints. The lab imports the library (``zoo``, ``rewards``, ``domains``); the library
and ``bench/`` never import the lab (``tests/contract/test_lab_boundary.py``).
"""
