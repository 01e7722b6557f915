"""The ``policy`` engine: RL of a control policy with gymnasium + stable-baselines3.

Residual RL on a frozen behaviour-cloned base (ResiP, ResFiT) is the first use, diffusion-policy
PPO (DPPO, :mod:`zoo.engines.policy.dppo`, its own compact trainer) the second; the methods
themselves are registered by domains (:data:`~zoo.engines.policy.methods.POLICY_METHODS`), so the
engine knows nothing of a particular robot or simulator.
"""
