"""Shared fixtures of the robot tests: a tiny chunked base policy on disk, loaded through ``zoo.load``."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("stable_baselines3", reason="the robot domain needs the `robot` extra: pip install -e '.[robot]'")
pytest.importorskip("gymnasium_robotics", reason="the robot domain needs the `robot` extra: pip install -e '.[robot]'")
os.environ.setdefault("MUJOCO_GL", "egl")


@pytest.fixture(scope="session")
def base_dir(tmp_path_factory):
    """A random-weight MLP base (28 -> 2 x 4 actions, chunk 2) with non-trivial statistics."""
    import numpy as np
    import torch

    from zoo.pipelines.policy import Normalization, PolicyConfig, mlp, save_policy

    torch.manual_seed(0)
    config = PolicyConfig(observation_dim=28, action_dim=4, action_chunk=2, hidden=(16,))
    rng = np.random.default_rng(0)
    norm = Normalization(rng.normal(0, 0.5, 28), rng.uniform(0.1, 1, 28), rng.normal(0, 0.1, 4), rng.uniform(0.2, 0.5, 4))
    return save_policy(tmp_path_factory.mktemp("base"), mlp(config), config, norm)
