"""Reward maths and sandboxed renderers. Imports nothing else of this project."""

from rewards.base import Reward, RewardResult
from rewards.registry import Registry, UnknownNameError

__all__ = ["Registry", "Reward", "RewardResult", "UnknownNameError"]
