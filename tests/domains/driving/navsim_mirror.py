"""NAVSIM's agent interface, mirrored for tests: NAVSIM itself cannot be installed beside the zoo.

NAVSIM (``autonomousvision/navsim``) pins torch 2.0.1, numpy 1.23.4 and nuplan-devkit from git
(``requirements.txt`` at 0a380a9), and PyPI's ``navsim`` is an unrelated project. These classes are the
parts of NAVSIM at commit 0a380a9 that an agent touches, as released:

* ``navsim/agents/abstract_agent.py:12-111`` (``AbstractAgent``; the training-only methods keep their
  ``NotImplementedError``, ``get_training_callbacks`` drops its pytorch-lightning type);
* ``navsim/common/dataclasses.py``: ``Camera`` (33-44), ``Cameras`` (47-58), ``Lidar`` (103-111),
  ``EgoStatus`` (137-145), ``AgentInput`` (148-154), ``Trajectory`` (279-291), ``SensorConfig`` (782-837);
* tag v1.1 (0811876c) differs where an agent is built: ``AbstractAgent.__init__(requires_scene=False)``
  takes no sampling and stores none (``navsim/agents/abstract_agent.py:13-18``, :class:`AbstractAgentV1`);
  its ``Camera`` and ``Lidar`` also lack ``camera_path`` / ``lidar_path``, which no agent reads;
* nuplan-devkit's ``TrajectorySampling`` (``motional/nuplan-devkit@3966f55:nuplan/planning/simulation/
  trajectory/trajectory_sampling.py``).

:func:`install` puts them in ``sys.modules`` under NAVSIM's and nuplan's module names, so that
``domains.driving.navsim_agent`` imports them exactly as it imports the real ones. ``bench/navsim_interface.py``
checks the same adapter against NAVSIM's own code at both commits.
"""

# ruff: noqa: UP007, UP045, SIM114, RUF009  (NAVSIM's and nuplan's code as released: Optional/Union, branches, defaults)
from __future__ import annotations

import math
import sys
import types
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import pytest
import torch

PROXIMITY_ABS_TOL = 1e-10


@dataclass
class TrajectorySampling:
    num_poses: Optional[int] = None
    time_horizon: Optional[float] = None
    interval_length: Optional[float] = None

    def __post_init__(self) -> None:
        if self.num_poses and not isinstance(self.num_poses, int):
            raise ValueError(f"num_poses was defined but it is not int. Instead {type(self.num_poses)}!")
        if self.time_horizon:
            self.time_horizon = float(self.time_horizon)
        if self.interval_length:
            self.interval_length = float(self.interval_length)
        if self.num_poses and self.time_horizon and not self.interval_length:
            self.interval_length = self.time_horizon / self.num_poses
        elif self.num_poses and self.interval_length and not self.time_horizon:
            self.time_horizon = self.num_poses * self.interval_length
        elif self.time_horizon and self.interval_length and not self.num_poses:
            remainder = math.fmod(self.time_horizon, self.interval_length)
            is_close_to_zero = math.isclose(remainder, 0, abs_tol=PROXIMITY_ABS_TOL)
            is_close_to_interval_length = math.isclose(remainder, self.interval_length, abs_tol=PROXIMITY_ABS_TOL)
            if not is_close_to_zero and not is_close_to_interval_length:
                raise ValueError("The time horizon must be a multiple of interval length!")
            self.num_poses = int(self.time_horizon / self.interval_length)
        elif self.num_poses and self.time_horizon and self.interval_length:
            if not math.isclose(self.num_poses, self.time_horizon / self.interval_length, abs_tol=PROXIMITY_ABS_TOL):
                raise ValueError("Not valid initialization of sampling class!")
        else:
            raise ValueError(f"Cant initialize class! num_poses = {self.num_poses}, "
                             f"interval = {self.interval_length}, time_horizon = {self.time_horizon}")  # fmt: skip

    @property
    def step_time(self) -> float:
        if not self.interval_length:
            raise RuntimeError("Invalid interval length!")
        return self.interval_length

    def __hash__(self) -> int:
        return hash((self.num_poses, self.time_horizon, self.interval_length))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TrajectorySampling):
            return NotImplemented
        return (math.isclose(other.time_horizon, self.time_horizon)
                and math.isclose(other.interval_length, self.interval_length) and other.num_poses == self.num_poses)  # fmt: skip


@dataclass
class Camera:
    image: Optional[np.ndarray] = None
    sensor2lidar_rotation: Optional[np.ndarray] = None
    sensor2lidar_translation: Optional[np.ndarray] = None
    intrinsics: Optional[np.ndarray] = None
    distortion: Optional[np.ndarray] = None
    camera_path: Optional[Path] = None


@dataclass
class Cameras:
    cam_f0: Camera
    cam_l0: Camera
    cam_l1: Camera
    cam_l2: Camera
    cam_r0: Camera
    cam_r1: Camera
    cam_r2: Camera
    cam_b0: Camera


@dataclass
class Lidar:
    lidar_pc: Optional[np.ndarray] = None
    lidar_path: Optional[Path] = None


@dataclass
class EgoStatus:
    ego_pose: np.ndarray
    ego_velocity: np.ndarray
    ego_acceleration: np.ndarray
    driving_command: np.ndarray
    in_global_frame: bool = False


@dataclass
class AgentInput:
    ego_statuses: list[EgoStatus]
    cameras: list[Cameras]
    lidars: list[Lidar]


@dataclass
class Trajectory:
    poses: np.ndarray
    trajectory_sampling: TrajectorySampling = TrajectorySampling(time_horizon=4, interval_length=0.5)

    def __post_init__(self) -> None:
        assert self.poses.ndim == 2, "Trajectory poses should have two dimensions for samples and poses."
        assert self.poses.shape[0] == self.trajectory_sampling.num_poses, (
            "Trajectory poses and sampling have unequal number of poses."
        )
        assert self.poses.shape[1] == 3, "Trajectory requires (x, y, heading) at last dim."


@dataclass
class SensorConfig:
    cam_f0: Union[bool, list[int]]
    cam_l0: Union[bool, list[int]]
    cam_l1: Union[bool, list[int]]
    cam_l2: Union[bool, list[int]]
    cam_r0: Union[bool, list[int]]
    cam_r1: Union[bool, list[int]]
    cam_r2: Union[bool, list[int]]
    cam_b0: Union[bool, list[int]]
    lidar_pc: Union[bool, list[int]]

    def get_sensors_at_iteration(self, iteration: int) -> list[str]:
        sensors_at_iteration: list[str] = []
        for sensor_name, sensor_include in asdict(self).items():
            if isinstance(sensor_include, bool) and sensor_include:
                sensors_at_iteration.append(sensor_name)
            elif isinstance(sensor_include, list) and iteration in sensor_include:
                sensors_at_iteration.append(sensor_name)
        return sensors_at_iteration

    @classmethod
    def build_all_sensors(cls, include: Union[bool, list[int]] = True) -> SensorConfig:
        return SensorConfig(cam_f0=include, cam_l0=include, cam_l1=include, cam_l2=include, cam_r0=include,
                            cam_r1=include, cam_r2=include, cam_b0=include, lidar_pc=include)  # fmt: skip

    @classmethod
    def build_no_sensors(cls) -> SensorConfig:
        return cls.build_all_sensors(include=False)


class AbstractAgent(torch.nn.Module, ABC):
    def __init__(self, trajectory_sampling: TrajectorySampling, requires_scene: bool = False) -> None:
        super().__init__()
        self.requires_scene = requires_scene
        self._trajectory_sampling = trajectory_sampling

    @abstractmethod
    def name(self) -> str: ...

    @abstractmethod
    def get_sensor_config(self) -> SensorConfig: ...

    @abstractmethod
    def initialize(self) -> None: ...

    def forward(self, features: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def get_feature_builders(self) -> list[Any]:
        raise NotImplementedError("No feature builders. Agent does not support training.")

    def get_target_builders(self) -> list[Any]:
        raise NotImplementedError("No target builders. Agent does not support training.")

    def compute_trajectory(self, agent_input: AgentInput) -> Trajectory:
        self.eval()
        features: dict[str, torch.Tensor] = {}
        for builder in self.get_feature_builders():
            features.update(builder.compute_features(agent_input))
        features = {k: v.unsqueeze(0) for k, v in features.items()}
        with torch.no_grad():
            predictions = self.forward(features)
            poses = predictions["trajectory"].squeeze(0).numpy()
        return Trajectory(poses, self._trajectory_sampling)

    def compute_loss(self, features: Any, targets: Any, predictions: Any) -> torch.Tensor:
        raise NotImplementedError("No loss. Agent does not support training.")

    def get_optimizers(self) -> Any:
        raise NotImplementedError("No optimizers. Agent does not support training.")

    def get_training_callbacks(self) -> list[Any]:
        return []


class AbstractAgentV1(AbstractAgent):
    """``AbstractAgent`` at v1.1 (0811876c:navsim/agents/abstract_agent.py:13-18): no trajectory sampling.

    Its default ``compute_trajectory`` (62-83) returns ``Trajectory(poses)`` at the default sampling; not mirrored,
    since the zoo's agent overrides ``compute_trajectory``.
    """

    def __init__(self, requires_scene: bool = False) -> None:
        torch.nn.Module.__init__(self)
        self.requires_scene = requires_scene


AGENTS = {"v1": AbstractAgentV1, "v2": AbstractAgent}
"""NAVSIM's ``AbstractAgent`` by version: v1.1 (0811876c) and v2 (0a380a9)."""

MODULES: dict[str, dict[str, Any]] = {
    "nuplan.planning.simulation.trajectory.trajectory_sampling": {"TrajectorySampling": TrajectorySampling},
    "navsim.agents.abstract_agent": {"AbstractAgent": AbstractAgent},
    "navsim.common.dataclasses": {"AgentInput": AgentInput, "Camera": Camera, "Cameras": Cameras, "Lidar": Lidar,
                                  "EgoStatus": EgoStatus, "SensorConfig": SensorConfig, "Trajectory": Trajectory},
}  # fmt: skip


def install(monkeypatch: pytest.MonkeyPatch, version: str = "v2") -> None:
    """Put the mirrored modules of NAVSIM ``version`` (and their parent packages) in ``sys.modules`` for one test."""
    modules = MODULES | {"navsim.agents.abstract_agent": {"AbstractAgent": AGENTS[version]}}
    for name, members in modules.items():
        parts = name.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            if parent not in sys.modules:
                monkeypatch.setitem(sys.modules, parent, types.ModuleType(parent))
        module = types.ModuleType(name)
        vars(module).update(members)
        monkeypatch.setitem(sys.modules, name, module)
