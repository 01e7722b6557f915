"""The NAVSIM agent adapter against NAVSIM's agent interface (mirrored in ``navsim_mirror.py``, NAVSIM 0a380a9).

What ``run_pdm_score`` does with an agent (``navsim/planning/script/run_pdm_score.py:57-95``): build it
from keyword arguments (Hydra), ``initialize()``, build the scene loader from ``get_sensor_config()``,
read ``requires_scene``, call ``compute_trajectory(agent_input)`` and score the ``Trajectory``. The
reference plan for an unparsable answer is NAVSIM's ``ConstantVelocityAgent.compute_trajectory``
(``navsim/agents/constant_velocity_agent.py:34-46``), ported below.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from tests.domains.driving import navsim_mirror
from tests.domains.driving.navsim_mirror import (
    AgentInput,
    Camera,
    Cameras,
    EgoStatus,
    Lidar,
    SensorConfig,
    Trajectory,
    TrajectorySampling,
)

MODULE = "domains.driving.navsim_agent"


@pytest.fixture(params=["v2", "v1"])
def navsim_agent(monkeypatch, request):
    """``domains.driving.navsim_agent`` imported against the mirrored NAVSIM (v2 0a380a9, v1.1 0811876c)."""
    navsim_mirror.install(monkeypatch, request.param)
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    module = importlib.import_module(MODULE)
    monkeypatch.setitem(sys.modules, MODULE, module)  # removed again after the test
    return module


def agent_input(command: list[int], velocity=(5.0, 0.0), frames: int = 4, size=(90, 160)) -> AgentInput:
    """NAVSIM's agent input: ``frames`` history frames in the ego frame, only ``cam_f0`` loaded (as asked)."""
    rng = np.random.default_rng(0)
    statuses, cameras = [], []
    for i in range(frames):
        statuses.append(EgoStatus(ego_pose=np.array([-0.5 * (frames - 1 - i) * velocity[0], 0.0, 0.0], np.float32),
                                  ego_velocity=np.array(velocity, np.float32),
                                  ego_acceleration=np.zeros(2, np.float32), driving_command=np.array(command)))  # fmt: skip
        image = rng.integers(0, 255, (*size, 3), dtype=np.uint8)
        cameras.append(Cameras(cam_f0=Camera(image=image), **{c: Camera() for c in
                                                              ("cam_l0", "cam_l1", "cam_l2", "cam_r0", "cam_r1",
                                                               "cam_r2", "cam_b0")}))  # fmt: skip
    return AgentInput(statuses, cameras, [Lidar() for _ in range(frames)])


def navsim_constant_velocity(agent_input: AgentInput, sampling: TrajectorySampling) -> Trajectory:
    """constant_velocity_agent.py:34-46 as released."""
    ego_velocity_2d = agent_input.ego_statuses[-1].ego_velocity
    ego_speed = (ego_velocity_2d**2).sum(-1) ** 0.5
    num_poses, dt = sampling.num_poses, sampling.interval_length
    poses = np.array([[(time_idx + 1) * dt * ego_speed, 0.0, 0.0] for time_idx in range(num_poses)], dtype=np.float32)
    return Trajectory(poses, sampling)


class Answer:
    def __init__(self, trajectory):
        self.trajectory, self.text = trajectory, ""


def test_without_navsim_the_import_fails_with_one_sentence(monkeypatch):
    monkeypatch.setitem(sys.modules, "navsim", None)
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    with pytest.raises(ImportError, match="github.com/autonomousvision/navsim .PyPI's `navsim` is an unrelated"):
        importlib.import_module(MODULE)


def test_the_adapter_is_a_navsim_agent_built_as_hydra_builds_it(navsim_agent):
    sampling = TrajectorySampling(time_horizon=4, interval_length=0.5)
    agent = navsim_agent.ZooAgent(model="driving-vla-tiny", trajectory_sampling=sampling)
    assert isinstance(agent, sys.modules["navsim.agents.abstract_agent"].AbstractAgent)
    assert agent.name() == "zoo-driving-vla-tiny" and agent.requires_scene is False  # not the sampling (v1.1)
    assert agent._trajectory_sampling is sampling and navsim_agent.ZooAgent("m")._trajectory_sampling == sampling
    config = agent.get_sensor_config()
    assert isinstance(config, SensorConfig) and config.get_sensors_at_iteration(3) == ["cam_f0"]
    assert navsim_agent.ZooAgent("m", camera="cam_b0").get_sensor_config().get_sensors_at_iteration(0) == ["cam_b0"]
    with pytest.raises(ValueError, match="8 poses at 0.5 s; NAVSIM asks for 40 at 0.1 s"):
        navsim_agent.ZooAgent("m", TrajectorySampling(time_horizon=4, interval_length=0.1))
    with pytest.raises(ValueError, match="cam_x"):
        navsim_agent.ZooAgent("m", camera="cam_x")
    with pytest.raises(RuntimeError, match="before initialize"):
        agent.compute_trajectory(agent_input([0, 1, 0, 0]))


@pytest.mark.parametrize(("one_hot", "said"), [([1, 0, 0, 0], "turn left"), ([0, 1, 0, 0], "go straight"),
                                               ([0, 0, 1, 0], "turn right"), ([0, 0, 0, 1], "go straight")])  # fmt: skip
def test_the_question_carries_speed_and_command_and_unparsed_answers_drive_at_constant_velocity(
    navsim_agent, one_hot, said
):
    asked = []
    agent = navsim_agent.ZooAgent("m")
    agent.pipeline = lambda image, question: asked.append((image.size, question)) or Answer(None)
    observed = agent_input(one_hot, velocity=(3.0, 4.0))
    trajectory = agent.compute_trajectory(observed)
    assert (
        asked == [((160, 90), asked[0][1])]
        and "Ego speed 5.0 m/s" in asked[0][1]
        and f"Command: {said}." in asked[0][1]
    )
    reference = navsim_constant_velocity(observed, agent._trajectory_sampling)
    np.testing.assert_allclose(trajectory.poses, reference.poses)
    assert trajectory.trajectory_sampling == reference.trajectory_sampling and agent.parse_failures == 1


def test_the_released_vla_answers_navsims_compute_trajectory(navsim_agent):
    agent = navsim_agent.ZooAgent(model="driving-vla-tiny")
    agent.initialize()
    trajectory = agent.compute_trajectory(agent_input([0, 1, 0, 0]))
    assert isinstance(trajectory, Trajectory) and trajectory.poses.shape == (8, 3)
    assert trajectory.poses.dtype == np.float32 and np.isfinite(trajectory.poses).all()
    assert trajectory.trajectory_sampling == TrajectorySampling(num_poses=8, interval_length=0.5)
